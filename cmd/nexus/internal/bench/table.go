package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// The level tables: latency of every chunk, of the first chunk and of the
// rendezvous, then what a chunk costs. Every p50, p99 and max in a row is
// read off one distribution, so none exceeds the next.

// row is one level with the label it is printed under.
type row struct {
	label string
	l     Level
	// reference says the level is nginx's or the floor's, which have no
	// rendezvous and whose services the bench does not count.
	reference bool
}

// rows are the mesh's levels, then the references'.
func (r *Report) rows() []row {
	var out []row
	for _, l := range r.Levels {
		out = append(out, row{label: l.Store, l: l})
	}
	for _, ref := range r.references() {
		label := " (reference)"
		if ref == r.Floor {
			label = " (hops only)"
		}
		for _, l := range ref.Levels {
			out = append(out, row{label: l.Store + label, l: l, reference: true})
		}
	}
	return out
}

func pct(p Percentiles) string { return fmt.Sprintf("%.2f\t%.2f\t%.2f", p.P50, p.P99, p.Max) }

// writeLevels prints the level tables.
func (r *Report) writeLevels(w io.Writer) {
	rows := r.rows()
	fmt.Fprintln(w, "chunk latency, ms: receipt of a stamped delta minus the vendor's send stamp on it; path = the mesh (or the reference), direct = the vendor read straight beside it in the same run")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tstreams\tchunks\tpath p50\tp99\tmax\tdirect p50\tp99\tmax\tadded p50\tp99\tmax\terrors\t")
	for _, x := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%d\t\n", x.label, x.l.Streams, x.l.Chunks,
			pct(x.l.MeshChunkLatencyMs), pct(x.l.DirectChunkLatencyMs), pct(x.l.AddedChunkLatencyMs), x.l.Errors)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "added = per chunk, the path's latency minus that of the same delta read directly; percentiles of those differences (a small negative figure is noise between the two readings)")

	fmt.Fprintln(w, "first chunk, ms: request to the first stamped delta; added per stream. rendezvous, ms: a courier's result POST to the vendor's next request")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tstreams\tfirst path p50\tp99\tmax\tfirst direct p50\tp99\tmax\tfirst added p50\tp99\tmax\trendezvous p50\tp99\tmax\t")
	for _, x := range rows {
		rv := pct(x.l.RendezvousMs)
		if x.reference {
			rv = "-\t-\t-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", x.label, x.l.Streams,
			pct(x.l.MeshFirstChunkLatencyMs), pct(x.l.DirectFirstChunkLatencyMs), pct(x.l.AddedFirstChunkLatencyMs), rv)
	}
	_ = tw.Flush()

	fmt.Fprintln(w, "cost per chunk: CPU of the path's processes, as a multiple of the floor's at the same streams; messages per chunk at each of the mesh's hops (the floor sends one per chunk at each of its hops)")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tstreams\tCPU µs/chunk\tx floor\trouter->orchestrator\torchestrator->gateway\tSSE writes\tstore appends\t")
	for _, x := range rows {
		multiple, hops := "-", "-\t-\t-\t-"
		if x.l.CPUFloorMultiple > 0 {
			multiple = fmt.Sprintf("%.2fx", x.l.CPUFloorMultiple)
		}
		if h := x.l.MessagesPerChunk; h != nil {
			hops = fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f", h.RouterToOrchestrator, h.OrchestratorToGateway, h.SSEWrites, h.StoreAppends)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t\n", x.label, x.l.Streams, x.l.CPUMicrosPerChunk, multiple, hops)
	}
	_ = tw.Flush()
}

// relateToFloor sets each level's CPU per chunk as a multiple of the
// floor's at the same concurrency.
func (r *Report) relateToFloor() {
	if r.Floor == nil {
		return
	}
	floor := map[int]float64{}
	for _, f := range r.Floor.Levels {
		floor[f.Streams] = f.CPUMicrosPerChunk
	}
	set := func(levels []Level) {
		for i := range levels {
			if f := floor[levels[i].Streams]; f > 0 {
				levels[i].CPUFloorMultiple = levels[i].CPUMicrosPerChunk / f
			}
		}
	}
	set(r.Levels)
	set(r.Floor.Levels)
	if r.Reference != nil {
		set(r.Reference.Levels)
	}
}
