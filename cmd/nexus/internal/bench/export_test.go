package bench

import "time"

// LevelFromLatencies is a level whose latency figures come from streams
// given as their chunk latencies, read through a path (via) and straight
// from the vendor (direct), stream i beside stream i; each stream's first
// chunk is its first latency.
func LevelFromLatencies(store string, via, direct [][]time.Duration) Level {
	l := Level{Store: store, Streams: len(via)}
	samples := func(in [][]time.Duration) []sample {
		out := make([]sample, len(in))
		for i, lat := range in {
			out[i] = sample{chunkLatency: lat, chunks: len(lat)}
			if len(lat) > 0 {
				out[i].firstChunk = lat[0]
			}
		}
		return out
	}
	v := samples(via)
	for _, s := range v {
		l.Chunks += s.chunks
	}
	l.setLatencies(v, samples(direct))
	return l
}
