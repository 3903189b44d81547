// Package mcpserver serves Nexus to other agents over the Model Context
// Protocol (streamable HTTP, mounted by the gateway at /mcp). Its tools start a
// run and return what the run did (the final message, the change report and
// the rendered views as image content, with progress notifications on the
// way), list the caller's sessions and read a session's dispatch audit. It
// calls the orchestrator over gRPC exactly as the HTTP API does, as the user
// the gateway authenticated.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/hostclient"
	"nexus.local/platform/identity"
)

// Version names this MCP server's tool set; it moves when a tool's contract does.
const Version = "1.0.0"

// defaultHostApp is the host a new session gets when the caller names none.
const defaultHostApp = "freecad"

// cancelTimeout bounds the CancelRun sent when a client abandons a run.
const cancelTimeout = 5 * time.Second

// Config says what the MCP server calls and as whom.
type Config struct {
	// Orchestrator is the gateway's one orchestrator client.
	Orchestrator agentv1.OrchestratorServiceClient
	// Follow starts a run and returns its stream; the gateway passes the
	// stream that moves to another replica when the serving one goes away.
	// Nil calls Orchestrator.Run.
	Follow func(ctx context.Context, req *agentv1.RunRequest) (ChunkStream, error)
	// User names the caller the gateway authenticated for r.
	User func(r *http.Request) string
	// HostURL and HostToken name a host runtime this server is paired with
	// (nexus dev's). A linked host carries the calls of the sessions bound
	// to it, which the server only watches; a call of a session with no
	// linked host (a user other than nexus dev's own, say) the server
	// carries to this runtime, so an MCP client alone can drive a whole
	// run; when empty, such a call waits for a host to link or another
	// courier (the web UI or nexus run).
	HostURL, HostToken string
	// MaxPromptBytes bounds a run's prompt, as NEXUS_MAX_PROMPT_BYTES does on
	// the HTTP API.
	MaxPromptBytes int
	// Heartbeat is the silence after which a running call gets a progress
	// notification saying what it still waits on, so clients that reset
	// their timeout on progress, and proxies, keep the call open while a
	// script runs or waits for its courier. Zero turns it off.
	Heartbeat time.Duration
	// Log receives the server's own logs.
	Log *slog.Logger
}

// ChunkStream is a run's stream of chunks.
type ChunkStream interface {
	Recv() (*agentv1.StreamChunk, error)
}

// Handler serves MCP over streamable HTTP. It is stateless: every request is
// served by a server bound to that request's authenticated caller, so any
// gateway replica can answer any request and one caller can never reach
// another's session.
func Handler(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Follow == nil {
		cfg.Follow = func(ctx context.Context, req *agentv1.RunRequest) (ChunkStream, error) {
			return cfg.Orchestrator.Run(ctx, req)
		}
	}
	// A server is built per request; the cache keeps the tools' schemas
	// from being inferred again each time.
	tools, err := newToolSchemas()
	if err != nil {
		cfg.Log.Error("mcp tool schemas", "err", err)
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "mcp: "+err.Error(), http.StatusInternalServerError)
		})
	}
	s := &service{cfg: cfg, schemas: mcp.NewSchemaCache(), tools: tools, calls: newCalls(), owners: &owners{byID: map[string]owner{}}}
	if cfg.HostURL != "" {
		s.host = &hostclient.Client{URL: strings.TrimRight(cfg.HostURL, "/"), Token: cfg.HostToken, HTTP: &http.Client{}}
	}
	stateless := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.server(cfg.User(r), nil)
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: cfg.Log, PropagateRequestCancellation: true})
	// A client that can put questions to its person (elicitation) gets a
	// session, since a question is a request from the server that the
	// client answers on a later POST; the session is bound to its caller.
	stateful := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		user := cfg.User(r)
		return s.server(user, func() string { return s.owners.add(user) })
	}, &mcp.StreamableHTTPOptions{Logger: cfg.Log, SessionTimeout: sessionIdle})
	return s.protocol(stateless, stateful)
}

