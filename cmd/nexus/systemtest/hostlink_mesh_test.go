package systemtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"nexus.local/cmd/nexus/internal/cli"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/proctest"
	"nexus.local/platform/sqlstore/sqlstoretest"
	ot "nexus.local/services/orchestrator/orchestratortest"
	"nexus.local/services/orchestrator/state/statetest"
)

// The deployment the mesh link test runs: replicas, gateways, linked
// FreeCAD runtimes (one per user), and the runs they carry.
const (
	meshLinkReplicas = 3
	meshLinkGateways = 2
	meshLinkHosts    = 5
	meshLinkRuns     = 50
	// meshLinkLate runs are started only after the first gateway is
	// killed, so the hosts linked to it must reconnect to get them.
	meshLinkLate = 10
)

// meshLinkScript is the one automation of run n: a box labelled with the
// run, so the document says how often each run's call was carried out.
func meshLinkScript(n int) string {
	return fmt.Sprintf("import time\nb = doc.addObject('Part::Box', 'Box')\nb.Label2 = 'run-%d'\ntime.sleep(0.2)\n", n)
}

// TestLinkedHostsThroughTheMesh is the host link in a deployment's shape:
// Redis, PostgreSQL, 3 orchestrator replicas and 2 gateways as processes of
// their own, and 5 real FreeCAD runtimes (nexus host freecad --connect,
// each given both gateways) linked for 5 users. 50 runs complete, each
// call carried out once in its user's document; the first gateway is
// killed while runs are under way, and the hosts linked to it reconnect to
// the other and lose nothing, including the runs started after the kill.
//
// Five FreeCAD processes fit this machine: each is idle between its calls,
// and a call here is a small script, so the test's cost is their start.
func TestLinkedHostsThroughTheMesh(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	redis := statetest.StartRedis(t, "everysec")
	db := sqlstoretest.Postgres(t)
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) > 0 {
			return ot.Turn{Blocks: []ot.Block{ot.Text("The box is in.")}}
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(r.Messages[0].Content[0].Text, "box "))
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse("toolu_box", "execute_task_automation", map[string]any{"description": "A box", "code": meshLinkScript(n)})}}
	})

	capAddr, routerAddr := freeAddr(t), freeAddr(t)
	var orchAddrs, keys []string
	for range meshLinkReplicas {
		orchAddrs = append(orchAddrs, freeAddr(t))
	}
	for i := range meshLinkHosts {
		keys = append(keys, fmt.Sprintf("k-mesh-%d:mesh-user-%d", i, i))
	}
	common := []string{
		"NEXUS_CAPABILITY_ADDR=" + capAddr, "NEXUS_MODEL_ROUTER_ADDR=" + routerAddr, "NEXUS_ORCHESTRATOR_ADDR=" + strings.Join(orchAddrs, ","),
		"NEXUS_REDIS_URL=" + redis.URL(), "NEXUS_DATABASE_URL=" + db, "NEXUS_INTERNAL_KEY=" + meshInternalKey, "NEXUS_LOG_LEVEL=warn",
	}
	with := func(extra ...string) []string { return append(append([]string{}, common...), extra...) }
	start(t, bin, with("NEXUS_GRPC_ADDR="+capAddr), "capability")
	start(t, bin, with("NEXUS_GRPC_ADDR="+routerAddr, "ANTHROPIC_BASE_URL="+vendor.URL, "ANTHROPIC_API_KEY=test", "NEXUS_DEFAULT_MODEL="+ot.Model), "model-router")
	for i, addr := range orchAddrs {
		start(t, bin, with("NEXUS_GRPC_ADDR="+addr, fmt.Sprintf("NEXUS_REPLICA_ID=mesh-link-%d", i)), "orchestrator")
	}
	var gateways []*proctest.Process
	var bases []string
	for range meshLinkGateways {
		addr := freeAddr(t)
		gateways = append(gateways, start(t, bin, with("NEXUS_HTTP_ADDR="+addr, "NEXUS_API_KEYS="+strings.Join(keys, ","), "NEXUS_RATE_LIMIT_RPS=0"), "gateway"))
		bases = append(bases, "http://"+addr)
	}
	for _, b := range bases {
		waitHTTP(t, b+"/readyz")
	}
	key := func(user int) string { k, _, _ := strings.Cut(keys[user], ":"); return k }

	// Each user pairs one runtime; even ones link to the first gateway
	// first, odd ones to the second, each knowing both.
	type runtime struct {
		host  *cli.Host
		proc  *proctest.Process
		first int
	}
	var rts []runtime
	for i := range meshLinkHosts {
		token := pairOverHTTP(t, bases[i%2], key(i))
		addr := freeAddr(t)
		connect := bases[i%2] + "," + bases[(i+1)%2]
		p := proctest.Start(t, bin, "host freecad "+strconv.Itoa(i), []string{"NEXUS_HOST_TOKEN=mesh-pair-" + strconv.Itoa(i), "NEXUS_HOST_LINK_TOKEN=" + token,
			"NEXUS_HOST_LINK_TOKEN_FILE=" + t.TempDir() + "/token"}, "host", "freecad", "--addr", addr, "--connect", connect)
		rts = append(rts, runtime{host: &cli.Host{URL: "http://" + addr, Token: "mesh-pair-" + strconv.Itoa(i)}, proc: p, first: i % 2})
	}
	allOnline := func(base string) func() bool {
		return func() bool {
			for i := range meshLinkHosts {
				var hosts linkedHosts
				apiJSON(t, http.MethodGet, base+"/v1/hosts", key(i), nil, http.StatusOK, &hosts)
				if len(hosts.LinkedHosts) != 1 || !hosts.LinkedHosts[0].Online {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, "the 5 runtimes to link", linkPatience, allOnline(bases[1]))

	// Sessions, one per run, bound to their user's one host.
	type run struct {
		user, gw    int
		session, id string
	}
	runs := make([]run, meshLinkRuns)
	startRun := func(n, gw int) {
		r := run{user: n % meshLinkHosts, gw: gw}
		var sess struct{ SessionID, HostID string }
		apiJSON(t, http.MethodPost, bases[gw]+"/v1/sessions", key(r.user), map[string]any{"hostApp": "freecad", "reviewPolicy": "REVIEW_POLICY_NONE"}, http.StatusOK, &sess)
		if sess.HostID == "" {
			t.Fatalf("run %d: the session of user %d is bound to no host", n, r.user)
		}
		var started struct{ RunID string }
		apiJSON(t, http.MethodPost, bases[gw]+"/v1/sessions/"+sess.SessionID+"/runs:start", key(r.user), map[string]any{"prompt": "box " + strconv.Itoa(n)}, http.StatusOK, &started)
		r.session, r.id = sess.SessionID, started.RunID
		runs[n] = r
	}
	for n := range meshLinkRuns - meshLinkLate {
		startRun(n, n%2)
	}
	ended := func(base string, upTo int) int {
		done := 0
		for _, r := range runs[:upTo] {
			if r.id == "" {
				continue
			}
			var s struct{ ActiveRunID string }
			apiJSON(t, http.MethodGet, base+"/v1/sessions/"+r.session, key(r.user), nil, http.StatusOK, &s)
			if s.ActiveRunID == "" {
				done++
			}
		}
		return done
	}
	waitFor(t, "the first runs to end", linkPatience, func() bool { return ended(bases[1], meshLinkRuns-meshLinkLate) >= 10 })
	gateways[0].Kill()
	t.Logf("killed the first gateway with %d of %d runs ended", ended(bases[1], meshLinkRuns-meshLinkLate), meshLinkRuns-meshLinkLate)
	for n := meshLinkRuns - meshLinkLate; n < meshLinkRuns; n++ {
		startRun(n, 1)
	}
	waitFor(t, "every run to end", linkPatience, func() bool { return ended(bases[1], meshLinkRuns) == meshLinkRuns })
	waitFor(t, "the 5 runtimes to be linked to the second gateway", linkPatience, allOnline(bases[1]))

	for i, rt := range rts {
		out := rt.proc.Output()
		first, other := strings.Index(out, "host link open on "+bases[rt.first]), strings.LastIndex(out, "host link open on "+bases[1])
		if first < 0 || (rt.first == 0 && other < first) {
			t.Errorf("host %d did not link to gateway %d first and, when it was killed, to the other:\n%s", i, rt.first, out)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			events := readRunEventsAs(t, bases[1], r.id, key(r.user))
			if !strings.Contains(events, "event: complete") || !strings.Contains(events, `"committed":true`) {
				mu.Lock()
				defer mu.Unlock()
				t.Errorf("run %d (user %d, started on gateway %d) did not complete with its commit:\n%s", n, r.user, r.gw, events)
			}
		}()
	}
	wg.Wait()
	for i, rt := range rts {
		res, failure := rt.host.Carry(t.Context(), "", &agentv1.ToolCall{ToolCallId: "census", HostRequest: &agentv1.ToolCall_Execute{Execute: &hostv1.ExecuteRequest{
			ToolCallId: "census-" + time.Now().Format("150405.000000"), Mode: hostv1.Mode_MODE_READ_ONLY,
			Code: "for o in doc.Objects:\n    print(o.Label2)\n"}}})
		if failure != nil || res.GetError() != nil {
			t.Fatalf("read the document of host %d: %v %v\n%s", i, failure, res.GetError(), rt.proc.Output())
		}
		got := map[string]int{}
		for _, l := range strings.Fields(res.GetStdout()) {
			got[l]++
		}
		for n := i; n < meshLinkRuns; n += meshLinkHosts {
			if c := got["run-"+strconv.Itoa(n)]; c != 1 {
				t.Errorf("host %d (linked first to gateway %d) carried out run %d's call %d times, want once", i, rt.first, n, c)
			}
			delete(got, "run-"+strconv.Itoa(n))
		}
		if len(got) != 0 {
			t.Errorf("host %d's document holds boxes of runs not its user's: %v", i, got)
		}
	}
	if t.Failed() {
		for i, rt := range rts {
			t.Logf("host %d:\n%s", i, rt.proc.Output())
		}
	}
}
