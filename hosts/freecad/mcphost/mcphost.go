// Package mcphost serves the FreeCAD host runtime to a local MCP client (Claude
// Desktop, Cursor, Claude Code, any agent) over stdio: `nexus host freecad
// --mcp`. Its tools are the runtime's primitives with Nexus's guarantees: a
// read-only inspection, a script run in one transaction (committed whole with
// the capability service's change report, or rolled back so the document is
// exactly as before), and a captured view as image content. The tool
// descriptions carry the capability service's guidance for the host, so the
// client's model learns what Nexus's own model is taught.
package mcphost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/enumname"
)

// Version names this MCP server's tool set.
const Version = "1.0.0"

// maxCodeBytes bounds one script; the runtime refuses larger request bodies.
const maxCodeBytes = 1 << 20

// transactionNameMax bounds the undo step's name the person sees in FreeCAD.
const transactionNameMax = 60

// maxCallIDBytes bounds a client's own call id.
const maxCallIDBytes = 128

// clientCallPrefix keeps a client's call ids apart from this server's own
// and from the ids a Nexus run gives its calls, in the runtime's ledger.
const clientCallPrefix = "mcp-client/"

// Runtime is the host runtime contract (proto/nexus/host/v1) as the Go client
// of a running runtime speaks it.
type Runtime interface {
	Info(ctx context.Context) (*hostv1.InfoResponse, error)
	Execute(ctx context.Context, req *hostv1.ExecuteRequest) (*hostv1.HostResult, error)
	ExportView(ctx context.Context, req *hostv1.ExportViewRequest) (*hostv1.HostResult, error)
}

// Epilogue is the capability service's stamped change-report script.
type Epilogue struct {
	Code, SHA256, CapabilityVersion string
}

// Config is what the server needs: the runtime, and the capability service's
// behaviour for the host.
type Config struct {
	Runtime Runtime
	// Guidance is the capability service's prompt guidance for the host.
	Guidance string
	// Epilogue runs read-only after every commit and prints the change report.
	Epilogue Epilogue
	// View and MaxPx are the host's view defaults.
	View  string
	MaxPx int32
	Log   *slog.Logger
}

// New builds the MCP server. Serve it with Run on a LineTransport.
func New(cfg Config) (*mcp.Server, error) {
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("mcp host server: no runtime")
	}
	if sum := sha256.Sum256([]byte(cfg.Epilogue.Code)); cfg.Epilogue.Code == "" || hex.EncodeToString(sum[:]) != cfg.Epilogue.SHA256 {
		return nil, fmt.Errorf("mcp host server: the change-report epilogue is missing or does not match its sha256 stamp")
	}
	if cfg.View == "" {
		cfg.View = "isometric"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	h := &host{cfg: cfg}
	tools, err := newToolSchemas()
	if err != nil {
		return nil, fmt.Errorf("mcp host server: %w", err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "nexus-freecad", Title: "Nexus FreeCAD host", Version: Version}, &mcp.ServerOptions{
		Instructions: "Nexus's FreeCAD host runtime. Inspect the open document with `inspect` (read-only), change it with `run_transaction` " +
			"(one undo transaction: committed whole with a change report, or rolled back so the document is exactly as before), " +
			"and look at it with `capture_view`.\n\n" + cfg.Guidance,
		Logger: cfg.Log,
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "inspect",
		Title: "Inspect the FreeCAD document (read-only)",
		Description: "Runs a read-only Python script in FreeCAD and returns what it printed. Use it to look before you change anything: " +
			"list objects, read levels, walls, doors and their dimensions. Any change the script makes is undone and reported as an error.\n\n" + cfg.Guidance,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: tools.inspectIn, OutputSchema: tools.inspectOut,
	}, h.inspect)
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "run_transaction",
		Title: "Change the FreeCAD document in one transaction",
		Description: "Runs a Python script in FreeCAD inside ONE undo transaction. If it finishes, the transaction commits and the result " +
			"carries a change report read back from the document (elements added, modified, deleted, by level and type), " +
			"and a rendered view when you ask for one. If it raises, everything it did is rolled back: the document is exactly as before, " +
			"and the result names the exception and the failing line of your script. Edit > Undo in FreeCAD reverts a committed run as one step.\n\n" + cfg.Guidance,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)},
		InputSchema: tools.transactionIn, OutputSchema: tools.transactionOut,
	}, h.runTransaction)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "capture_view",
		Title:       "Render a view of the FreeCAD document",
		Description: "Renders the document as a PNG (image content): view \"isometric\" (default), \"plan\" (from above) or \"front\". Use it to check geometric work.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: tools.viewIn, OutputSchema: tools.viewOut,
	}, h.captureView)
	return srv, nil
}

