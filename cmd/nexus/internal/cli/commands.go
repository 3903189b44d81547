// Package cli implements the nexus commands that drive runs from a terminal:
// run, sessions and cancel. They speak the orchestrator's gRPC API directly
// and carry tool calls to a paired host runtime over its local HTTP contract.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

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
	// HTTP is the client for the host runtime and the gateway; nil means a
	// default one.
	HTTP *http.Client
	// Stdin is where review answers are read; StdinTTY says it is a
	// terminal a person answers on.
	Stdin    io.Reader
	StdinTTY bool
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

// dialConfig holds the settings of the CLI's orchestrator connection.
type dialConfig struct {
	// ConnectTimeout bounds one attempt to reach the orchestrator, handshake
	// included; unset, it is gRPC's 20 s. A port that accepts but never
	// answers (a stopped or wedged process behind it) fails after this.
	ConnectTimeout time.Duration `env:"NEXUS_CONNECT_TIMEOUT"`
}

// Validate refuses a timeout that could never let an attempt succeed.
func (c dialConfig) Validate() error {
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("NEXUS_CONNECT_TIMEOUT %s: want a positive duration such as 5s, or unset for gRPC's 20s", c.ConnectTimeout)
	}
	return nil
}

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
	var dialCfg dialConfig
	if o.Env != nil {
		if err := config.Load(ctx, o.Env, &tlsCfg); err != nil {
			return nil, nil, err
		}
		if err := config.Load(ctx, o.Env, &dialCfg); err != nil {
			return nil, nil, err
		}
	}
	if dialCfg.ConnectTimeout > 0 {
		// gRPC's own backoff between attempts stays; only how long one
		// attempt may wait for the peer's handshake changes.
		opts = append(opts, grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.DefaultConfig,
			MinConnectTimeout: dialCfg.ConnectTimeout,
		}))
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

// Output is how a command prints what it got.
type Output string

const (
	// OutputText is for a person.
	OutputText Output = "text"
	// OutputJSON is for programs: protojson, one object per line for a run's
	// chunks.
	OutputJSON Output = "json"
)

// ParseOutput reads an --output value.
func ParseOutput(s string) (Output, error) {
	switch Output(s) {
	case OutputText, OutputJSON:
		return Output(s), nil
	}
	return "", fmt.Errorf("%q is not an output format: want text or json", s)
}

// ParseReview reads a --review value.
func ParseReview(s string) (agentv1.ReviewPolicy, error) {
	switch s {
	case "every":
		return agentv1.ReviewPolicy_REVIEW_POLICY_EVERY_SCRIPT, nil
	case "automations":
		return agentv1.ReviewPolicy_REVIEW_POLICY_AUTOMATIONS, nil
	case "preview":
		return agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW, nil
	case "none":
		return agentv1.ReviewPolicy_REVIEW_POLICY_NONE, nil
	}
	return 0, fmt.Errorf("%q is not a review policy: want every, automations, preview or none", s)
}

// ReviewNotice says plainly what will wait for the person under policy.
func ReviewNotice(policy agentv1.ReviewPolicy) string {
	switch policy {
	case agentv1.ReviewPolicy_REVIEW_POLICY_NONE:
		return "Nothing waits for you: every script runs unattended and what it changes is kept."
	case agentv1.ReviewPolicy_REVIEW_POLICY_EVERY_SCRIPT:
		return "Every script, inspections included, waits for your decision before it runs."
	case agentv1.ReviewPolicy_REVIEW_POLICY_AUTOMATIONS:
		return "Every script that would change the document waits for your decision before it runs, each fix after a failure too; inspections run without asking."
	}
	return "A script that would change the document first runs as a preview (rolled back, nothing kept) and waits for your decision on its change report and view; " +
		"a script that fails goes back to the model without asking; inspections run without asking."
}

// writeJSON prints m as one line of protojson.
func writeJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// allPages gathers a listing's items, asking page for each next-page token
// from the first page until the server answers none.
func allPages[T any](page func(token string) (items []T, next string, err error)) ([]T, error) {
	var all []T
	token := ""
	for {
		items, next, err := page(token)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		token = next
	}
}

