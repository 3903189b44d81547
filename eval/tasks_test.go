package eval

import (
	"context"
	"strings"
	"testing"
	"time"

	"nexus.local/hosts/freecad/launcher"
)

// TestTasksLoad holds the shipped task set to its promise: at least 30
// tasks of every kind, each with a checker, a reference and a wrong solution.
func TestTasksLoad(t *testing.T) {
	tasks, err := Load(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 30 {
		t.Errorf("%d tasks, want at least 30", len(tasks))
	}
	per := map[Kind]int{}
	for _, task := range tasks {
		per[task.Kind]++
	}
	for _, k := range kinds() {
		if per[k] == 0 {
			t.Errorf("no %s task", k)
		}
	}
	if _, err := Select(tasks, "nope-*"); err == nil {
		t.Error("a --tasks pattern that matches nothing was accepted")
	}
	if got, err := Select(tasks, "01-*,0[12]-*"); err != nil || len(got) != 2 {
		t.Errorf("Select(01-*,0[12]-*) = %d tasks, %v; want 2", len(got), err)
	}
}

// TestCheckersOnFreeCAD runs every task's reference solution and every wrong
// one on the real FreeCAD runtime (one runtime, a cleared document and the
// task's setup before each): each reference must pass its checker and each
// wrong solution must fail it. A checker that passes a wrong solution is a
// checker that cannot tell right from wrong.
func TestCheckersOnFreeCAD(t *testing.T) {
	tasks, err := Load(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	rt, err := launcher.Start(ctx, launcher.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start the freecad runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	checkTasks(ctx, t, tasks, HostFreeCAD, rt.Client)
}

// checkTasks solves every task of host with its reference and its wrong
// solutions on ex.
func checkTasks(ctx context.Context, t *testing.T, tasks []Task, host Host, ex Executor) {
	n := 0
	for _, task := range tasks {
		if task.Host != host {
			continue
		}
		n++
		t.Run(task.ID, func(t *testing.T) {
			ok, why, err := Solve(ctx, ex, task, task.Reference)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Errorf("the reference fails its checker: %s", why)
			}
			for _, w := range task.Wrong {
				ok, why, err := Solve(ctx, ex, task, w)
				switch {
				case err != nil:
					t.Fatal(err)
				case ok:
					t.Errorf("%s passes the checker", w.Name)
				case strings.HasPrefix(why, "script "):
					// A wrong solution is a plausible mistake that leaves a
					// wrong document, not a script that crashes.
					t.Errorf("%s does not get as far as the checker: %s", w.Name, why)
				default:
					t.Logf("%s fails as it should: %s", w.Name, why)
				}
			}
		})
	}
	if n == 0 {
		t.Errorf("no %s task", host)
	}
}
