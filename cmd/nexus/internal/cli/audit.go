package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
)

// Audit prints a session's run history and its dispatch audit log: which
// exact scripts left for the host, their hashes, and how each ended. With
// --code it prints each script's bytes as well.
func Audit(ctx context.Context, args []string, o IO) error {
	fs := newFlags("audit", o)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nexus audit [--addr host:port] [--code] SESSION")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", o.defaultAddr(), "orchestrator gRPC address (default $NEXUS_ORCHESTRATOR_ADDR)")
	withCode := fs.Bool("code", false, "print the exact bytes of every script that left")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("audit needs exactly one SESSION id (nexus sessions lists them)")
	}
	session := fs.Arg(0)
	conn, client, err := dial(ctx, *addr, o)
	if err != nil {
		return err
	}
	defer conn.Close()
	runs, err := client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: session})
	if err != nil {
		return rpcError("list the runs of session "+session, *addr, err)
	}
	var dispatches []*capabilityv1.Dispatch
	token := ""
	for {
		page, err := client.ListDispatches(ctx, &agentv1.ListDispatchesRequest{SessionId: session, IncludeCode: *withCode, PageToken: token})
		if err != nil {
			return rpcError("list the dispatches of session "+session, *addr, err)
		}
		dispatches = append(dispatches, page.GetDispatches()...)
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}

	fmt.Fprintf(o.Stdout, "session %s: %d run(s), %d dispatch(es)\n\nRUNS\n", session, len(runs.GetRuns()), len(dispatches))
	tw := tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tRUN\tOUTCOME\tMODEL\tTURNS\tTOKENS IN/OUT\tCOST\tTOOL CALLS\tPROMPT")
	for _, r := range runs.GetRuns() {
		u := r.GetUsage()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t$%.4f\t%s\t%s\n", localTime(r.GetStartTime().AsTime()), r.GetRunId(), r.GetOutcome(),
			strings.Join(r.GetModels(), ","), r.GetTurns(), u.GetInputTokens(), u.GetOutputTokens(), u.GetCostUsd(),
			countsText(r.GetToolCalls()), oneLine(r.GetPrompt(), 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(o.Stdout, "\nDISPATCHES")
	tw = tabwriter.NewWriter(o.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tRUN\tTOOL CALL\tKIND\tHOST\tVERSION\tSHA256\tOUTCOME\tUSER")
	for _, d := range dispatches {
		st := d.GetStamp()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", localTime(d.GetDispatchTime().AsTime()), d.GetRunId(), d.GetToolCallId(),
			enumText(d.GetKind().String(), "SCRIPT_KIND_"), st.GetHostApp(), st.GetCapabilityVersion(), st.GetContentHash(), outcomeText(d), d.GetUser())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *withCode {
		for _, d := range dispatches {
			fmt.Fprintf(o.Stdout, "\n--- %s %s %s sha256 %s ---\n%s\n", d.GetRunId(), d.GetToolCallId(),
				enumText(d.GetKind().String(), "SCRIPT_KIND_"), d.GetStamp().GetContentHash(), d.GetStamp().GetCode())
		}
	}
	return nil
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