// sessionIdle ends an MCP session (of a client that elicits) unused this long.
const sessionIdle = 30 * time.Minute

// service holds what every per-request server shares.
type service struct {
	cfg     Config
	host    *hostclient.Client
	schemas *mcp.SchemaCache
	tools   toolSchemas
	calls   *calls
	owners  *owners

	// pairedApp is the host application the paired runtime serves, asked
	// once it answers.
	mu        sync.Mutex
	pairedApp string
}

// server builds the MCP server for one authenticated caller; sessionID,
// when set, names the sessions of a stateful one.
func (s *service) server(user string, sessionID func() string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "nexus", Title: "Nexus", Version: Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.cfg.Log,
		SchemaCache:  s.schemas,
		GetSessionID: sessionID,
	})
	srv.AddReceivingMiddleware(withReasons)
	caller := &caller{service: s, user: user}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "run",
		Title:       "Run a request on a design application",
		Description: runDescription,
		// A run changes the document: it may delete as well as add.
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
		InputSchema: s.tools.runIn, OutputSchema: s.tools.runOut,
	}, caller.run)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "list_sessions",
		Title:       "List your Nexus sessions",
		Description: "Lists your Nexus sessions, newest first: id, host application, model, the last run, whether its last automation committed, and the tool call a run waits on. Pass a sessionId to `run` to continue one.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: s.tools.sessionsIn, OutputSchema: s.tools.sessionsOut,
	}, caller.listSessions)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "session_audit",
		Title:       "Read a session's audit log",
		Description: "Reads a session's dispatch audit log, oldest first: every script that left for the host, with its kind (data collection, task automation, epilogue), run, tool call, user, time, and the stamp (host, capability version, sha256 of the exact bytes).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: s.tools.auditIn, OutputSchema: s.tools.auditOut,
	}, caller.sessionAudit)
	srv.AddResourceTemplate(modelResource(), caller.readModel)
	return srv
}

func ptr[T any](v T) *T { return &v }

const instructions = `Nexus automates desktop design applications (FreeCAD; Autodesk Revit through the same contract). ` +
	`Call "run" with a plain-language request: Nexus's own agent inspects the open document, writes a script, runs it in one ` +
	`transaction on the host (committed whole or rolled back exactly), reads back what changed and renders a view, and ` +
	`iterates until the work is right. Each script that would change the document is previewed and waits for the person's ` +
	`decision (asked through elicitation when this client offers it). The result is its final message, the change report read ` +
	`back from the document, and the rendered view.`

const runDescription = `Runs a plain-language request against a design application through Nexus, and returns when the run ends.

Nexus's agent inspects the open document, writes a script for the host's API, runs it in ONE transaction (committed whole, or rolled back so the document is exactly as before), reads back what actually changed (the change report) and renders a view, then iterates until the work is right. Progress notifications tell each step while it runs (model turns, scripts sent to the host, whether they committed).

The result holds: the agent's final message; the change report of the last committed transaction; the rendered view as a PNG image; and structured output with sessionId, runId and each tool call's outcome.

The person decides what commits. Each script that would change the document first runs as a preview (committed, reported, rendered, then rolled back exactly) and waits for the person's decision; a script that fails goes straight back to the agent. When this client can ask its user questions (MCP elicitation), the preview's change report, a description of its view and the script are put to them: accept commits exactly that script, decline tells the agent. Otherwise the progress says the script awaits review in the Nexus web UI (or nexus run), and the run waits there. Pass unattended: true only when the person chose a run nobody reviews.

Omit sessionId to start a new session on hostApp (default "freecad"); pass one from an earlier result or from list_sessions to continue it with its history (and its review policy). Scripts run on the session's linked host (a FreeCAD or Revit runtime linked to Nexus carries its own calls). A session with no linked host has its scripts carried to the runtime paired with this Nexus server when there is one; otherwise they wait for a host to link, or for a client paired with a runtime that is not linked (the Nexus web UI or nexus run).`

