package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	evaltasks "nexus.local/eval"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/hostclient"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// revitAnswers are the closing messages of the Revit tasks whose checker
// reads the answer: what the reference finds.
var revitAnswers = map[string]string{
	"37-revit-audit-unhosted":    "Marked the unhosted family instances UNHOSTED; found 2.",
	"44-revit-room-area-level-2": "The rooms on Level 2 hold 55.68 square metres.",
}

// TestRevitTasksOnTheLinkedDouble runs every Revit task of the eval (the
// article's three among them: the doors of Level 3 renumbered, a curtain
// wall system across the facade, an audit of unhosted families) through the
// whole mesh on nexus dev to the Revit add-in's runtime on the double over
// the host link (paired, each session bound to it, nobody carrying the
// calls): a scripted model sends the task's reference script and answers,
// and the task's checker passes on the document the linked runtime holds
// afterwards.
func TestRevitTasksOnTheLinkedDouble(t *testing.T) {
	t.Parallel()
	all, err := evaltasks.Load(evaltasks.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	var revitTasks []evaltasks.Task
	for _, task := range all {
		if task.Host == evaltasks.HostRevit {
			revitTasks = append(revitTasks, task)
		}
	}
	if len(revitTasks) < 14 {
		t.Fatalf("%d Revit tasks, want the 14 the eval holds", len(revitTasks))
	}
	var turns []ot.Turn
	for i, task := range revitTasks {
		id := task.ID
		if len(task.Reference.Scripts) != 1 {
			t.Fatalf("task %s: want it with one reference script", id)
		}
		turns = append(turns,
			ot.Turn{Blocks: []ot.Block{ot.ToolUse(fmt.Sprintf("toolu_a%d", i), "execute_task_automation",
				map[string]any{"description": id, "code": task.Reference.Scripts[0]})}},
			ot.Turn{Blocks: []ot.Block{ot.Text(articleAnswer(id))}})
	}
	bin := buildNexus(t)
	vendor := ot.NewAnthropic(t, turns...)
	base, env := devWithVendor(t, bin, vendor.URL)
	hostAddr, hosts := linkRevitDouble(t, bin, env, base)
	// Setups and checkers reach the runtime as the eval does, over its
	// loopback contract; the runs reach it only over the link.
	local := &hostclient.Client{URL: "http://" + hostAddr, Token: "revit-pair", HTTP: &http.Client{Timeout: 2 * time.Minute}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	for _, task := range revitTasks {
		id := task.ID
		for _, code := range []string{evaltasks.RevitClearCode, task.SetupCode()} {
			if code == "" {
				continue // the task starts from the new project
			}
			res, err := local.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: code, TransactionName: "setup"})
			if err != nil || res.GetError() != nil || !res.GetCommitted() {
				t.Fatalf("%s: set up: %v %v", id, err, res.GetError())
			}
		}
		var sess struct{ SessionID, HostID string }
		apiJSON(t, http.MethodPost, base+"/v1/sessions", "", map[string]any{"hostApp": "revit", "model": ot.Model,
			"reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
		if sess.HostID != hosts.LinkedHosts[0].HostID {
			t.Fatalf("%s: the session is bound to host %q, want the linked revit host %q", id, sess.HostID, hosts.LinkedHosts[0].HostID)
		}
		var started struct{ RunID string }
		apiJSON(t, http.MethodPost, base+"/v1/sessions/"+sess.SessionID+"/runs:start", "",
			map[string]any{"prompt": task.Prompt}, http.StatusOK, &started)
		waitRunEnded(t, base, "", sess.SessionID, id+" to end")
		if events := readRunEvents(t, base, started.RunID); !strings.Contains(events, "event: complete") ||
			!strings.Contains(events, `"hostId":"`+sess.HostID+`"`) {
			t.Fatalf("%s: the run did not complete on the linked host %s:\n%s", id, sess.HostID, events)
		}
		res, err := local.Execute(ctx, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: task.CheckCode(articleAnswer(id))})
		if err != nil {
			t.Fatalf("%s: check: %v", id, err)
		}
		if ok, why := evaltasks.Verdict(res); !ok {
			t.Errorf("%s: the checker fails on the linked runtime's document: %s", id, why)
		}
	}
}

// articleAnswer is the scripted model's closing message for a task.
func articleAnswer(id string) string {
	if a, ok := revitAnswers[id]; ok {
		return a
	}
	return "Done: " + id + "."
}
