package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"nexus.local/platform/config"
	"nexus.local/platform/serve"
)

// shutdownBound is how long the check lets a server take to shut down and
// end its streams. A stream that watches its context ends at once; one that
// ignores it holds the server until serve.ShutdownTimeout cuts it, which the
// check tells apart by the cut, not by the clock. The bound is there for a
// server that never cuts: it is generous so a loaded machine never trips it.
const shutdownBound = time.Minute

// TestShutdownEndsStreams shows ServeOn returning cleanly when its context
// ends while a run's stream is open and waiting for its host: the stream is
// closed rather than holding the shutdown. The same check runs against
// servers whose stream handlers ignore the shutdown, and must fail there.
func TestShutdownEndsStreams(t *testing.T) {
	tests := []struct {
		name string
		// start returns how to serve on a listener and how to open a stream
		// that sends a tool_call frame and then waits.
		start   func(t *testing.T) (func(context.Context, net.Listener) error, func(base string) (io.ReadCloser, error))
		bound   time.Duration
		wantErr string
	}{
		{name: "gateway", start: startGatewayStream, bound: shutdownBound},
		{name: "stream that blocks until cut", bound: shutdownBound, wantErr: "cut",
			start: func(t *testing.T) (func(context.Context, net.Listener) error, func(string) (io.ReadCloser, error)) {
				return serveHTTP(blockingStream(t)), openGet
			}},
		{name: "stream that keeps writing", bound: shutdownBound, wantErr: "cut",
			start: func(t *testing.T) (func(context.Context, net.Listener) error, func(string) (io.ReadCloser, error)) {
				return serveHTTP(http.HandlerFunc(writingStream)), openGet
			}},
		// A server with no shutdown timeout of its own waits on the stream
		// for ever; the check's bound is what fails it, so a short one will
		// do: no server could pass it.
		{name: "stream held by a server that never cuts", bound: 5 * time.Second, wantErr: "still shutting down",
			start: func(t *testing.T) (func(context.Context, net.Listener) error, func(string) (io.ReadCloser, error)) {
				return serveUnbounded(blockingStream(t)), openGet
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serveFn, open := tt.start(t)
			err := checkShutdownEndsStream(serveFn, open, tt.bound)
			if err != nil {
				t.Logf("the check reports: %v", err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("check returned %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// checkShutdownEndsStream serves on a fresh listener, opens a stream and
// reads it to its first tool_call frame, then ends the server's context. It
// returns nil when the server returned within bound and the stream ended
// cleanly; otherwise an error that names what held the shutdown.
func checkShutdownEndsStream(serveFn func(context.Context, net.Listener) error, open func(base string) (io.ReadCloser, error), bound time.Duration) error {
	lis, err := netListen()
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- serveFn(ctx, lis) }()

	body, err := open("http://" + lis.Addr().String())
	if err != nil {
		return fmt.Errorf("open the stream: %w", err)
	}
	// Closing the body also unblocks a read still waiting when the check
	// gives up.
	defer body.Close()
	rd := newSSEReader(body)
	for {
		f, err := rd.next()
		if err != nil {
			return fmt.Errorf("the stream ended before its tool call: %w", err)
		}
		if f.event == "tool_call" {
			break
		}
	}

	cancel()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	case <-deadline.C:
		return fmt.Errorf("the server was still shutting down %s after its context ended: the open stream holds the shutdown", bound)
	}
	// A stream that ended with the shutdown closes cleanly; one that held
	// the shutdown until its timeout is cut when the server gives up, and the
	// reader sees a broken response rather than its end.
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := rd.next(); err != nil {
				ended <- err
				return
			}
		}
	}()
	select {
	case err := <-ended:
		if err != io.EOF {
			return fmt.Errorf("the stream was cut (%v) instead of ended by the shutdown: it held the server until the shutdown timeout", err)
		}
	case <-deadline.C:
		return fmt.Errorf("the stream was still open %s after the server shut down", bound)
	}
	return nil
}

// startGatewayStream serves the real gateway in front of a fake orchestrator
// whose run stops at a tool call, and opens that run's stream.
func startGatewayStream(t *testing.T) (func(context.Context, net.Listener) error, func(string) (io.ReadCloser, error)) {
	orch := startTestOrchestrator(t, toolRunScript)
	serveFn := func(ctx context.Context, lis net.Listener) error {
		return ServeOn(ctx, config.Map(gatewayEnv(orch)), lis)
	}
	open := func(base string) (io.ReadCloser, error) {
		session := createSession(t, base, aliceKey)
		resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a box"}`)
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("start the run: status %d", resp.StatusCode)
		}
		return resp.Body, nil
	}
	return serveFn, open
}

// serveHTTP serves h the way the gateway is served, with the same bounded
// graceful shutdown.
func serveHTTP(h http.Handler) func(context.Context, net.Listener) error {
	return func(ctx context.Context, lis net.Listener) error {
		return serve.HTTPServer(ctx, lis, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second})
	}
}

// serveUnbounded serves h and, when ctx ends, waits for every response to
// finish however long that takes.
func serveUnbounded(h http.Handler) func(context.Context, net.Listener) error {
	return func(ctx context.Context, lis net.Listener) error {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(lis) }()
		select {
		case err := <-errc:
			return fmt.Errorf("serve http: %w", err)
		case <-ctx.Done():
		}
		if err := srv.Shutdown(context.Background()); err != nil {
			return fmt.Errorf("shutdown http: %w", err)
		}
		return nil
	}
}

// writeToolCall starts an event stream with the frame the check waits for.
func writeToolCall(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "text/event-stream")
	if _, err := io.WriteString(w, "event: tool_call\ndata: {}\n\n"); err != nil {
		return fmt.Errorf("write the tool call: %w", err)
	}
	return http.NewResponseController(w).Flush()
}

// blockingStream sends a tool call and then waits without watching its
// request's context, until the test ends.
func blockingStream(t *testing.T) http.Handler {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if writeToolCall(w) != nil {
			return
		}
		<-release
	})
}

// writingStream sends a tool call and then keepalives, without watching its
// request's context, until a write fails.
func writingStream(w http.ResponseWriter, _ *http.Request) {
	if writeToolCall(w) != nil {
		return
	}
	rc := http.NewResponseController(w)
	for {
		if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openGet opens a stream with a plain GET.
func openGet(base string) (io.ReadCloser, error) {
	resp, err := http.Get(base + "/")
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", base, err)
	}
	return resp.Body, nil
}
