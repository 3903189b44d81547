package bench_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"nexus.local/cmd/nexus/internal/bench"
)

// tableOrder checks every table the bench printed: in each row, a p50 is
// not above the p99 beside it, nor a p99 above the max beside it. It
// returns what it found wrong and how many p50-p99 groups it checked.
func tableOrder(table string) (wrong []string, groups int) {
	var header []string
	for _, line := range strings.Split(table, "\n") {
		cells := splitCells(line)
		if hasP50(cells) {
			header = cells
			continue
		}
		if header == nil || len(cells) != len(header) {
			header = nil
			continue
		}
		for i, h := range header {
			if !strings.Contains(h, "p50") || i+1 >= len(header) || !strings.HasPrefix(header[i+1], "p99") {
				continue
			}
			p50, ok50 := number(cells[i])
			p99, ok99 := number(cells[i+1])
			if !ok50 || !ok99 {
				continue
			}
			groups++
			if p50 > p99 {
				wrong = append(wrong, "p50 above p99 under "+h+": "+line)
			}
			if i+2 < len(header) && strings.HasPrefix(header[i+2], "max") {
				if max, ok := number(cells[i+2]); ok && p99 > max {
					wrong = append(wrong, "p99 above max under "+h+": "+line)
				}
			}
		}
	}
	return wrong, groups
}

// splitCells splits a printed table row into its cells: tabwriter leaves at
// least two spaces between cells, and a cell holds single spaces at most.
func splitCells(line string) []string {
	var out []string
	for _, c := range strings.Split(strings.TrimSpace(line), "  ") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

func hasP50(cells []string) bool {
	for _, c := range cells {
		if strings.Contains(c, "p50") {
			return true
		}
	}
	return false
}

func number(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// TestTableOrderFindsAnInversion: the check reads a p50 above its p99 in a
// printed table, so that its silence over the bench's tables means
// something.
func TestTableOrderFindsAnInversion(t *testing.T) {
	table := "  store  streams  added p50  p99  max\n  redis      200      20.20  15.40  40.00\n  nginx      200       0.10   0.90   0.50\n"
	wrong, groups := tableOrder(table)
	if groups != 2 || len(wrong) != 2 {
		t.Errorf("checked %d groups and found %q; want 2 groups, both wrong", groups, wrong)
	}
}

// TestAddedLatencyCannotInvert: streams through a path all take 25 ms a
// chunk, while the streams read directly beside them take 5 ms but for a
// tail of 15 ms. One distribution's p50 minus the other's reads 20 ms at
// p50 and 10 ms at p99; added per chunk, it reads in order, and no table
// the bench prints shows a p50 above its p99 or a p99 above its max.
func TestAddedLatencyCannotInvert(t *testing.T) {
	var via, direct [][]time.Duration
	for i := range 100 {
		v, d := make([]time.Duration, 30), make([]time.Duration, 30)
		for k := range v {
			v[k], d[k] = 25*time.Millisecond, 5*time.Millisecond
			if (i*30+k)%25 == 0 {
				d[k] = 15 * time.Millisecond
			}
		}
		via, direct = append(via, v), append(direct, d)
	}
	l := bench.LevelFromLatencies("redis", via, direct)
	a := l.AddedChunkLatencyMs
	if a.P50 > a.P99 || a.P99 > a.Max || a.Max != 20 || a.P50 != 20 {
		t.Errorf("added chunk latency %+v, want p50 20 <= p99 <= max 20", a)
	}
	if l.MeshChunkLatencyMs.P50 != 25 || l.DirectChunkLatencyMs.P99 != 15 {
		t.Errorf("own latencies: path %+v, direct %+v; want 25 ms and a direct p99 of 15 ms", l.MeshChunkLatencyMs, l.DirectChunkLatencyMs)
	}
	ref := l
	ref.Store = "nginx"
	floor := l
	floor.Store = "floor"
	rep := &bench.Report{Levels: []bench.Level{l}, Reference: &bench.Reference{Name: "nginx", Levels: []bench.Level{ref}}, Floor: &bench.Reference{Name: "floor", Levels: []bench.Level{floor}}}
	var table bytes.Buffer
	rep.WriteTable(&table)
	wrong, groups := tableOrder(table.String())
	if len(wrong) > 0 || groups < 3*6 {
		t.Errorf("the table shows %q (%d groups checked, want at least 18):\n%s", wrong, groups, table.String())
	}
}
