package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"nexus.local/platform/rpc"
)

// The floor is the mesh's hops with none of its work: a chunk goes from the
// vendor's stream to a "model router" stage, over a gRPC server stream to an
// "orchestrator" stage, over another to a "gateway" stage, and out as a
// server-sent event, every hop on loopback and every gRPC hop mutual TLS 1.3
// as in nexus dev. Nothing is parsed beyond the event boundaries, stored,
// traced or checked. What the mesh costs above the floor is its own work;
// the floor itself is the price of the design's hops on this machine.

// Each gRPC stage serves one method: a request of bytes in, a stream of
// bytes out.
const (
	floorTurnMethod = "/nexus.bench.floor.Router/Turn"
	floorRunMethod  = "/nexus.bench.floor.Orchestrator/Run"
)

// ServeFloor runs the floor relay on addr until ctx ends, forwarding each
// request to vendorURL's Messages endpoint; nexus bench starts it as a
// process of its own (nexus bench --serve-floor) so that its CPU time is
// read as nginx's is.
func ServeFloor(ctx context.Context, addr, vendorURL string) error {
	ca, err := rpc.NewDevCA(time.Now(), 24*time.Hour)
	if err != nil {
		return err
	}
	cert, key, err := ca.Issue("floor", time.Now())
	if err != nil {
		return err
	}
	tlsc := rpc.TLSConfig{Cert: string(cert), Key: string(key), CA: string(ca.CertPEM())}
	creds, err := tlsc.ServerOption(true)
	if err != nil {
		return err
	}
	dialCreds, err := tlsc.DialOption()
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096}}

	routerConn, stopRouter, err := floorStage(creds, dialCreds, floorTurnMethod, func(ctx context.Context, in []byte, send func([]byte) error) error {
		return floorVendorTurn(ctx, hc, vendorURL, in, send)
	})
	if err != nil {
		return err
	}
	defer stopRouter()
	orchConn, stopOrch, err := floorStage(creds, dialCreds, floorRunMethod, func(ctx context.Context, in []byte, send func([]byte) error) error {
		return floorForward(ctx, routerConn, floorTurnMethod, in, send)
	})
	if err != nil {
		return err
	}
	defer stopOrch()

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for the floor's gateway stage: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		began := false
		err = floorForward(r.Context(), orchConn, floorRunMethod, body, func(event []byte) error {
			began = true
			if _, err := w.Write(event); err != nil {
				return err
			}
			return rc.Flush()
		})
		// Once the stream has begun, a failure can only end it early; before
		// that, the client is told why there is no stream.
		if err != nil && !began {
			http.Error(w, "floor: "+err.Error(), http.StatusBadGateway)
		}
	})}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve the floor: %w", err)
	}
	return nil
}

// floorStage serves method ("/service/name"), a server stream of bytes, on
// a loopback port, and dials it.
func floorStage(creds grpc.ServerOption, dial grpc.DialOption, method string, handle func(ctx context.Context, in []byte, send func([]byte) error) error) (*grpc.ClientConn, func(), error) {
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	s := grpc.NewServer(creds)
	s.RegisterService(&grpc.ServiceDesc{ServiceName: service, HandlerType: (*any)(nil), Streams: []grpc.StreamDesc{{
		StreamName: name, ServerStreams: true,
		Handler: func(_ any, ss grpc.ServerStream) error {
			in := new(wrapperspb.BytesValue)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			return handle(ss.Context(), in.Value, func(b []byte) error { return ss.SendMsg(wrapperspb.Bytes(b)) })
		},
	}}}, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("listen for a floor stage: %w", err)
	}
	go func() { _ = s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), dial)
	if err != nil {
		s.Stop()
		return nil, nil, fmt.Errorf("dial a floor stage: %w", err)
	}
	return conn, func() { _ = conn.Close(); s.Stop() }, nil
}

// floorForward calls method with in and hands on every message it streams.
func floorForward(ctx context.Context, conn *grpc.ClientConn, method string, in []byte, send func([]byte) error) error {
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(wrapperspb.Bytes(in)); err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for {
		m := new(wrapperspb.BytesValue)
		if err := cs.RecvMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := send(m.Value); err != nil {
			return err
		}
	}
}

// floorVendorTurn posts body to the vendor, as a direct reader does, and
// sends each server-sent event of its answer, whole, as one message.
func floorVendorTurn(ctx context.Context, hc *http.Client, vendorURL string, body []byte, send func([]byte) error) error {
	req, err := directRequest(ctx, vendorURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the vendor answered %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	var event []byte
	for sc.Scan() {
		event = append(event, sc.Bytes()...)
		event = append(event, '\n')
		if len(sc.Bytes()) > 0 {
			continue
		}
		if err := send(event); err != nil {
			return err
		}
		// gRPC may still hold a message after SendMsg returns, so the
		// next event is built in a buffer of its own.
		event = nil
	}
	return sc.Err()
}

// startFloor starts nexus bench --serve-floor as a process of its own and
// waits until it answers.
func startFloor(ctx context.Context, o Options, v *vendor, hc *http.Client) (*proxy, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, fmt.Errorf("find a free port for the floor: %w", err)
	}
	cmd := exec.Command(o.Binary, "bench", "--serve-floor", addr, "--vendor-addr", strings.TrimPrefix(v.url, "http://"))
	out := &lockedWriter{w: new(bytes.Buffer)}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the floor: %w", err)
	}
	p := &proxy{name: "floor", url: "http://" + addr, version: floorVersion(), proc: cmd, exited: watchExit(cmd), http: hc, cpu: processCPU}
	if err := p.waitListening(ctx, addr, out.String); err != nil {
		return nil, err
	}
	return p, nil
}

// floorVersion names what the floor is built of.
func floorVersion() string { return "grpc-go " + grpc.Version + ", " + runtime.Version() }
