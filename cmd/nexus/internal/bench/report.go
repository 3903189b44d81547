package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as the table the README and closing notes use.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "nexus bench on %s: %s %s/%s, %d cores, %s\n", r.Machine, r.GoVersion, r.OS, r.Arch, r.Cores, settings(r.Settings))
	r.writeLevels(w)
	for _, l := range r.Levels {
		if l.Trace != nil {
			writeTrace(w, l)
		}
	}
	r.writeRatios(w)
	for _, s := range r.Stores {
		heap := fmt.Sprintf("%.0f B", s.HeapPerSuspendedRunBytes)
		if s.HeapNote != "" {
			heap = "unavailable (" + s.HeapNote + ")"
		}
		fmt.Fprintf(w, "%s: rendezvous p50 %.2f ms, p99 %.2f ms; heap per suspended run %s; sustained streams %d\n",
			s.Name, s.RendezvousMs.P50, s.RendezvousMs.P99, heap, s.SustainedStreams)
	}
	if len(r.HostLink) > 0 {
		fmt.Fprintln(w, "host-link delivery (call written to the host's log -> the host reading it off its link stream):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "store\tlinked hosts\tcalls\tcalls/s\tdelivery p50 ms\tp99 ms\tmax ms\terrors\t")
		for _, l := range r.HostLink {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%d\t\n", l.Store, l.Hosts, l.Calls, l.CallsPerSecond, l.DeliveryMs.P50, l.DeliveryMs.P99, l.DeliveryMs.Max, l.Errors)
		}
		_ = tw.Flush()
		for _, l := range r.HostLink {
			if l.FirstError != "" {
				fmt.Fprintf(w, "%s, %d hosts: %s\n", l.Store, l.Hosts, l.FirstError)
			}
		}
	}
	if len(r.CacheReadShare) > 0 {
		parts := make([]string, len(r.CacheReadShare))
		for i, sh := range r.CacheReadShare {
			parts[i] = fmt.Sprintf("%.2f", sh)
		}
		fmt.Fprintf(w, "cache-read share of input tokens per turn: %s; from turn 3 on: %.3f\n", strings.Join(parts, " "), r.CacheReadShareFromTurn3)
	}
}

// references are the reference proxy and the floor, those that ran.
func (r *Report) references() []*Reference {
	var out []*Reference
	for _, ref := range []*Reference{r.Reference, r.Floor} {
		if ref != nil {
			out = append(out, ref)
		}
	}
	return out
}

// writeRatios prints, at each concurrency, the mesh's CPU per chunk (and the
// floor's) as a multiple of the reference proxy's, and what the mesh spends
// above the floor, which is its own work.
func (r *Report) writeRatios(w io.Writer) {
	if r.Reference != nil {
		fmt.Fprintf(w, "reference: %s %s, one hop, proxy_buffering off\n", r.Reference.Name, r.Reference.Version)
	}
	var floor []Level
	if r.Floor != nil {
		floor = r.Floor.Levels
		fmt.Fprintf(w, "floor: the mesh's hops with none of its work (vendor stream in, two gRPC streams over mutual TLS, server-sent events out; %s)\n", r.Floor.Version)
	}
	if r.Reference != nil {
		for _, ref := range r.Reference.Levels {
			fmt.Fprint(w, cpuRatios(fmt.Sprintf("CPU per chunk at %d streams as a multiple of %s's", ref.Streams, r.Reference.Name), ref, append(slices.Clone(r.Levels), floor...), false))
		}
	}
	for _, f := range floor {
		fmt.Fprint(w, cpuRatios(fmt.Sprintf("CPU per chunk at %d streams above the floor's %.1f µs", f.Streams, f.CPUMicrosPerChunk), f, r.Levels, true))
	}
}

