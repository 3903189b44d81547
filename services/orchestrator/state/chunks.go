package state

import agentv1 "nexus.local/gen/nexus/agent/v1"

// EachChunk adapts fn, which takes one chunk, to Events.Follow, which hands
// over the chunks read together: fn gets them one at a time, in order, and
// its first error stops the follow.
func EachChunk(fn func(*agentv1.StreamChunk) error) func([]*agentv1.StreamChunk) error {
	return func(cs []*agentv1.StreamChunk) error {
		for _, c := range cs {
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}
}