func ptr[T any](v T) *T { return &v }

type host struct {
	cfg   Config
	calls atomic.Int64
}

// callID names one call to the runtime uniquely within this process, so a
// runtime that keys anything by tool call id never mistakes two calls for one.
func (h *host) callID(kind string) string {
	return fmt.Sprintf("mcp-%s-%d-%d", kind, os.Getpid(), h.calls.Add(1))
}

// transactionID is the runtime's id for a transaction: the client's own, so
// the runtime's ledger runs a retried call once, or a fresh one.
func (h *host) transactionID(callID string) (string, error) {
	if callID == "" {
		return h.callID("transaction"), nil
	}
	if len(callID) > maxCallIDBytes || strings.TrimSpace(callID) != callID {
		return "", fmt.Errorf("callId must be at most %d bytes with no leading or trailing space, got %d bytes", maxCallIDBytes, len(callID))
	}
	return clientCallPrefix + callID, nil
}

// refused says whether the runtime refused the call because its id ran
// before with other code: an answer (CallIdReused) for the client's model,
// not a runtime failure. The condition is filled in from the error's type
// when the runtime named it only there.
func refused(res *hostv1.HostResult) bool {
	e := res.GetError()
	if e == nil {
		return false
	}
	if e.GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_UNSPECIFIED {
		if n, ok := enumname.ParseCamel(hostv1.ExecCondition(0).Descriptor(), e.GetType()); ok {
			e.Condition = hostv1.ExecCondition(n)
		}
	}
	return e.GetCondition() == hostv1.ExecCondition_EXEC_CONDITION_CALL_ID_REUSED
}

// InspectInput is inspect's arguments.
type InspectInput struct {
	Code string `json:"code" jsonschema:"Python source run read-only in FreeCAD; globals App, FreeCAD, doc (the active document); print what you want back"`
}

// ScriptError is why a script failed.
type ScriptError struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Line      int32  `json:"line,omitempty" jsonschema:"the failing line of the submitted script, 1-based"`
	Traceback string `json:"traceback,omitempty"`
}

// InspectOutput is inspect's structured result.
type InspectOutput struct {
	Stdout     string       `json:"stdout"`
	Error      *ScriptError `json:"error,omitempty"`
	DurationMs int64        `json:"durationMs"`
}

