package corpus

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// Object is one object as dump.py sees it.
type Object struct {
	ID    int64                      `json:"id"`
	Label string                     `json:"label"`
	Type  string                     `json:"type"`
	Proxy string                     `json:"proxy"`
	State []string                   `json:"state"`
	Props map[string]json.RawMessage `json:"props"`
}

// Dump is a whole document by object name.
type Dump map[string]Object

// ParseDump reads what dump.py printed.
func ParseDump(s string) (Dump, error) {
	var d Dump
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &d); err != nil {
		return nil, fmt.Errorf("read the dump: %w", err)
	}
	return d, nil
}

// Difference says what differs of one object between two dumps: its type,
// label or state, and the first property whose value differs.
func Difference(a, b Object, withState bool) string {
	var out []string
	if a.Type != b.Type {
		out = append(out, fmt.Sprintf("type %s, then %s", a.Type, b.Type))
	}
	if a.Label != b.Label {
		out = append(out, fmt.Sprintf("label %q, then %q", a.Label, b.Label))
	}
	if withState && !slices.Equal(a.State, b.State) {
		out = append(out, fmt.Sprintf("state %v, then %v", a.State, b.State))
	}
	names := make([]string, 0, len(a.Props)+len(b.Props))
	for p := range a.Props {
		names = append(names, p)
	}
	for p := range b.Props {
		if _, ok := a.Props[p]; !ok {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	for _, p := range names {
		if va, vb := a.Props[p], b.Props[p]; string(va) != string(vb) {
			out = append(out, fmt.Sprintf("%s %s, then %s", p, short(va), short(vb)))
			break
		}
	}
	return strings.Join(out, ", ")
}

func short(v json.RawMessage) string {
	if v == nil {
		return "(none)"
	}
	if len(v) > 160 {
		return string(v[:160]) + "..."
	}
	return string(v)
}

// Changes are the objects that differ between two dumps, with what differs
// of each modified one.
type Changes struct {
	Added, Modified, Deleted []string
	Why                      map[string]string
}

// Empty says whether nothing differs.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Modified)+len(c.Deleted) == 0 }

// All answers every object named, sorted.
func (c Changes) All() []string {
	out := append(append(append([]string(nil), c.Added...), c.Modified...), c.Deleted...)
	sort.Strings(out)
	return out
}

func (c Changes) String() string {
	var parts []string
	for _, name := range c.Modified {
		parts = append(parts, name+" ("+c.Why[name]+")")
	}
	return fmt.Sprintf("added %v, modified [%s], deleted %v", c.Added, strings.Join(parts, "; "), c.Deleted)
}

// Diff answers what differs from before to after. withState counts a
// change of state (Touched, Invalid) as a modification: a rollback must
// restore it; a change report is about values.
func Diff(before, after Dump, withState bool) Changes {
	c := Changes{Why: map[string]string{}}
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			c.Added = append(c.Added, name)
			continue
		}
		if why := Difference(b, a, withState); why != "" {
			c.Modified = append(c.Modified, name)
			c.Why[name] = why
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			c.Deleted = append(c.Deleted, name)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Modified)
	sort.Strings(c.Deleted)
	return c
}

// sorted answers a sorted copy.
func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// CheckChanges compares what the runtime said changed with what did, and
// answers each discrepancy: a phantom, a miss, or an object in two sets.
func CheckChanges(got *hostv1.Changes, want Changes) []string {
	var out []string
	sets := []struct {
		word      string
		got, want []string
	}{{"added", got.GetAdded(), want.Added}, {"modified", got.GetModified(), want.Modified},
		{"deleted", got.GetDeleted(), want.Deleted}}
	seen := map[string]string{}
	for _, s := range sets {
		for _, name := range s.got {
			if other, ok := seen[name]; ok {
				out = append(out, fmt.Sprintf("%s is both %s and %s", name, other, s.word))
			}
			seen[name] = s.word
		}
		if g, w := sorted(s.got), s.want; !slices.Equal(g, w) {
			out = append(out, fmt.Sprintf("%s: runtime said %v, the document says %v", s.word, g, w))
		}
	}
	return out
}

// CheckReport compares a change report with what changed: each element
// named under the change it had, helpers and elements adding up to the
// number of objects of each change, and no helper kind that is only a
// FreeCAD type ("... object").
func CheckReport(r *hostv1.ChangeReport, want Changes) []string {
	var out []string
	wantBy := map[hostv1.ChangeKind][]string{hostv1.ChangeKind_CHANGE_KIND_ADDED: want.Added,
		hostv1.ChangeKind_CHANGE_KIND_MODIFIED: want.Modified, hostv1.ChangeKind_CHANGE_KIND_DELETED: want.Deleted}
	counted := map[hostv1.ChangeKind]int{}
	for _, e := range r.GetElements() {
		counted[e.GetChange()]++
		if !slices.Contains(wantBy[e.GetChange()], e.GetName()) {
			out = append(out, fmt.Sprintf("report names %s %s (%s), which the document does not say", e.GetChange(),
				e.GetName(), e.GetCategory()))
		}
	}
	for _, h := range r.GetHelpers() {
		counted[h.GetChange()] += int(h.GetCount())
		if FallbackKind(h.GetKind()) {
			out = append(out, fmt.Sprintf("report counts %d %s of a fallback kind %q", h.GetCount(), h.GetChange(), h.GetKind()))
		}
	}
	for kind, names := range wantBy {
		if counted[kind] != len(names) {
			out = append(out, fmt.Sprintf("report counts %d %s, the document says %d %v", counted[kind],
				strings.TrimPrefix(kind.String(), "CHANGE_KIND_"), len(names), names))
		}
	}
	return out
}

// FallbackKind says whether a helper kind only repeats a FreeCAD type.
func FallbackKind(kind string) bool {
	return strings.HasSuffix(kind, " object") || strings.Contains(kind, "::")
}

// CheckRollback holds a rollback to its promise: the document exactly as
// before (state included) and the result saying so, or the result saying it
// is not exact and naming every object that differs.
func CheckRollback(res *hostv1.HostResult, before, after Dump) []string {
	diff := Diff(before, after, true)
	said := res.GetRollback()
	switch {
	case diff.Empty() && said == hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT:
		return nil
	case diff.Empty():
		return []string{fmt.Sprintf("the document is exactly as before but the result says %s %v", said,
			res.GetRollbackDifferences())}
	case said != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_NOT_EXACT:
		return []string{fmt.Sprintf("the result says %s but the document differs: %s", said, diff)}
	}
	var out []string
	named := strings.Join(res.GetRollbackDifferences(), "\n")
	for _, name := range diff.All() {
		if !strings.Contains(named, name) {
			out = append(out, fmt.Sprintf("not exact, but %s is not named among the differences %v (it differs: %s)",
				name, res.GetRollbackDifferences(), diff.Why[name]))
		}
	}
	return out
}
