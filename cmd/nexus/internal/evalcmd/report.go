package evalcmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Figures are the means of a set of attempts (the tokens and cost are
// totals).
type Figures struct {
	Attempts int     `json:"attempts"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"passRate"`
	// Spread is the standard error of PassRate over the attempts; 0 for one.
	Spread      float64 `json:"spread"`
	Turns       float64 `json:"turns"`
	Inspections float64 `json:"inspections"`
	Automations float64 `json:"automations"`
	Fixes       float64 `json:"fixes"`
	Iterations  float64 `json:"iterations"`
	Rollbacks   float64 `json:"rollbacks"`
	CapsHit     float64 `json:"capsHit"`
	WallMs      float64 `json:"wallMs"`
	// Tokens are the totals of all attempts.
	Tokens Tokens `json:"tokens"`
}

// TaskReport is one task's attempts and their figures.
type TaskReport struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Prompt   string    `json:"prompt"`
	Figures  Figures   `json:"figures"`
	Attempts []Attempt `json:"attempts"`
}

// Report is what report.json holds.
type Report struct {
	Model    string       `json:"model"`
	Started  time.Time    `json:"started"`
	Repeat   int          `json:"repeat"`
	Total    Figures      `json:"total"`
	Tasks    []TaskReport `json:"tasks"`
	Failures []string     `json:"failures"`
}

func figures(as []Attempt) Figures {
	f := Figures{Attempts: len(as)}
	if len(as) == 0 {
		return f
	}
	for _, a := range as {
		if a.Passed {
			f.Passed++
		}
		f.Turns += float64(a.Turns)
		f.Inspections += float64(a.Inspections)
		f.Automations += float64(a.Automations)
		f.Fixes += float64(a.Fixes)
		f.Iterations += float64(a.Iterations)
		f.Rollbacks += float64(a.Rollbacks)
		f.CapsHit += float64(a.CapsHit)
		f.WallMs += float64(a.WallMs)
		f.Tokens.add(a.Tokens)
	}
	n := float64(len(as))
	f.PassRate = float64(f.Passed) / n
	f.Spread = math.Sqrt(f.PassRate * (1 - f.PassRate) / n)
	for _, p := range []*float64{&f.Turns, &f.Inspections, &f.Automations, &f.Fixes, &f.Iterations, &f.Rollbacks, &f.CapsHit, &f.WallMs} {
		*p /= n
	}
	return f
}

// summarize fills the figures from the attempts.
func (r *Report) summarize() {
	var all []Attempt
	r.Failures = nil
	for i := range r.Tasks {
		t := &r.Tasks[i]
		t.Figures = figures(t.Attempts)
		all = append(all, t.Attempts...)
		for _, a := range t.Attempts {
			if !a.Passed {
				r.Failures = append(r.Failures, fmt.Sprintf("%s (repeat %d): %s", a.Task, a.Repeat, a.Why))
			}
		}
	}
	r.Total = figures(all)
}

// AllPassed says every attempt of every task passed.
func (r *Report) AllPassed() bool { return r.Total.Attempts > 0 && r.Total.Passed == r.Total.Attempts }

// Write puts report.json and report.html into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report folder: %w", err)
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report.json: %w", err)
	}
	page, err := r.HTML()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// ReadReport reads a report.json.
func ReadReport(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s is not a nexus eval report: %w", path, err)
	}
	if r.Model == "" || len(r.Tasks) == 0 {
		return nil, fmt.Errorf("%s is not a nexus eval report: no model or no tasks", path)
	}
	return &r, nil
}