// cpuRatios is one line of the levels at base's concurrency, each level's
// CPU per chunk as a multiple of base's (and, with above, first what it
// spends above base), or nothing when no level ran at that concurrency.
func cpuRatios(title string, base Level, levels []Level, above bool) string {
	var parts []string
	for _, l := range levels {
		if l.Streams != base.Streams || base.CPUMicrosPerChunk <= 0 {
			continue
		}
		ratio := l.CPUMicrosPerChunk / base.CPUMicrosPerChunk
		if above {
			parts = append(parts, fmt.Sprintf("%s %.1f µs (%.1fx)", l.Store, l.CPUMicrosPerChunk-base.CPUMicrosPerChunk, ratio))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.1fx", l.Store, ratio))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return title + ": " + strings.Join(parts, ", ") + "\n"
}

func settings(m map[string]string) string {
	var parts []string
	for _, k := range []string{"rate_per_stream", "concurrency", "suspended_runs", "max_streams", "cache_turns", "hosts", "host_calls", "host_call_rate", "reference", "floor"} {
		if v, ok := m[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// WriteSVG draws added chunk latency (p50 and p99) against the number of
// concurrent streams, one pair of lines per state store, labelled with the
// machine it ran on.
func (r *Report) WriteSVG(w io.Writer) error {
	const width, height, left, right, top, bottom = 720, 420, 70, 170, 50, 60
	var xs []int
	maxY := 1.0
	series := map[string][]Level{}
	var stores []string
	levels := slices.Clone(r.Levels)
	for _, ref := range r.references() {
		levels = append(levels, ref.Levels...)
	}
	for _, l := range levels {
		if _, ok := series[l.Store]; !ok {
			stores = append(stores, l.Store)
		}
		series[l.Store] = append(series[l.Store], l)
		maxY = max(maxY, l.AddedChunkLatencyMs.P99, l.AddedChunkLatencyMs.P50)
		found := false
		for _, x := range xs {
			found = found || x == l.Streams
		}
		if !found {
			xs = append(xs, l.Streams)
		}
	}
	if len(xs) == 0 {
		return fmt.Errorf("bench: nothing to draw")
	}
	px := func(streams int) float64 {
		for i, x := range xs {
			if x == streams {
				if len(xs) == 1 {
					return left + float64(width-left-right)/2
				}
				return left + float64(i)*float64(width-left-right)/float64(len(xs)-1)
			}
		}
		return left
	}
	py := func(ms float64) float64 { return top + (1-max(ms, 0)/maxY)*float64(height-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">Latency the mesh adds per chunk (nexus bench)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555">%s, %d cores, %s, %s deltas/s per stream</text>`+"\n", left, r.Machine, r.Cores, r.GoVersion, r.Settings["rate_per_stream"])
	if cpu := cpuLine(levels, xs[len(xs)-1]); cpu != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">CPU per chunk at %d streams: %s</text>`+"\n", left, height-6, xs[len(xs)-1], cpu)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-bottom)
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left-6, py(v)+4, v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(v), width-right, py(v))
	}
	for _, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px(x), height-bottom+18, x)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">concurrent streams</text>`+"\n", (left+width-right)/2, height-bottom+40)
	fmt.Fprintf(&b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">added ms</text>`+"\n", (top+height-bottom)/2, (top+height-bottom)/2)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

	legend := top
	for i, store := range stores {
		for _, q := range []struct {
			name string
			get  func(Level) float64
			dash string
		}{{"p50", func(l Level) float64 { return l.AddedChunkLatencyMs.P50 }, ""}, {"p99", func(l Level) float64 { return l.AddedChunkLatencyMs.P99 }, ` stroke-dasharray="6 4"`}} {
			var pts []string
			for _, l := range series[store] {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l.Streams), py(q.get(l))))
			}
			c := colors[i%len(colors)]
			switch {
			case r.Reference != nil && store == r.Reference.Name:
				c = "#7f7f7f"
			case r.Floor != nil && store == r.Floor.Name:
				c = "#b8b8b8"
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, q.dash, strings.Join(pts, " "))
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", width-right+12, legend, width-right+40, legend, c, q.dash)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s %s</text>`+"\n", width-right+46, legend+4, store, q.name)
			legend += 18
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cpuLine lists each store's CPU per chunk at one concurrency.
func cpuLine(levels []Level, streams int) string {
	var parts []string
	for _, l := range levels {
		if l.Streams == streams && l.CPUMicrosPerChunk > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f µs", l.Store, l.CPUMicrosPerChunk))
		}
	}
	return strings.Join(parts, ", ")
}
