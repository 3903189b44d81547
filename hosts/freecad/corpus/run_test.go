package corpus_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/corpus"
)

// tally counts, per check and per plain or split case, how many passed.
type tally struct {
	mu     sync.Mutex
	passed map[string]int
	ran    map[string]int
}

func (s *tally) add(check string, c corpus.Case, problems []string) bool {
	key := check + " (plain)"
	if c.Split() {
		key = check + " (split)"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ran[key]++
	if len(problems) == 0 {
		s.passed[key]++
	}
	return len(problems) == 0
}

func (s *tally) String() string {
	keys := make([]string, 0, len(s.ran))
	for k := range s.ran {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-40s %d/%d\n", k, s.passed[k], s.ran[k])
	}
	return b.String()
}

// check records a check's problems and fails the case with them.
func check(t *testing.T, s *tally, name string, c corpus.Case, problems []string) {
	t.Helper()
	if !s.add(name, c, problems) {
		t.Errorf("%s: %s", name, strings.Join(problems, "; "))
	}
}

// TestCorpus runs every script of FreeCAD's Arch and Draft suites, plain and
// split, through the runtime: raised at the end and in the middle (rolled
// back exactly, or saying what is not, with the failing line right), as a
// preview (the document exactly as before, changes and report as the commit
// then has them) and committed (changes and report exactly what the dump
// says changed, no fallback kinds); after each, a no-op transaction must
// report nothing.
func TestCorpus(t *testing.T) {
	// Cases run on runtimes of their own, one case at a time on each: the
	// corpus reuses each runtime for every case it takes.
	hosts := make(chan *host, runtimes)
	for range runtimes {
		hosts <- newHost(t)
	}
	h := <-hosts
	c := load(t, h)
	hosts <- h
	s := &tally{passed: map[string]int{}, ran: map[string]int{}}
	cases := 0
	t.Run("cases", func(t *testing.T) {
		for _, script := range c.Scripts {
			for _, cs := range script.Cases() {
				cases++
				t.Run(cs.Name, func(t *testing.T) {
					t.Parallel()
					h := <-hosts
					defer func() { hosts <- h }()
					h.measure(t, cs, s)
				})
			}
		}
	})
	t.Logf("%d scripts, %d cases (%d skipped):\n%s", len(c.Scripts), cases, len(c.Skipped), s)
}

// runtimes is how many FreeCAD runtimes the corpus runs on side by side.
const runtimes = 2

func (h *host) measure(t *testing.T, c corpus.Case, s *tally) {
	h.reset(t)
	if c.Split() {
		res := h.run(t, hostv1.Mode_MODE_TRANSACTION, c.Setup)
		if res.GetError() != nil {
			t.Fatalf("the first part failed: %s: %s", res.GetError().GetType(), res.GetError().GetMessage())
		}
		if len(h.snapshot(t)) == 0 {
			t.Skip("the first part built nothing: not a split")
		}
	}
	for _, at := range []int{len(c.Measured), c.Middle()} {
		if at < 0 {
			continue
		}
		code, line := c.Code(at)
		before := h.snapshot(t)
		res := h.run(t, hostv1.Mode_MODE_TRANSACTION, code)
		after := h.snapshot(t)
		where := "raise at the end"
		if at < len(c.Measured) {
			where = "raise in the middle"
		}
		e := res.GetError()
		var wrong []string
		if e.GetType() != "RuntimeError" || !strings.HasPrefix(e.GetMessage(), "corpus: raised on purpose") || e.GetLine() != int32(line) {
			wrong = append(wrong, fmt.Sprintf("want RuntimeError at line %d, got %s at line %d: %s", line, e.GetType(), e.GetLine(), e.GetMessage()))
		}
		check(t, s, "failing line ("+where+")", c, wrong)
		check(t, s, "rollback ("+where+")", c, corpus.CheckRollback(res, before, after))
		h.noop(t, s, c, "after a "+where)
	}

	code, _ := c.Code(-1)
	before := h.snapshot(t)
	preview := h.run(t, hostv1.Mode_MODE_PREVIEW, code)
	after := h.snapshot(t)
	if e := preview.GetError(); e != nil {
		// The test fails in this FreeCAD of itself: what is left to hold the
		// runtime to is its rollback.
		t.Logf("the script fails of itself: %s: %s", e.GetType(), e.GetMessage())
		check(t, s, "rollback (the script's own error)", c, corpus.CheckRollback(preview, before, after))
		h.noop(t, s, c, "after the script's own error")
		return
	}
	check(t, s, "preview rollback", c, corpus.CheckRollback(preview, before, after))
	h.noop(t, s, c, "after a preview")

	before = h.snapshot(t)
	res := h.run(t, hostv1.Mode_MODE_TRANSACTION, code)
	if e := res.GetError(); e != nil || !res.GetCommitted() {
		t.Fatalf("the commit failed where the preview ran: %v", e)
	}
	after = h.snapshot(t)
	want := corpus.Diff(before, after, false)
	if e := res.GetEpilogue().GetError(); e != nil {
		t.Errorf("epilogue failed: %s: %s", e.GetType(), e.GetMessage())
	}
	check(t, s, "changes", c, corpus.CheckChanges(res.GetChanges(), want))
	check(t, s, "report", c, corpus.CheckReport(res.GetEpilogue().GetReport(), want))
	check(t, s, "preview changes", c, corpus.CheckChanges(preview.GetChanges(), want))
	check(t, s, "preview report", c, corpus.CheckReport(preview.GetEpilogue().GetReport(), want))
	h.noop(t, s, c, "after the commit")
}

// noop runs a transaction that changes nothing: its changes and report must
// be empty, whatever the run before left behind.
func (h *host) noop(t *testing.T, s *tally, c corpus.Case, after string) {
	t.Helper()
	res := h.run(t, hostv1.Mode_MODE_TRANSACTION, "pass")
	if res.GetError() != nil {
		t.Fatalf("a no-op transaction failed %s: %v", after, res.GetError())
	}
	none := corpus.Changes{}
	problems := append(corpus.CheckChanges(res.GetChanges(), none), corpus.CheckReport(res.GetEpilogue().GetReport(), none)...)
	check(t, s, "no-op "+after, c, problems)
}
