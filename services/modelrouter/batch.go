package modelrouter

import (
	"sync"

	modelv1 "nexus.local/gen/nexus/model/v1"
)

// batcher sends a turn's events on a goroutine of its own. Whatever the
// turn produced while the last message was being sent goes as the next one,
// so under load several events share one message's cost; nothing waits for
// company, so an event produced while the sender is idle leaves at once,
// alone.
type batcher struct {
	send func([]*modelv1.StreamTurnResponse) error

	mu      sync.Mutex
	waiting []*modelv1.StreamTurnResponse
	closing bool
	// err is the send that failed; later events are refused with it.
	err error
	// wake holds one signal: events are waiting, or the turn ended.
	wake chan struct{}
	done chan struct{}
}

func newBatcher(send func([]*modelv1.StreamTurnResponse) error) *batcher {
	b := &batcher{send: send, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go b.loop()
	return b
}

// add queues ev behind the events already waiting; it fails once a send
// has failed, so the turn stops producing for a stream that is gone.
func (b *batcher) add(ev *modelv1.StreamTurnResponse) error {
	b.mu.Lock()
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return err
	}
	b.waiting = append(b.waiting, ev)
	b.mu.Unlock()
	b.signal()
	return nil
}

func (b *batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// loop sends what is waiting, all of it as one message, until the turn
// ended and nothing is left.
func (b *batcher) loop() {
	defer close(b.done)
	for range b.wake {
		for {
			b.mu.Lock()
			events, closing := b.waiting, b.closing
			b.waiting = nil
			b.mu.Unlock()
			if len(events) == 0 {
				if closing {
					return
				}
				break
			}
			if err := b.send(events); err != nil {
				b.mu.Lock()
				b.err = err
				b.mu.Unlock()
				return
			}
		}
	}
}

// close sends what is still waiting and stops the sender; it returns the
// send that failed, if one did.
func (b *batcher) close() error {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.signal()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
