// Package evalcmd is nexus eval: it runs BIM tasks as real runs through the
// mesh, checks each resulting document on the host, and reports pass rates,
// turns, tokens, cost and time per task (report.json, report.html);
// nexus eval compare shows what a change did between two reports.
package evalcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"nexus.local/cmd/nexus/internal/cli"
	tasks "nexus.local/eval"
)

// MaxRepeat and MaxConcurrency bound the command line: enough for a
// spread, not so many runtimes that a workstation stalls.
const (
	MaxRepeat      = 20
	MaxConcurrency = 8
)

// Options says what to run.
type Options struct {
	Model  string
	Tasks  []tasks.Task
	Repeat int
	// Progress gets one line per attempt as it ends.
	Progress io.Writer
}

// Validate refuses options that cannot run, naming the limit.
func (o Options) Validate() error {
	switch {
	case strings.TrimSpace(o.Model) == "":
		return errors.New("eval: --model is required (replay/expert replays each task's reference solution; a vendor model runs for real)")
	case o.Repeat < 1 || o.Repeat > MaxRepeat:
		return fmt.Errorf("eval: --repeat %d: want 1 to %d", o.Repeat, MaxRepeat)
	case len(o.Tasks) == 0:
		return errors.New("eval: no tasks to run")
	}
	return nil
}

type job struct {
	task   tasks.Task
	repeat int
}

// Run runs every task Repeat times, as many at once as hosts has runtimes.
// A task that could not be run at all (the host or the mesh failed) counts
// as failed, with why; Run's error is only for a cancelled context.
func Run(ctx context.Context, opt Options, m cli.Mesh, hosts *Hosts) (*Report, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Model: opt.Model, Started: time.Now().UTC(), Repeat: opt.Repeat}
	var jobs []job
	for r := 1; r <= opt.Repeat; r++ {
		for _, t := range opt.Tasks {
			jobs = append(jobs, job{t, r})
		}
	}
	results := make([]Attempt, len(jobs))
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
	)
	next := make(chan int)
	for range hosts.Size() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				h, err := hosts.take(ctx, j.task)
				if err != nil {
					results[i] = Attempt{Task: j.task.ID, Repeat: j.repeat, Why: "not run: " + err.Error()}
					continue
				}
				a, err := attempt(ctx, m, h, opt.Model, j.task, j.repeat)
				hosts.give(h)
				if err != nil {
					a.Passed, a.Why = false, "could not run: "+err.Error()
				}
				results[i] = a
				mu.Lock()
				done++
				progress(opt.Progress, done, len(jobs), a)
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("eval interrupted after %d of %d attempts: %w", done, len(jobs), err)
	}
	for _, t := range opt.Tasks {
		tr := TaskReport{ID: t.ID, Kind: t.Kind.String(), Prompt: t.Prompt}
		for _, a := range results {
			if a.Task == t.ID {
				tr.Attempts = append(tr.Attempts, a)
			}
		}
		slices.SortFunc(tr.Attempts, func(x, y Attempt) int { return x.Repeat - y.Repeat })
		rep.Tasks = append(rep.Tasks, tr)
	}
	rep.summarize()
	return rep, nil
}

// progress prints the line of one finished attempt.
func progress(w io.Writer, done, total int, a Attempt) {
	if w == nil {
		return
	}
	verdict := "PASS"
	if !a.Passed {
		verdict = "FAIL"
	}
	line := fmt.Sprintf("[%*d/%d] %-28s %s  %d turns  %d automations  %d/%d tokens  %.1f s", len(fmt.Sprint(total)), done, total, a.Task, verdict,
		a.Turns, a.Automations, a.Tokens.Input, a.Tokens.Output, float64(a.WallMs)/1000)
	if !a.Passed {
		line += "  " + a.Why
	}
	fmt.Fprintln(w, line)
}

// enumText turns an enum value name into lower-case words without prefix.
func enumText(name, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", " ")
}
