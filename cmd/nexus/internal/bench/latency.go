package bench

import (
	"slices"
	"time"
)

// Latency figures of one level. Each path's own chunk latency is its
// receipt of a stamped delta minus the vendor's send stamp on it, one clock
// for both. What a path adds is read per chunk, never as one distribution's
// percentile minus another's (which can show a p50 above its p99): the k-th
// stamped delta of a stream through the path is paired with the k-th of the
// stream read straight from the vendor at the same time, and the added
// figures are percentiles of those differences. A mesh stream carries a
// second turn after its tool call, which the direct stream does not; its
// deltas are paired with the direct stream's from its start again.

// setLatencies fills l's latency figures from the streams read through the
// path (via) and those read straight from the vendor beside them (direct),
// stream i of one beside stream i of the other; via holds only streams that
// ended well.
func (l *Level) setLatencies(via, direct []sample) {
	var viaLat, directLat, added, viaFirst, directFirst, addedFirst []time.Duration
	for i, v := range via {
		d := direct[i]
		viaLat = append(viaLat, v.chunkLatency...)
		directLat = append(directLat, d.chunkLatency...)
		if len(d.chunkLatency) > 0 {
			for k, lat := range v.chunkLatency {
				added = append(added, lat-d.chunkLatency[k%len(d.chunkLatency)])
			}
		}
		if v.firstChunk > 0 {
			viaFirst = append(viaFirst, v.firstChunk)
		}
		if d.firstChunk > 0 {
			directFirst = append(directFirst, d.firstChunk)
		}
		if v.firstChunk > 0 && d.firstChunk > 0 {
			addedFirst = append(addedFirst, v.firstChunk-d.firstChunk)
		}
	}
	l.MeshChunkLatencyMs, l.DirectChunkLatencyMs = percentiles(viaLat), percentiles(directLat)
	l.AddedChunkLatencyMs = percentiles(added)
	l.MeshFirstChunkLatencyMs, l.DirectFirstChunkLatencyMs = percentiles(viaFirst), percentiles(directFirst)
	l.AddedFirstChunkLatencyMs = percentiles(addedFirst)
}

// percentiles reads p50, p99 and the maximum off one sorted distribution,
// so p50 <= p99 <= max whatever the samples.
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return Percentiles{P50: ms(s[len(s)/2]), P99: ms(s[min(len(s)-1, len(s)*99/100)]), Max: ms(s[len(s)-1])}
}