// caller is the tool set bound to one authenticated user.
type caller struct {
	*service
	user string
}

// outgoing returns ctx that calls the orchestrator as the caller.
func (c *caller) outgoing(ctx context.Context) context.Context { return identity.Outgoing(ctx, c.user) }

// RunInput is the run tool's arguments.
type RunInput struct {
	Prompt    string `json:"prompt" jsonschema:"what to do, in plain language, e.g. Build a small room: four walls on a level, with a door and a window."`
	SessionID string `json:"sessionId,omitempty" jsonschema:"an existing session to continue; omit to start a new one"`
	HostApp   string `json:"hostApp,omitempty" jsonschema:"the host application of a new session: freecad (default) or revit"`
	Model     string `json:"model,omitempty" jsonschema:"the model, vendor/model; omit for the session's or the catalog default"`
	// Unattended is the explicit choice of a run nobody reviews.
	Unattended bool `json:"unattended,omitempty" jsonschema:"true only when the person chose an unattended run: a new session's scripts then commit without a preview or anyone's approval. Default false: each script that would change the document is previewed and waits for the person's decision"`
}

// ToolCallOutcome is what one script or view request did on the host.
type ToolCallOutcome struct {
	ToolCallID  string `json:"toolCallId"`
	Tool        string `json:"tool"`
	Description string `json:"description,omitempty"`
	// Outcome is committed, rolled_back, read_only, failed, view, declined
	// (the person refused the script) or no_result.
	Outcome string `json:"outcome"`
	// Review says who approved or declined the script, when a person did.
	Review string `json:"review,omitempty"`
	Error  string `json:"error,omitempty"`
	Line   int32  `json:"line,omitempty"`
}

// RunOutput is the run tool's structured result.
type RunOutput struct {
	SessionID    string            `json:"sessionId"`
	RunID        string            `json:"runId"`
	Model        string            `json:"model,omitempty"`
	Message      string            `json:"message"`
	StopReason   string            `json:"stopReason,omitempty"`
	Committed    bool              `json:"committed" jsonschema:"whether a transaction of this run committed"`
	ChangeReport string            `json:"changeReport,omitempty" jsonschema:"the change report of the last committed transaction"`
	Views        int               `json:"views" jsonschema:"how many rendered views are attached as image content"`
	ToolCalls    []ToolCallOutcome `json:"toolCalls"`
	Error        string            `json:"error,omitempty"`
}

