package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestListsArePaged pages a session's runs and a user's sessions with the
// cursors the server hands out, and refuses sizes and tokens it did not.
func TestListsArePaged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := ot.NewAnthropicFunc(t, func(ot.Request) ot.Turn { return ot.Turn{Blocks: []ot.Block{ot.Text("Nothing to do.")}} })
	stack := ot.Start(t, vendor.URL, baseEnv())
	sess := newSession(ctx, t, stack.Client)
	var started []string
	for i := range 5 {
		chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: fmt.Sprintf("run %d", i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, chunks[0].GetRunId())
	}
	for range 2 {
		newSession(ctx, t, stack.Client)
	}

	// page follows next_page_token until it is empty and answers the
	// ids of each page.
	page := func(t *testing.T, list func(token string) ([]string, string, error)) [][]string {
		t.Helper()
		var pages [][]string
		token := ""
		for {
			ids, next, err := list(token)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, ids)
			if next == "" {
				return pages
			}
			token = next
		}
	}
	t.Run("runs, oldest first, in pages of 2", func(t *testing.T) {
		pages := page(t, func(token string) ([]string, string, error) {
			resp, err := stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: sess.GetSessionId(), PageSize: 2, PageToken: token})
			var ids []string
			for _, r := range resp.GetRuns() {
				ids = append(ids, r.GetRunId())
			}
			return ids, resp.GetNextPageToken(), err
		})
		if got, want := fmt.Sprint(pages), fmt.Sprint([][]string{started[0:2], started[2:4], started[4:5]}); got != want {
			t.Errorf("pages = %s, want %s", got, want)
		}
	})
	t.Run("sessions, newest first, in pages of 2", func(t *testing.T) {
		pages := page(t, func(token string) ([]string, string, error) {
			resp, err := stack.Client.ListSessions(ctx, &agentv1.ListSessionsRequest{PageSize: 2, PageToken: token})
			var ids []string
			for _, s := range resp.GetSessions() {
				ids = append(ids, s.GetSessionId())
			}
			return ids, resp.GetNextPageToken(), err
		})
		seen := map[string]bool{}
		var sizes []int
		for _, p := range pages {
			sizes = append(sizes, len(p))
			for _, id := range p {
				seen[id] = true
			}
		}
		if fmt.Sprint(sizes) != "[2 1]" || len(seen) != 3 || pages[1][0] != sess.GetSessionId() {
			t.Errorf("pages = %v, want 2 then 1 of the 3 sessions, the first session last", pages)
		}
	})
	t.Run("bad sizes and tokens are refused, naming the limit", func(t *testing.T) {
		cases := []struct {
			name string
			err  error
			want string
		}{
			{"negative size", err2(stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: sess.GetSessionId(), PageSize: -1})), "must not be negative"},
			{"runs over the limit", err2(stack.Client.ListRuns(ctx, &agentv1.ListRunsRequest{SessionId: sess.GetSessionId(), PageSize: 1001})), "limit of 1000"},
			{"sessions over the limit", err2(stack.Client.ListSessions(ctx, &agentv1.ListSessionsRequest{PageSize: 501})), "limit of 500"},
			{"a made-up token", err2(stack.Client.ListSessions(ctx, &agentv1.ListSessionsRequest{PageToken: "bm9wZQ"})), "not one this server gave out"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if status.Code(tc.err) != codes.InvalidArgument || !strings.Contains(tc.err.Error(), tc.want) {
					t.Errorf("got %v, want InvalidArgument saying %q", tc.err, tc.want)
				}
			})
		}
	})
}

func err2[T any](_ T, err error) error { return err }