func (h *host) inspect(ctx context.Context, _ *mcp.CallToolRequest, in InspectInput) (*mcp.CallToolResult, InspectOutput, error) {
	if err := checkCode(in.Code); err != nil {
		return nil, InspectOutput{}, err
	}
	res, err := h.cfg.Runtime.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: h.callID("inspect"), Mode: hostv1.Mode_MODE_READ_ONLY, Code: in.Code})
	if err != nil {
		return nil, InspectOutput{}, fmt.Errorf("freecad runtime: %w", err)
	}
	out := InspectOutput{Stdout: res.GetStdout(), Error: scriptError(res.GetError()), DurationMs: res.GetDurationMs()}
	text := res.GetStdout()
	if out.Error != nil {
		text = failure("The script failed; nothing was changed.", out.Error, res.GetStdout())
	} else if text == "" {
		text = "(the script printed nothing)"
	}
	return &mcp.CallToolResult{IsError: out.Error != nil, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

// TransactionInput is run_transaction's arguments.
type TransactionInput struct {
	Code        string `json:"code" jsonschema:"Python source run in one undo transaction; globals App, FreeCAD, doc; import Arch, Draft, Part yourself; do not open or commit transactions"`
	Description string `json:"description" jsonschema:"what the script does, in a few words; names the undo step in FreeCAD"`
	View        string `json:"view,omitempty" jsonschema:"render this view after a commit: isometric, plan or front; omit for no image"`
	CallID      string `json:"callId,omitempty" jsonschema:"an id of your own for this call, to retry it safely: the same callId with the same script runs nothing again and answers the first run's result; the same callId with another script is refused with CallIdReused and changes nothing; omit it for a fresh id"`
}

// TransactionOutput is run_transaction's structured result.
type TransactionOutput struct {
	Committed    bool         `json:"committed"`
	ChangeReport string       `json:"changeReport,omitempty" jsonschema:"the change report read back from the document after the commit"`
	Added        []string     `json:"added"`
	Modified     []string     `json:"modified"`
	Deleted      []string     `json:"deleted"`
	Stdout       string       `json:"stdout"`
	Error        *ScriptError `json:"error,omitempty" jsonschema:"set when the script raised; the document is then exactly as before"`
	ScriptSHA256 string       `json:"scriptSha256" jsonschema:"sha256 of the exact script bytes that ran"`
	EpilogueSHA  string       `json:"epilogueSha256,omitempty" jsonschema:"sha256 of the change-report script that ran, as the capability service stamped it"`
	DurationMs   int64        `json:"durationMs"`
}

func (h *host) runTransaction(ctx context.Context, _ *mcp.CallToolRequest, in TransactionInput) (*mcp.CallToolResult, TransactionOutput, error) {
	if err := checkCode(in.Code); err != nil {
		return nil, TransactionOutput{}, err
	}
	id, err := h.transactionID(in.CallID)
	if err != nil {
		return nil, TransactionOutput{}, err
	}
	req := &hostv1.ExecuteRequest{
		ToolCallId: id, Mode: hostv1.Mode_MODE_TRANSACTION, Code: in.Code,
		TransactionName: transactionName(in.Description),
		Epilogue:        &hostv1.Epilogue{Code: h.cfg.Epilogue.Code, ContentHash: h.cfg.Epilogue.SHA256},
	}
	if in.View != "" {
		req.Capture = &hostv1.Capture{View: in.View, MaxPx: h.cfg.MaxPx}
	}
	res, err := h.cfg.Runtime.Execute(ctx, req)
	if err != nil && !refused(res) {
		return nil, TransactionOutput{}, fmt.Errorf("freecad runtime: %w", err)
	}
	sum := sha256.Sum256([]byte(in.Code))
	out := TransactionOutput{
		Committed: res.GetCommitted(), Stdout: res.GetStdout(), Error: scriptError(res.GetError()),
		Added: nonNil(res.GetChanges().GetAdded()), Modified: nonNil(res.GetChanges().GetModified()), Deleted: nonNil(res.GetChanges().GetDeleted()),
		ScriptSHA256: hex.EncodeToString(sum[:]), DurationMs: res.GetDurationMs(),
	}
	if ep := res.GetEpilogue(); ep != nil {
		out.ChangeReport, out.EpilogueSHA = ep.GetStdout(), ep.GetContentHash()
		if ep.GetError() != nil {
			out.ChangeReport += fmt.Sprintf("\n(the change report stopped early: %s: %s)", ep.GetError().GetType(), ep.GetError().GetMessage())
		}
	}
	result := &mcp.CallToolResult{}
	switch {
	case out.Error != nil:
		result.IsError = true
		result.Content = []mcp.Content{&mcp.TextContent{Text: failure(rollbackSentence(res), out.Error, res.GetStdout())}}
	case !out.Committed:
		result.IsError = true
		result.Content = []mcp.Content{&mcp.TextContent{Text: "The transaction did not commit; the document is as before.\n" + res.GetStdout()}}
	default:
		var b strings.Builder
		b.WriteString("Committed.\n")
		if out.Stdout != "" {
			b.WriteString("\nThe script printed:\n" + out.Stdout + "\n")
		}
		if out.ChangeReport != "" {
			b.WriteString("\n" + out.ChangeReport)
		} else {
			fmt.Fprintf(&b, "\nadded: %s\nmodified: %s\ndeleted: %s\n", list(out.Added), list(out.Modified), list(out.Deleted))
		}
		result.Content = []mcp.Content{&mcp.TextContent{Text: b.String()}}
	}
	for _, img := range res.GetImages() {
		result.Content = append(result.Content, &mcp.ImageContent{Data: img.GetData(), MIMEType: img.GetMimeType()})
	}
	h.cfg.Log.Info("mcp transaction", "committed", out.Committed, "script_sha256", out.ScriptSHA256, "epilogue_sha256", out.EpilogueSHA)
	return result, out, nil
}

// ViewInput is capture_view's arguments.
type ViewInput struct {
	View  string `json:"view,omitempty" jsonschema:"isometric (default), plan or front"`
	MaxPx int32  `json:"maxPx,omitempty" jsonschema:"longest side of the image in pixels, 64 to 4096; omit for the host default"`
}

// ViewOutput is capture_view's structured result.
type ViewOutput struct {
	View     string `json:"view"`
	MIMEType string `json:"mimeType"`
	Width    int32  `json:"width"`
	Height   int32  `json:"height"`
}

func (h *host) captureView(ctx context.Context, _ *mcp.CallToolRequest, in ViewInput) (*mcp.CallToolResult, ViewOutput, error) {
	view, maxPx := in.View, in.MaxPx
	if view == "" {
		view = h.cfg.View
	}
	if maxPx == 0 {
		maxPx = h.cfg.MaxPx
	}
	res, err := h.cfg.Runtime.ExportView(ctx, &hostv1.ExportViewRequest{ToolCallId: h.callID("view"), View: view, MaxPx: maxPx})
	if err != nil {
		return nil, ViewOutput{}, fmt.Errorf("render the %s view: %w", view, err)
	}
	if res.GetError() != nil {
		return nil, ViewOutput{}, fmt.Errorf("render the %s view: %s: %s", view, res.GetError().GetType(), res.GetError().GetMessage())
	}
	if len(res.GetImages()) == 0 {
		return nil, ViewOutput{}, fmt.Errorf("render the %s view: the runtime returned no image", view)
	}
	img := res.GetImages()[0]
	out := ViewOutput{View: img.GetView(), MIMEType: img.GetMimeType(), Width: img.GetWidth(), Height: img.GetHeight()}
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: fmt.Sprintf("The %s view, %dx%d.", out.View, out.Width, out.Height)},
		&mcp.ImageContent{Data: img.GetData(), MIMEType: img.GetMimeType()},
	}}, out, nil
}