func (c *caller) run(ctx context.Context, req *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, RunOutput, error) {
	prompt := strings.TrimSpace(in.Prompt)
	if prompt == "" {
		return nil, RunOutput{}, fmt.Errorf("prompt is empty: say what to do in plain language")
	}
	if c.cfg.MaxPromptBytes > 0 && len(in.Prompt) > c.cfg.MaxPromptBytes {
		return nil, RunOutput{}, fmt.Errorf("prompt is %d bytes, over the limit of %d (NEXUS_MAX_PROMPT_BYTES)", len(in.Prompt), c.cfg.MaxPromptBytes)
	}
	if in.Unattended && in.SessionID != "" {
		return nil, RunOutput{}, fmt.Errorf("unattended applies to a new session: session %s keeps the review policy it was made with; omit sessionId to start an unattended one", in.SessionID)
	}
	var extra http.Header
	if req.Extra != nil {
		extra = req.Extra.Header
	}
	ctx, release := c.callContext(ctx, extra)
	defer release()
	octx := c.outgoing(ctx)
	sessionID := in.SessionID
	if sessionID == "" {
		hostApp := in.HostApp
		if hostApp == "" {
			hostApp = defaultHostApp
		}
		// A script that would change the document is previewed and waits for
		// the person, as everywhere else: an MCP client's one-time "allow
		// this tool" is not the person seeing each script. Only the explicit
		// unattended argument lets scripts commit unreviewed.
		policy := agentv1.ReviewPolicy_REVIEW_POLICY_PREVIEW
		if in.Unattended {
			policy = agentv1.ReviewPolicy_REVIEW_POLICY_NONE
		}
		sess, err := c.cfg.Orchestrator.CreateSession(octx, &agentv1.CreateSessionRequest{HostApp: hostApp, Model: in.Model, ReviewPolicy: policy})
		if err != nil {
			return nil, RunOutput{}, refused("create a "+hostApp+" session", err)
		}
		sessionID = sess.GetSessionId()
	}
	p := &progress{ctx: ctx, req: req}
	p.say("session " + sessionID + ": starting the run")
	stop := p.heartbeat(c.cfg.Heartbeat)
	defer stop()

	r := &runFollower{caller: c, sessionID: sessionID, p: p, req: req, elicit: elicits(req), carried: map[string]*toolCallRecord{}, sent: map[string]bool{}}
	out, err := r.follow(octx, &agentv1.RunRequest{SessionId: sessionID, Prompt: prompt, Model: in.Model})
	if err != nil {
		if ctx.Err() != nil {
			c.cancelRun(ctx, sessionID, context.Cause(ctx))
		}
		return nil, RunOutput{}, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return r.result(out), out, nil
}

// cancelRun stops the session's run when the client abandoned the call, so
// no script runs for a caller that is gone. ctx is the call's: cancelled by
// now, so only its values (trace, identity) are kept.
func (c *caller) cancelRun(ctx context.Context, sessionID string, why error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := c.cfg.Orchestrator.CancelRun(c.outgoing(ctx), &agentv1.CancelRunRequest{SessionId: sessionID}); err != nil {
		c.cfg.Log.Warn("cancel an abandoned mcp run", "session", sessionID, "err", err)
		return
	}
	c.cfg.Log.Info("cancelled the run of an abandoned mcp call", "session", sessionID, "why", why)
}

// SessionsOutput is list_sessions' result.
type SessionsOutput struct {
	Sessions []map[string]any `json:"sessions"`
}

func (c *caller) listSessions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, SessionsOutput, error) {
	resp, err := c.cfg.Orchestrator.ListSessions(c.outgoing(ctx), &agentv1.ListSessionsRequest{})
	if err != nil {
		return nil, SessionsOutput{}, refused("list sessions", err)
	}
	out := SessionsOutput{Sessions: []map[string]any{}}
	for _, s := range resp.GetSessions() {
		// The script text is the session's working copy, not a summary.
		s.CurrentScript = ""
		m, err := asMap(s)
		if err != nil {
			return nil, SessionsOutput{}, err
		}
		out.Sessions = append(out.Sessions, m)
	}
	return nil, out, nil
}

// AuditInput names the session whose audit to read.
type AuditInput struct {
	SessionID string `json:"sessionId" jsonschema:"the session, from run or list_sessions"`
}

// AuditOutput is session_audit's result.
type AuditOutput struct {
	SessionID  string           `json:"sessionId"`
	Dispatches []map[string]any `json:"dispatches"`
}

func (c *caller) sessionAudit(ctx context.Context, _ *mcp.CallToolRequest, in AuditInput) (*mcp.CallToolResult, AuditOutput, error) {
	if in.SessionID == "" {
		return nil, AuditOutput{}, fmt.Errorf("sessionId is empty: take one from run or list_sessions")
	}
	resp, err := c.cfg.Orchestrator.ListDispatches(c.outgoing(ctx), &agentv1.ListDispatchesRequest{SessionId: in.SessionID})
	if err != nil {
		return nil, AuditOutput{}, refused("audit of session "+in.SessionID, err)
	}
	out := AuditOutput{SessionID: in.SessionID, Dispatches: []map[string]any{}}
	for _, d := range resp.GetDispatches() {
		m, err := asMap(d)
		if err != nil {
			return nil, AuditOutput{}, err
		}
		out.Dispatches = append(out.Dispatches, m)
	}
	return nil, out, nil
}

// asMap renders a message as the API's JSON (camelCase protojson), so MCP
// clients see the same fields as HTTP clients.
func asMap(m proto.Message) (map[string]any, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return out, nil
}
