package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
)

// AuditOptions configures Audit.
type AuditOptions struct {
	Conn      Conn
	SessionID string
	// Code prints the exact bytes of every script that left.
	Code bool
	// Wide prints every column (ids, full hashes, users), past 100 columns.
	Wide   bool
	Output Output
}

// hostOf names the session's linked host and its application's version,
// e.g. "FreeCAD 0.20.2 (h_dev)"; empty when the session has none (an eval
// session, one whose host was revoked) or it cannot be read now.
func hostOf(ctx context.Context, b backend, session string) (app, name string) {
	s, err := b.GetSession(ctx, &agentv1.GetSessionRequest{SessionId: session})
	if err != nil || s.GetHostId() == "" {
		return s.GetHostApp(), ""
	}
	hb, ok := b.(hostsBackend)
	if !ok {
		return s.GetHostApp(), ""
	}
	hosts, err := hb.ListHosts(ctx, &agentv1.ListHostsRequest{})
	if err != nil {
		return s.GetHostApp(), ""
	}
	for _, h := range hosts.GetLinkedHosts() {
		if h.GetHostId() == s.GetHostId() {
			return s.GetHostApp(), strings.TrimSpace(hostName(h.GetHostApp())+" "+h.GetHostVersion()) + " (" + h.GetHostId() + ")"
		}
	}
	return s.GetHostApp(), ""
}

// Audit prints a session's run history and its dispatch audit log: which
// exact scripts left for the host, their hashes, and how each ended. With
// Code it prints each script's bytes as well.
func Audit(ctx context.Context, opt AuditOptions, o IO) error {
	session := opt.SessionID
	b, err := connect(ctx, opt.Conn, o)
	if err != nil {
		return err
	}
	defer b.Close()
	runs, err := allPages(func(token string) ([]*agentv1.RunRecord, string, error) {
		page, err := b.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: session, PageToken: token})
		return page.GetRuns(), page.GetNextPageToken(), err
	})
	if err != nil {
		return err
	}
	dispatches, err := allPages(func(token string) ([]*capabilityv1.Dispatch, string, error) {
		page, err := b.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: session, IncludeCode: opt.Code, PageToken: token})
		return page.GetDispatches(), page.GetNextPageToken(), err
	})
	if err != nil {
		return err
	}
	if opt.Output == OutputJSON {
		return writeAuditJSON(o.Stdout, session, runs, dispatches)
	}

	app, host := hostOf(ctx, b, session)
	fmt.Fprintf(o.Stdout, "session %s: %d run(s), %d dispatch(es)", session, len(runs), len(dispatches))
	if host != "" {
		fmt.Fprintf(o.Stdout, " on %s", host)
	}
	fmt.Fprintln(o.Stdout, "\n\nRUNS")
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	if opt.Wide {
		fmt.Fprintln(tw, "STARTED\tRUN\tOUTCOME\tMODEL\tTURNS\tTOKENS IN/OUT\tCOST\tTOOL CALLS\tPROMPT")
	} else {
		fmt.Fprintln(tw, "STARTED\tOUTCOME\tTURNS\tTOKENS IN/OUT\tCOST\tPROMPT")
	}
	for _, r := range runs {
		u := r.GetUsage()
		if opt.Wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t$%.4f\t%s\t%s\n", localTime(r.GetStartTime().AsTime()), r.GetRunId(), r.GetOutcome(),
				strings.Join(r.GetModels(), ","), r.GetTurns(), u.GetInputTokens(), u.GetOutputTokens(), u.GetCostUsd(),
				countsText(r.GetToolCalls()), oneLine(r.GetPrompt(), 60))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d/%d\t$%.4f\t%s\n", r.GetStartTime().AsTime().Local().Format("01-02 15:04"), r.GetOutcome(),
			r.GetTurns(), u.GetInputTokens(), u.GetOutputTokens(), u.GetCostUsd(), oneLine(r.GetPrompt(), 34))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(o.Stdout, "\nDISPATCHES")
	tw = tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	if opt.Wide {
		fmt.Fprintln(tw, "TIME\tRUN\tTOOL CALL\tKIND\tHOST\tCAPABILITY\tSHA256\tOUTCOME\tUSER\tREVIEWED")
	} else {
		fmt.Fprintln(tw, "TIME\tKIND\tSHA256\tOUTCOME\tREVIEWED")
	}
	for _, d := range dispatches {
		st := d.GetStamp()
		if opt.Wide {
			hostCol := st.GetHostApp()
			if host != "" && st.GetHostApp() == app {
				hostCol = host
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", localTime(d.GetDispatchTime().AsTime()), d.GetRunId(), d.GetToolCallId(),
				enumText(d.GetKind().String(), "SCRIPT_KIND_"), hostCol, st.GetCapabilityVersion(), st.GetContentHash(), outcomeText(d), d.GetUser(), reviewText(d))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.GetDispatchTime().AsTime().Local().Format("15:04:05"),
			enumText(d.GetKind().String(), "SCRIPT_KIND_"), shortHash(st.GetContentHash()), outcomeText(d), shortReview(d))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !opt.Wide {
		fmt.Fprintln(o.Stdout, "\n(nexus audit --wide: run and call ids, models, full hashes, users; --code: the scripts)")
	}
	if opt.Code {
		for _, d := range dispatches {
			fmt.Fprintf(o.Stdout, "\n--- %s %s %s sha256 %s ---\n%s\n", d.GetRunId(), d.GetToolCallId(),
				enumText(d.GetKind().String(), "SCRIPT_KIND_"), d.GetStamp().GetContentHash(), d.GetStamp().GetCode())
		}
	}
	return nil
}