func checkCode(code string) error {
	if strings.TrimSpace(code) == "" {
		return fmt.Errorf("code is empty: pass the Python script to run")
	}
	if len(code) > maxCodeBytes {
		return fmt.Errorf("code is %d bytes, over the limit of %d", len(code), maxCodeBytes)
	}
	return nil
}

func scriptError(e *hostv1.ExecError) *ScriptError {
	if e == nil {
		return nil
	}
	return &ScriptError{Type: e.GetType(), Message: e.GetMessage(), Line: e.GetLine(), Traceback: e.GetTraceback()}
}

func failure(head string, e *ScriptError, stdout string) string {
	var b strings.Builder
	b.WriteString(head + "\n")
	fmt.Fprintf(&b, "%s: %s", e.Type, e.Message)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d of your script)", e.Line)
	}
	b.WriteString("\n")
	if e.Traceback != "" {
		b.WriteString("\n" + e.Traceback + "\n")
	}
	if stdout != "" {
		b.WriteString("\nThe script printed before it failed:\n" + stdout)
	}
	return b.String()
}

// transactionName names the undo step the person sees in FreeCAD.
func transactionName(desc string) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if r := []rune(desc); len(r) > transactionNameMax {
		desc = string(r[:transactionNameMax-3]) + "..."
	}
	if desc == "" {
		return "Nexus (MCP)"
	}
	return "Nexus: " + desc
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
