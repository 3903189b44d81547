package rpc

// A stream whose messages carry several items (the model router's turn
// events, the orchestrator's run chunks, each keeping its own sequence
// number) is read by its receiver one item at a time, as if each had come
// alone.

// Headers the orchestrator sends on its run streams before anything else,
// read by the gateway: both sides spell them here.
const (
	// StreamOpenHeader says the caller may follow the run: sent as soon as
	// that is known, so a rejoin of a quiet run learns it at once.
	StreamOpenHeader = "x-nexus-stream"
	// BatchesHeader says the stream carries batches of chunks, which tells
	// a replica that serves them from one that answers Unimplemented.
	BatchesHeader = "x-nexus-batches"
)

// Unbatched reads a stream of batches M one item T at a time.
type Unbatched[M any, T any] struct {
	recv    func() (M, error)
	items   func(M) []T
	pending []T
}

// NewUnbatched reads recv's messages one item at a time; items answers a
// message's items.
func NewUnbatched[M any, T any](recv func() (M, error), items func(M) []T) *Unbatched[M, T] {
	return &Unbatched[M, T]{recv: recv, items: items}
}

// Recv returns the next item, reading the next message once the last one's
// items are used up.
func (u *Unbatched[M, T]) Recv() (T, error) {
	for len(u.pending) == 0 {
		m, err := u.recv()
		if err != nil {
			var zero T
			return zero, err
		}
		u.pending = u.items(m)
	}
	t := u.pending[0]
	u.pending = u.pending[1:]
	return t, nil
}

// Waiting is how many items of the last message are still to be read: they
// are read without waiting.
func (u *Unbatched[M, T]) Waiting() int { return len(u.pending) }