// reviewText says who reviewed a script and when, and whether they edited
// it; "-" when nobody did.
func reviewText(d *capabilityv1.Dispatch) string {
	if d.GetReviewer() == "" {
		return "-"
	}
	s := d.GetReviewer()
	if d.GetReviewTime() != nil {
		s += " at " + localTime(d.GetReviewTime().AsTime())
	}
	if d.GetEdited() {
		s += " (edited)"
	}
	return s
}

// shortReview is reviewText without the time, for the narrow table.
func shortReview(d *capabilityv1.Dispatch) string {
	switch {
	case d.GetReviewer() == "":
		return "-"
	case d.GetEdited():
		return d.GetReviewer() + " (edited)"
	}
	return d.GetReviewer()
}

// shortHash is the first 12 hex digits of a sha256, as git shortens.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func outcomeText(d *capabilityv1.Dispatch) string {
	if d.GetOutcome() == capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED {
		return "pending"
	}
	s := enumText(d.GetOutcome().String(), "DISPATCH_OUTCOME_")
	if d.GetErrorType() != "" {
		s += " (" + d.GetErrorType() + ")"
	}
	return s
}

func enumText(name, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", " ")
}

func countsText(m map[string]int32) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], strings.ReplaceAll(k, "_", " "))
	}
	return strings.Join(parts, ", ")
}

func localTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > limit {
		return string(r[:limit-3]) + "..."
	}
	return s
}

// writeAuditJSON prints the audit as one JSON object: the session id, its
// runs and its dispatches, each in protojson.
func writeAuditJSON(w io.Writer, session string, runs []*agentv1.RunRecord, dispatches []*capabilityv1.Dispatch) error {
	out := struct {
		SessionID  string            `json:"sessionId"`
		Runs       []json.RawMessage `json:"runs"`
		Dispatches []json.RawMessage `json:"dispatches"`
	}{SessionID: session, Runs: []json.RawMessage{}, Dispatches: []json.RawMessage{}}
	for _, r := range runs {
		b, err := protojson.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode run %s: %w", r.GetRunId(), err)
		}
		out.Runs = append(out.Runs, b)
	}
	for _, d := range dispatches {
		b, err := protojson.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode dispatch %s: %w", d.GetToolCallId(), err)
		}
		out.Dispatches = append(out.Dispatches, b)
	}
	return json.NewEncoder(w).Encode(out)
}
