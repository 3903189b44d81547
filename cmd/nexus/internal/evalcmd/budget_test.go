package evalcmd

import (
	"context"
	"testing"
	"time"

	"nexus.local/cmd/nexus/internal/cli"
	tasks "nexus.local/eval"
	"nexus.local/platform/config"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestFixesIterationsAndCapsCounted scripts a vendor model through one
// task the long way round: a script that fails, the fix that commits, an
// iteration, and one more automation the iteration budget (1) refuses.
// The report must count one of each, price the tokens at the catalog's
// rates, and agree with the run history.
func TestFixesIterationsAndCapsCounted(t *testing.T) {
	all, err := tasks.Load(tasks.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Select(all, "06-two-levels")
	if err != nil {
		t.Fatal(err)
	}
	auto := func(id, code string) ot.Turn {
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse(id, "execute_task_automation", map[string]any{"description": "levels", "code": code})},
			InputTokens: 3000, OutputTokens: 400, CacheReadTokens: 1000, CacheWriteTokens: 500}
	}
	vendor := ot.NewAnthropic(t,
		auto("toolu_1", "import Arch\nArch.makeFloor().Label = 'Level 1'\nraise ValueError('forgot Level 2')\n"),
		auto("toolu_2", task[0].Reference.Scripts[0]),
		auto("toolu_3", "print('checked the levels')\n"),
		auto("toolu_4", "print('one more look')\n"),
		ot.Turn{Blocks: []ot.Block{ot.Text("Level 1 at 0 and Level 2 at 3000 mm.")}, InputTokens: 5000, OutputTokens: 50},
	)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error", "NEXUS_API_KEYS": evalKey + ":ada", "NEXUS_MAX_ITERATIONS": "1"})
	m, err := cli.ConnectMesh(ctx, cli.Conn{Addr: stack.Addr}, cli.IO{Env: config.Map(map[string]string{"NEXUS_API_KEY": evalKey})})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hosts, err := StartHosts(ctx, 1, nil, task)
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close()
	rep, err := Run(ctx, Options{Model: ot.Model, Tasks: task, Repeat: 1}, m, hosts)
	if err != nil {
		t.Fatal(err)
	}
	a := rep.Tasks[0].Attempts[0]
	if !a.Passed {
		t.Errorf("the task failed: %s", a.Why)
	}
	if a.Automations != 3 || a.Rollbacks != 1 || a.Fixes != 1 || a.Iterations != 1 || a.CapsHit != 1 || a.Turns != 5 {
		t.Errorf("counted %d automations, %d rollbacks, %d fixes, %d iterations, %d caps in %d turns; want 3, 1, 1, 1, 1 in 5",
			a.Automations, a.Rollbacks, a.Fixes, a.Iterations, a.CapsHit, a.Turns)
	}
	// 17,000 input, 1,650 output, 4,000 cache read and 2,000 cache write
	// tokens at $3, $15, $0.30 and $3.75 a million.
	if want := 0.051 + 0.02475 + 0.0012 + 0.0075; a.Tokens.CostUSD < want-1e-9 || a.Tokens.CostUSD > want+1e-9 {
		t.Errorf("cost %.6f USD, want %.6f at the catalog's prices (%+v)", a.Tokens.CostUSD, want, a.Tokens)
	}
	checkHistory(ctx, t, m, rep)
}
