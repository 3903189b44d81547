package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Hosts is the in-process state.Hosts, beside Store in nexus dev and tests.
type Hosts struct {
	now func() time.Time

	mu       sync.Mutex
	hosts    map[string]*agentv1.LinkedHost
	tokens   map[string]string // token digest -> host id
	presence map[string]presence
	logs     map[string]*hostLog
	watchers map[string]map[chan struct{}]struct{}
	pairings map[string]*state.Pairing // device digest -> pairing
	codes    map[string]string         // user code -> device digest
	attempts map[string]attempts
}

type presence struct {
	conn    string
	expires time.Time
}

type hostLog struct {
	next  int64
	calls []*agentv1.HostCall
}

type attempts struct {
	n     int
	until time.Time
}

// NewHosts returns an empty in-process host registry.
func NewHosts(now func() time.Time) *Hosts {
	if now == nil {
		now = time.Now
	}
	return &Hosts{
		now: now, hosts: map[string]*agentv1.LinkedHost{}, tokens: map[string]string{}, presence: map[string]presence{},
		logs: map[string]*hostLog{}, watchers: map[string]map[chan struct{}]struct{}{}, pairings: map[string]*state.Pairing{},
		codes: map[string]string{}, attempts: map[string]attempts{},
	}
}

var _ state.Hosts = (*Hosts)(nil)

// CreateHost stores a new host.
func (s *Hosts) CreateHost(_ context.Context, h *agentv1.LinkedHost, tokenDigest string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hosts[h.GetHostId()]; ok {
		return state.ErrConflict
	}
	s.hosts[h.GetHostId()] = proto.Clone(h).(*agentv1.LinkedHost)
	s.tokens[tokenDigest] = h.GetHostId()
	return nil
}

// HostByToken finds a host by its token's digest.
func (s *Hosts) HostByToken(_ context.Context, tokenDigest string) (*agentv1.LinkedHost, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.tokens[tokenDigest]
	if !ok {
		return nil, state.ErrNotFound
	}
	return s.withPresenceLocked(id)
}

// GetHost returns a host with its presence.
func (s *Hosts) GetHost(_ context.Context, hostID string) (*agentv1.LinkedHost, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.withPresenceLocked(hostID)
}

func (s *Hosts) withPresenceLocked(id string) (*agentv1.LinkedHost, error) {
	h, ok := s.hosts[id]
	if !ok {
		return nil, state.ErrNotFound
	}
	out := proto.Clone(h).(*agentv1.LinkedHost)
	p, ok := s.presence[id]
	out.Online = ok && s.now().Before(p.expires)
	if out.Online {
		out.OfflineSince = nil
	} else if ok && out.GetOfflineSince() == nil {
		// The link's replica went away without closing it: offline since
		// its presence lapsed.
		out.OfflineSince = timestamppb.New(p.expires)
	}
	return out, nil
}

// UpdateHost applies fn atomically.
func (s *Hosts) UpdateHost(_ context.Context, hostID string, fn func(*agentv1.LinkedHost) error) (*agentv1.LinkedHost, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.hosts[hostID]
	if !ok {
		return nil, state.ErrNotFound
	}
	next := proto.Clone(h).(*agentv1.LinkedHost)
	if err := fn(next); err != nil {
		return nil, err
	}
	next.Online = false
	s.hosts[hostID] = next
	return s.withPresenceLocked(hostID)
}

// ListHosts returns the owner's hosts, oldest first.
func (s *Hosts) ListHosts(_ context.Context, owner string) ([]*agentv1.LinkedHost, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*agentv1.LinkedHost
	for id, h := range s.hosts {
		if h.GetOwner() == owner {
			got, _ := s.withPresenceLocked(id)
			out = append(out, got)
		}
	}
	slices.SortFunc(out, func(a, b *agentv1.LinkedHost) int {
		return cmp.Or(a.GetCreateTime().AsTime().Compare(b.GetCreateTime().AsTime()), cmp.Compare(a.GetHostId(), b.GetHostId()))
	})
	return out, nil
}

// RevokeHost removes the host and wakes its links.
func (s *Hosts) RevokeHost(_ context.Context, hostID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.hosts, hostID)
	for d, id := range s.tokens {
		if id == hostID {
			delete(s.tokens, d)
		}
	}
	delete(s.presence, hostID)
	delete(s.logs, hostID)
	s.kickLocked(hostID)
	return nil
}

// SetOnline records an open link.
func (s *Hosts) SetOnline(_ context.Context, hostID, connID string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.hosts[hostID]
	if !ok {
		return state.ErrNotFound
	}
	old, had := s.presence[hostID]
	s.presence[hostID] = presence{conn: connID, expires: s.now().Add(ttl)}
	h.OfflineSince = nil
	if had && old.conn != connID && s.now().Before(old.expires) {
		s.kickLocked(hostID)
	}
	return nil
}

