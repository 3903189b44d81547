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

// Links is the live host link open on this replica, by host id: one per
// host, the newest (an older one is superseded and closes).
type Links struct {
	mu    sync.Mutex
	links map[string]chan *agentv1.HostCall
}

// Open registers a link of hostID, in place of any older one here, and
// returns the calls handed to it and the function that unregisters it.
func (l *Links) Open(hostID string) (<-chan *agentv1.HostCall, func()) {
	ch := make(chan *agentv1.HostCall, localLinkQueue)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.links == nil {
		l.links = map[string]chan *agentv1.HostCall{}
	}
	l.links[hostID] = ch
	return ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.links[hostID] == ch {
			delete(l.links, hostID)
		}
	}
}

// Hand gives c, already in hostID's delivery log under c's seq, to the live
// link of hostID if it is open here, without waiting for it.
func (l *Links) Hand(hostID string, c *agentv1.HostCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, ok := l.links[hostID]; ok {
		select {
		case ch <- c:
		default:
		}
	}
}
