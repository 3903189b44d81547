// Package eval holds the BIM tasks `nexus eval` measures the loop with: for
// each, the prompt a person would type, the setup that builds its starting
// document, a read-only checker of the result, the reference solution a
// competent person would run and plausible wrong ones. The files are the
// tasks (README.md says how to add one); this package reads them.
package eval

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// builtin is the task set shipped with the binary, so the expert model and
// `nexus eval` agree on it wherever they run.
//
//go:embed lib.py lib_revit.py tasks
var builtin embed.FS

// Builtin is the shipped task set, laid out as this folder is.
func Builtin() fs.FS { return builtin }

// Kind is what a task asks for.
type Kind int

const (
	// KindCreate builds something new.
	KindCreate Kind = iota + 1
	// KindModify changes what the starting document holds.
	KindModify
	// KindInspect is answered in the final message; the document must not change.
	KindInspect
	// KindCleanup deletes, purges or rebuilds.
	KindCleanup
)

// kinds are the kinds in the order task.json names them.
func kinds() []Kind { return []Kind{KindCreate, KindModify, KindInspect, KindCleanup} }

func (k Kind) String() string {
	switch k {
	case KindCreate:
		return "create"
	case KindModify:
		return "modify"
	case KindInspect:
		return "inspect"
	case KindCleanup:
		return "cleanup"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// parseKind reads task.json's kind.
func parseKind(s string) (Kind, bool) {
	for _, k := range kinds() {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// Solution is one way of doing a task: its scripts, run in order.
type Solution struct {
	Name    string
	Scripts []string
}

// Task is one folder of tasks/.
type Task struct {
	// ID is the folder's name, e.g. "01-room".
	ID     string
	Prompt string
	Kind   Kind
	// Host is the application the task runs in.
	Host Host
	// Trap says what in the starting document is there to mislead.
	Trap      string
	lib       string
	setup     string
	check     string
	Reference Solution
	Wrong     []Solution
}

// taskFile is task.json.
type taskFile struct {
	Prompt string `json:"prompt"`
	Kind   string `json:"kind"`
	Trap   string `json:"trap"`
	Host   string `json:"host"`
}

// Load reads every task of fsys (the hosts' libraries and tasks/*/), in
// folder order.
func Load(fsys fs.FS) ([]Task, error) {
	libs := map[Host]string{}
	for _, h := range []Host{HostFreeCAD, HostRevit} {
		lib, err := fs.ReadFile(fsys, h.libFile())
		if err != nil {
			return nil, fmt.Errorf("read the %s checkers' library: %w", h, err)
		}
		libs[h] = string(lib)
	}
	dirs, err := fs.ReadDir(fsys, "tasks")
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	var tasks []Task
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t, err := loadTask(fsys, d.Name(), libs)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", d.Name(), err)
		}
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, errors.New("no tasks under tasks/")
	}
	return tasks, nil
}

func loadTask(fsys fs.FS, id string, libs map[Host]string) (Task, error) {
	dir := path.Join("tasks", id)
	raw, err := fs.ReadFile(fsys, path.Join(dir, "task.json"))
	if err != nil {
		return Task{}, err
	}
	var tf taskFile
	if err := json.Unmarshal(raw, &tf); err != nil {
		return Task{}, fmt.Errorf("task.json: %w", err)
	}
	kind, ok := parseKind(tf.Kind)
	if !ok {
		return Task{}, fmt.Errorf("task.json: kind %q is not create, modify, inspect or cleanup", tf.Kind)
	}
	host, ok := parseHost(tf.Host)
	if !ok {
		return Task{}, fmt.Errorf("task.json: host %q is not freecad or revit", tf.Host)
	}
	if strings.TrimSpace(tf.Prompt) == "" {
		return Task{}, errors.New("task.json: the prompt is empty")
	}
	t := Task{ID: id, Prompt: strings.TrimSpace(tf.Prompt), Kind: kind, Host: host, Trap: tf.Trap, lib: libs[host]}
	if b, err := fs.ReadFile(fsys, path.Join(dir, "setup.py")); err == nil {
		t.setup = string(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Task{}, err
	}
	check, err := fs.ReadFile(fsys, path.Join(dir, "check.py"))
	if err != nil {
		return Task{}, fmt.Errorf("every task needs a check.py: %w", err)
	}
	t.check = string(check)
	if t.Reference, err = readScripts(fsys, path.Join(dir, "reference"), "reference"); err != nil {
		return Task{}, err
	}
	wrong, err := fs.ReadDir(fsys, path.Join(dir, "wrong"))
	if err != nil {
		return Task{}, fmt.Errorf("every task needs at least one wrong solution: %w", err)
	}
	for _, w := range wrong {
		name := path.Join(dir, "wrong", w.Name())
		if w.IsDir() {
			s, err := readScripts(fsys, name, "wrong/"+w.Name())
			if err != nil {
				return Task{}, err
			}
			t.Wrong = append(t.Wrong, s)
			continue
		}
		if path.Ext(w.Name()) != ".py" {
			continue
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return Task{}, err
		}
		t.Wrong = append(t.Wrong, Solution{Name: "wrong/" + strings.TrimSuffix(w.Name(), ".py"), Scripts: []string{string(b)}})
	}
	if len(t.Wrong) == 0 {
		return Task{}, errors.New("every task needs at least one wrong solution under wrong/")
	}
	return t, nil
}

// readScripts reads a folder's .py files in name order.
func readScripts(fsys fs.FS, dir, name string) (Solution, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return Solution{}, fmt.Errorf("%s: %w", name, err)
	}
	s := Solution{Name: name}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".py" {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return Solution{}, err
		}
		s.Scripts = append(s.Scripts, string(b))
	}
	if len(s.Scripts) == 0 {
		return Solution{}, fmt.Errorf("%s holds no .py script", name)
	}
	return s, nil
}

// Select keeps the tasks whose id matches one of the comma-separated glob
// patterns; an empty pattern keeps all. A pattern that matches nothing is an
// error, so a typo never measures an empty set.
func Select(tasks []Task, patterns string) ([]Task, error) {
	if strings.TrimSpace(patterns) == "" {
		return tasks, nil
	}
	var out []Task
	for _, p := range strings.Split(patterns, ",") {
		p = strings.TrimSpace(p)
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--tasks %q: %w", p, err)
		}
		n := 0
		for _, t := range tasks {
			if ok, _ := path.Match(p, t.ID); ok {
				n++
				if !slices.ContainsFunc(out, func(o Task) bool { return o.ID == t.ID }) {
					out = append(out, t)
				}
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("--tasks %q matches none of the %d tasks (ids look like %s)", p, len(tasks), tasks[0].ID)
		}
	}
	return out, nil
}