// RenewOnline extends a link's presence while it is the live one.
func (s *Hosts) RenewOnline(_ context.Context, hostID, connID string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hosts[hostID]; !ok {
		return state.ErrNotFound
	}
	if p, ok := s.presence[hostID]; ok && p.conn != connID && s.now().Before(p.expires) {
		return state.ErrLeaseLost
	}
	s.presence[hostID] = presence{conn: connID, expires: s.now().Add(ttl)}
	return nil
}

// LinkConn answers the live link of a host.
func (s *Hosts) LinkConn(_ context.Context, hostID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.presence[hostID]; ok && s.now().Before(p.expires) {
		return p.conn, nil
	}
	return "", nil
}

// SetOffline records a closed link unless a newer one is open.
func (s *Hosts) SetOffline(_ context.Context, hostID, connID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.presence[hostID]
	if !ok || p.conn != connID {
		return nil
	}
	delete(s.presence, hostID)
	if h, ok := s.hosts[hostID]; ok {
		h.OfflineSince = timestamppb.New(s.now())
	}
	return nil
}

// Offer appends a call unless the log holds it.
func (s *Hosts) Offer(_ context.Context, key string, c *agentv1.HostCall) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[key]
	if l == nil {
		l = &hostLog{}
		s.logs[key] = l
	}
	for _, x := range l.calls {
		if x.GetSessionId() == c.GetSessionId() && x.GetToolCall().GetToolCallId() == c.GetToolCall().GetToolCallId() {
			return x.GetSeq(), nil
		}
	}
	l.next++
	stored := proto.Clone(c).(*agentv1.HostCall)
	stored.Seq = l.next
	l.calls = append(l.calls, stored)
	s.kickLocked(key)
	return stored.GetSeq(), nil
}

// Ack removes a call.
func (s *Hosts) Ack(_ context.Context, key, sessionID, toolCallID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.logs[key]; l != nil {
		l.calls = slices.DeleteFunc(l.calls, func(x *agentv1.HostCall) bool {
			return x.GetSessionId() == sessionID && x.GetToolCall().GetToolCallId() == toolCallID
		})
	}
	return nil
}

// Calls returns a log's calls in seq order.
func (s *Hosts) Calls(_ context.Context, key string) ([]*agentv1.HostCall, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[key]
	if l == nil {
		return nil, nil
	}
	out := make([]*agentv1.HostCall, 0, len(l.calls))
	for _, c := range l.calls {
		out = append(out, proto.Clone(c).(*agentv1.HostCall))
	}
	return out, nil
}

// Watch wakes on every change of the log key.
func (s *Hosts) Watch(_ context.Context, key string) (<-chan struct{}, func(), error) {
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	s.mu.Lock()
	if s.watchers[key] == nil {
		s.watchers[key] = map[chan struct{}]struct{}{}
	}
	s.watchers[key][ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers[key], ch)
		if len(s.watchers[key]) == 0 {
			delete(s.watchers, key)
		}
	}, nil
}

func (s *Hosts) kickLocked(key string) {
	for ch := range s.watchers[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// StartPairing stores a pairing.
func (s *Hosts) StartPairing(_ context.Context, p *state.Pairing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	if _, ok := s.codes[p.UserCode]; ok {
		return state.ErrConflict
	}
	c := *p
	s.pairings[p.DeviceDigest] = &c
	s.codes[p.UserCode] = p.DeviceDigest
	return nil
}

func (s *Hosts) pruneLocked() {
	now := s.now()
	for d, p := range s.pairings {
		if !now.Before(p.Expires) {
			delete(s.pairings, d)
			delete(s.codes, p.UserCode)
		}
	}
	for k, a := range s.attempts {
		if !now.Before(a.until) {
			delete(s.attempts, k)
		}
	}
}

// ApprovePairing approves an open pairing.
func (s *Hosts) ApprovePairing(_ context.Context, userCode string, fn func(*state.Pairing) error) (*state.Pairing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	p, ok := s.pairings[s.codes[userCode]]
	if !ok || p.HostID != "" {
		return nil, state.ErrNotFound
	}
	next := *p
	if err := fn(&next); err != nil {
		return nil, err
	}
	*p = next
	out := next
	return &out, nil
}

// ClaimPairing returns a pairing, removing an approved one.
func (s *Hosts) ClaimPairing(_ context.Context, deviceDigest string) (*state.Pairing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	p, ok := s.pairings[deviceDigest]
	if !ok {
		return nil, state.ErrNotFound
	}
	out := *p
	if p.HostID != "" {
		delete(s.pairings, deviceDigest)
		delete(s.codes, p.UserCode)
	}
	return &out, nil
}

// Attempts answers the attempts in key's current window.
func (s *Hosts) Attempts(_ context.Context, key string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.attempts[key]
	if !s.now().Before(a.until) {
		return 0, nil
	}
	return a.n, nil
}

// CountAttempt counts an attempt in its window.
func (s *Hosts) CountAttempt(_ context.Context, key string, window time.Duration) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	a := s.attempts[key]
	if !now.Before(a.until) {
		a = attempts{until: now.Add(window)}
	}
	a.n++
	s.attempts[key] = a
	return a.n, nil
}
