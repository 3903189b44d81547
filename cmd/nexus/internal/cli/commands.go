// Package cli implements the nexus commands that drive runs from a terminal:
// run, sessions and cancel. They speak the orchestrator's gRPC API directly
// and carry tool calls to a paired host runtime over its local HTTP contract.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
	"nexus.local/platform/telemetry"
)

// cancelTimeout bounds the CancelRun sent when the person interrupts a run.
const cancelTimeout = 5 * time.Second

// IO is where a command reads its settings and writes its output.
type IO struct {
	Stdout, Stderr io.Writer
	// TTY is true when Stdout is a terminal: styles and a spinner.
	TTY bool
	// Env supplies defaults such as NEXUS_ORCHESTRATOR_ADDR.
	Env config.Lookuper
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HTTP is the client for the host runtime; nil means a default one.
	HTTP *http.Client
}

func (o IO) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o IO) lookup(key, def string) string {
	if o.Env != nil {
		if v, ok := o.Env.Lookup(key); ok && v != "" {
			return v
		}
	}
	return def
}

func (o IO) defaultAddr() string { return o.lookup("NEXUS_ORCHESTRATOR_ADDR", "127.0.0.1:7101") }

// dial opens the orchestrator connection with the caller's credentials: the
// API key or OIDC token in NEXUS_API_KEY, over TLS when NEXUS_TLS_CA (and for
// mutual TLS NEXUS_TLS_CERT and NEXUS_TLS_KEY) are set, or with the
// authority of the nexus dev running at addr.
func dial(ctx context.Context, addr string, o IO) (*grpc.ClientConn, agentv1.OrchestratorServiceClient, error) {
	tel, err := telemetry.New(ctx, "nexus-cli", telemetry.Config{})
	if err != nil {
		return nil, nil, err
	}
	var opts []grpc.DialOption
	var tlsCfg rpc.TLSConfig
	if o.Env != nil {
		if err := config.Load(ctx, o.Env, &tlsCfg); err != nil {
			return nil, nil, err
		}
	}
	if !tlsCfg.Enabled() {
		if st, ok := readDevState(o.Env); ok && st.OrchestratorAddr == addr && st.CAPEM != "" {
			tlsCfg.CA = st.CAPEM
		}
	}
	if tlsCfg.Enabled() {
		creds, err := tlsCfg.DialOption()
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, creds)
	}
	if key := o.lookup("NEXUS_API_KEY", ""); key != "" {
		opts = append(opts, identity.Bearer(key))
	}
	conn, err := rpc.Dial(addr, tel, opts...)
	if err != nil {
		return nil, nil, err
	}
	return conn, agentv1.NewOrchestratorServiceClient(conn), nil
}

// rpcError names the orchestrator address in a failed call's error.
func rpcError(what, addr string, err error) error {
	st := status.Convert(err)
	return fmt.Errorf("%s (orchestrator at %s): %s: %s", what, addr, st.Code(), st.Message())
}

func newFlags(name string, o IO) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	return fs
}

