package hostlink

// This file hands a call straight to a host link open on this replica, once
// the call is in the host's delivery log, so the link sends it without
// waiting for the log's notification and reading the log back. The log
// stays the truth: a hand-off that finds the link's queue full is dropped,
// and the notification that follows every offer brings the call from the
// log as before.

import (
	"sync"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// localLinkQueue is how many handed calls a link holds before further ones
// wait for the log's notification; a host carries one call at a time, so a
// few is plenty.
const localLinkQueue = 8

// Links is the host links open on this replica, by host id.
type Links struct {
	mu    sync.Mutex
	links map[string]map[chan *agentv1.HostCall]struct{}
}

// Open registers a link of hostID and returns the calls handed to it and
// the function that unregisters it.
func (l *Links) Open(hostID string) (<-chan *agentv1.HostCall, func()) {
	ch := make(chan *agentv1.HostCall, localLinkQueue)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.links == nil {
		l.links = map[string]map[chan *agentv1.HostCall]struct{}{}
	}
	if l.links[hostID] == nil {
		l.links[hostID] = map[chan *agentv1.HostCall]struct{}{}
	}
	l.links[hostID][ch] = struct{}{}
	return ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.links[hostID], ch)
		if len(l.links[hostID]) == 0 {
			delete(l.links, hostID)
		}
	}
}

// Hand gives c, already in hostID's delivery log under c's seq, to every
// link of hostID open here, without waiting for any of them.
func (l *Links) Hand(hostID string, c *agentv1.HostCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.links[hostID] {
		select {
		case ch <- c:
		default:
		}
	}
}