// SessionsOptions configures Sessions.
type SessionsOptions struct {
	Conn   Conn
	Output Output
	// Eval lists nexus eval's sessions too.
	Eval bool
}

// titleWidth is how much of a session's first prompt its row shows.
const titleWidth = 40

// sessionTitle is what a session list calls a session: its first prompt,
// on one line, cut to width.
func sessionTitle(s *agentv1.Session, width int) string {
	if s.GetFirstPrompt() == "" {
		return "(no prompt yet)"
	}
	return oneLine(s.GetFirstPrompt(), width)
}

// Sessions lists the caller's sessions, newest first.
func Sessions(ctx context.Context, opt SessionsOptions, o IO) error {
	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()
	sessions, err := allPages(func(token string) ([]*agentv1.Session, string, error) {
		page, err := b.ListSessions(ctx, &agentv1.ListSessionsRequest{PageSize: 500, PageToken: token, IncludeEval: opt.Eval})
		return page.GetSessions(), page.GetNextPageToken(), err
	})
	if err != nil {
		return err
	}
	all := &agentv1.ListSessionsResponse{Sessions: sessions}
	if opt.Output == OutputJSON {
		return writeJSON(o.Stdout, all)
	}
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tTITLE\tHOST\tMODEL\tREVIEW\tCREATED\tSTATE")
	for _, s := range all.GetSessions() {
		state := "idle"
		switch p := s.GetPendingToolCall(); {
		case p != nil && p.GetReview() == agentv1.ReviewState_REVIEW_STATE_AWAITING:
			state = "a script awaits your review"
		case p != nil:
			state = "waiting for the host"
		case s.GetActiveRunId() != "":
			state = "running " + s.GetActiveRunId()
		}
		created := ""
		if s.GetCreateTime() != nil {
			created = s.GetCreateTime().AsTime().Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.GetSessionId(), sessionTitle(s, titleWidth), s.GetHostApp(), s.GetModel(),
			enumText(s.GetReviewPolicy().String(), "REVIEW_POLICY_"), created, state)
	}
	return tw.Flush()
}

// CancelOptions configures Cancel.
type CancelOptions struct {
	Conn      Conn
	SessionID string
}

// Cancel stops a session's active run.
func Cancel(ctx context.Context, opt CancelOptions, o IO) error {
	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()
	resp, err := b.CancelRun(ctx, &agentv1.CancelRunRequest{SessionId: opt.SessionID})
	if err != nil {
		return err
	}
	if resp.GetRunId() == "" {
		fmt.Fprintf(o.Stdout, "session %s has no active run\n", opt.SessionID)
		return nil
	}
	fmt.Fprintf(o.Stdout, "cancelled run %s of session %s\n", resp.GetRunId(), opt.SessionID)
	if resp.GetMessage() != "" {
		// The script had already left for the host: what it did.
		fmt.Fprintln(o.Stdout, resp.GetMessage())
	}
	return nil
}

// devPairing asks the gateway of the nexus dev this user runs (its URL is in
// the dev state file) which host runtime it started and its pairing token.
// It answers why not when there is none.
func devPairing(ctx context.Context, o IO) (url, token string, err error) {
	st, ok := readDevState(o.Env)
	if !ok {
		return "", "", errors.New("no nexus dev is running for this user")
	}
	base := strings.TrimRight(st.GatewayURL, "/")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/dev/host-pairing", nil)
	if err != nil {
		return "", "", fmt.Errorf("nexus dev gateway %q: %w", base, err)
	}
	// The pairing answers only with the secret nexus dev wrote for its owner.
	req.Header.Set("X-Nexus-Pairing-Secret", st.PairingSecret)
	client := o.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("ask nexus dev at %s for its host runtime: %w", base, err)
	}
	defer resp.Body.Close()
	var p struct {
		HostURL   string `json:"hostUrl"`
		HostToken string `json:"hostToken"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("nexus dev at %s has no host runtime to share (%s; was it started with --no-host?)", base, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.HostURL == "" {
		return "", "", fmt.Errorf("nexus dev at %s answered no host runtime", base)
	}
	fmt.Fprintf(o.Stderr, "using the host runtime paired with nexus dev at %s\n", p.HostURL)
	return p.HostURL, p.HostToken, nil
}