// Run starts a run for a prompt, renders its stream, carries its tool calls to
// the host runtime and returns an error when the run fails.
func Run(ctx context.Context, args []string, o IO) error {
	fs := newFlags("run", o)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: nexus run [--model vendor/model] [--host-url URL --host-token TOKEN] [--addr host:port] [--session ID] "prompt"`)
		fs.PrintDefaults()
	}
	model := fs.String("model", "", "model of this run, vendor/model; empty keeps the session's")
	hostURL := fs.String("host-url", o.lookup("NEXUS_HOST_URL", ""), "host runtime URL (default $NEXUS_HOST_URL)")
	hostToken := fs.String("host-token", o.lookup("NEXUS_HOST_TOKEN", ""), "host runtime pairing token (default $NEXUS_HOST_TOKEN)")
	hostApp := fs.String("host-app", "", "host application when no host runtime answers /v1/info (default freecad)")
	addr := fs.String("addr", o.defaultAddr(), "orchestrator gRPC address (default $NEXUS_ORCHESTRATOR_ADDR)")
	sessionID := fs.String("session", "", "continue this session instead of creating one")
	views := fs.String("views", o.lookup("NEXUS_VIEWS_DIR", defaultViewsDir), "folder the rendered views are saved in, one subfolder per session (default $NEXUS_VIEWS_DIR or ./"+defaultViewsDir+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if prompt == "" {
		fs.Usage()
		return errors.New("run: no prompt given")
	}
	host := &Host{URL: *hostURL, Token: *hostToken, HTTP: o.HTTP}
	if host.URL == "" {
		// nexus dev pairs its own FreeCAD runtime; ask its gateway for it so
		// `make run` then `nexus run "..."` needs no flags.
		if url, token, ok := devPairing(ctx, o); ok {
			host.URL, host.Token = url, token
		}
	}
	if *hostApp == "" {
		*hostApp = "freecad"
		if host.URL != "" {
			info, err := host.Info(ctx)
			if err != nil {
				return fmt.Errorf("run: %w", err)
			}
			*hostApp = info.GetHostApp()
			fmt.Fprintf(o.Stderr, "host %s %s (%s)\n", info.GetHostApp(), info.GetHostVersion(), info.GetDocument())
		}
	}

	conn, client, err := dial(ctx, *addr, o)
	if err != nil {
		return err
	}
	defer conn.Close()

	if *sessionID == "" {
		s, err := client.CreateSession(ctx, &agentv1.CreateSessionRequest{HostApp: *hostApp, Model: *model})
		if err != nil {
			return rpcError("create session", *addr, err)
		}
		*sessionID = s.GetSessionId()
		fmt.Fprintf(o.Stderr, "session %s\n", *sessionID)
	}

	// The stream outlives ctx: closing it would not stop the durable run, so
	// on Ctrl-C onInterrupt cancels the run and the loop reads on to its end.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	stream, err := client.Run(runCtx, &agentv1.RunRequest{SessionId: *sessionID, Prompt: prompt, Model: *model})
	if err != nil {
		return rpcError("start run", *addr, err)
	}
	defer onInterrupt(ctx, client, *sessionID, o, stopRun)()
	r := NewRenderer(o.Stdout, o.TTY, o.now)
	if *views != "" {
		r.ViewsDir = filepath.Join(*views, *sessionID)
	}
	for {
		c, err := stream.Recv()
		if ctx.Err() != nil && err != nil {
			return interruptedError(ctx, nil)
		}
		if errors.Is(err, io.EOF) {
			return errors.New("run: the stream ended before the run completed")
		}
		if err != nil {
			return rpcError("run", *addr, err)
		}
		r.Chunk(c)
		switch {
		case c.GetToolCall() != nil:
			if ctx.Err() != nil {
				continue // Cancelling: nothing more is carried.
			}
			call := c.GetToolCall()
			done := r.HostWorking(*hostApp, call)
			res := host.Carry(ctx, call)
			done(res)
			if ctx.Err() != nil {
				continue // Interrupted while the host worked: the run is being cancelled.
			}
			// The run's trace context, so the result joins the run's trace.
			sctx := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": call.GetTraceparent()})
			_, err := client.SubmitToolResult(sctx, &agentv1.SubmitToolResultRequest{
				SessionId: *sessionID, ToolCallId: call.GetToolCallId(), ResultToken: call.GetResultToken(), Result: res,
			})
			if err != nil && ctx.Err() == nil {
				return rpcError("submit tool result "+call.GetToolCallId(), *addr, err)
			}
		case c.GetError() != nil:
			drainUsage(stream, r)
			if ctx.Err() != nil {
				return interruptedError(ctx, c)
			}
			return fmt.Errorf("run %s failed: %s: %s", c.GetRunId(), c.GetError().GetCode(), c.GetError().GetMessage())
		case c.GetComplete() != nil:
			drainUsage(stream, r)
			if ctx.Err() != nil {
				return interruptedError(ctx, c)
			}
			return nil
		}
	}
}

// drainUsage prints what follows the end of a run (its final usage).
func drainUsage(stream grpc.ServerStreamingClient[agentv1.StreamChunk], r *Renderer) {
	for {
		c, err := stream.Recv()
		if err != nil {
			return
		}
		r.Chunk(c)
	}
}

// Sessions lists the caller's sessions, newest first.
func Sessions(ctx context.Context, args []string, o IO) error {
	fs := newFlags("sessions", o)
	addr := fs.String("addr", o.defaultAddr(), "orchestrator gRPC address (default $NEXUS_ORCHESTRATOR_ADDR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, client, err := dial(ctx, *addr, o)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := client.ListSessions(ctx, &agentv1.ListSessionsRequest{})
	if err != nil {
		return rpcError("list sessions", *addr, err)
	}
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tHOST\tMODEL\tCREATED\tSTATE")
	for _, s := range resp.GetSessions() {
		state := "idle"
		switch {
		case s.GetPendingToolCall() != nil:
			state = "waiting for " + s.GetPendingToolCall().GetToolName()
		case s.GetActiveRunId() != "":
			state = "running " + s.GetActiveRunId()
		}
		created := ""
		if s.GetCreateTime() != nil {
			created = s.GetCreateTime().AsTime().Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.GetSessionId(), s.GetHostApp(), s.GetModel(), created, state)
	}
	return tw.Flush()
}

// Cancel stops a session's active run.
func Cancel(ctx context.Context, args []string, o IO) error {
	fs := newFlags("cancel", o)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nexus cancel [--addr host:port] SESSION")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", o.defaultAddr(), "orchestrator gRPC address (default $NEXUS_ORCHESTRATOR_ADDR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("cancel: give exactly one session id")
	}
	conn, client, err := dial(ctx, *addr, o)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := client.CancelRun(ctx, &agentv1.CancelRunRequest{SessionId: fs.Arg(0)})
	if err != nil {
		return rpcError("cancel", *addr, err)
	}
	if resp.GetRunId() == "" {
		fmt.Fprintf(o.Stdout, "session %s has no active run\n", fs.Arg(0))
		return nil
	}
	fmt.Fprintf(o.Stdout, "cancelled run %s of session %s\n", resp.GetRunId(), fs.Arg(0))
	return nil
}

// devPairing asks a local nexus dev gateway (NEXUS_GATEWAY_URL, default
// http://127.0.0.1:8080) which host runtime it started and its pairing token.
func devPairing(ctx context.Context, o IO) (url, token string, ok bool) {
	base := strings.TrimRight(o.lookup("NEXUS_GATEWAY_URL", "http://127.0.0.1:8080"), "/")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/dev/host-pairing", nil)
	if err != nil {
		return "", "", false
	}
	// The pairing answers only with the secret nexus dev wrote for its owner.
	st, ok := readDevState(o.Env)
	if !ok {
		return "", "", false
	}
	req.Header.Set("X-Nexus-Pairing-Secret", st.PairingSecret)
	client := o.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", false
	}
	defer resp.Body.Close()
	var p struct {
		HostURL   string `json:"hostUrl"`
		HostToken string `json:"hostToken"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil || p.HostURL == "" {
		return "", "", false
	}
	fmt.Fprintf(o.Stderr, "using the host runtime paired with nexus dev at %s\n", p.HostURL)
	return p.HostURL, p.HostToken, true
}
