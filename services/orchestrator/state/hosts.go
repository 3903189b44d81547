package state

import (
	"context"
	"errors"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// Pairing is one host runtime's pairing in progress, by the device flow of
// RFC 8628: the runtime holds the device code (stored only as its digest),
// the person approves the user code, and the runtime claims the host token
// once.
type Pairing struct {
	// DeviceDigest is the sha256 of the device code, hex.
	DeviceDigest string `json:"deviceDigest"`
	// UserCode is the normalised user code (upper case, no dash).
	UserCode string `json:"userCode"`
	// Host is what the runtime said it serves.
	HostApp        string `json:"hostApp"`
	Document       string `json:"document"`
	RuntimeVersion string `json:"runtimeVersion"`
	HostVersion    string `json:"hostVersion"`
	// Machine is the name of the machine the runtime runs on.
	Machine string `json:"machine,omitempty"`
	// Started is when the runtime asked to be linked.
	Started time.Time `json:"started"`
	// Expires is when the codes stop working.
	Expires time.Time `json:"expires"`
	// Set by the approval: the new host and its token, kept until the
	// runtime claims it.
	Owner     string `json:"owner,omitempty"`
	HostID    string `json:"hostId,omitempty"`
	HostToken string `json:"hostToken,omitempty"`
}

// Hosts keeps the linked desktop hosts: who each belongs to, its token's
// digest, whether a link of it is open, each host's durable delivery log of
// calls without a result yet, and pairings in progress. A log is named by a
// key: a host id, or WaitingKey for the calls of sessions that wait for
// their owner's first host of an application.
type Hosts interface {
	// CreateHost stores a new linked host, found again by tokenDigest.
	CreateHost(ctx context.Context, h *agentv1.LinkedHost, tokenDigest string) error
	// HostByToken returns the host whose token has tokenDigest, or
	// ErrNotFound (also once it was revoked).
	HostByToken(ctx context.Context, tokenDigest string) (*agentv1.LinkedHost, error)
	// GetHost returns the host with its presence, or ErrNotFound.
	GetHost(ctx context.Context, hostID string) (*agentv1.LinkedHost, error)
	// UpdateHost applies fn to the stored host atomically.
	UpdateHost(ctx context.Context, hostID string, fn func(*agentv1.LinkedHost) error) (*agentv1.LinkedHost, error)
	// ListHosts returns the owner's hosts with their presence, oldest first.
	ListHosts(ctx context.Context, owner string) ([]*agentv1.LinkedHost, error)
	// RevokeHost removes the host, its token and its log, and wakes its
	// open links (Watch) so they end. A missing host is not an error.
	RevokeHost(ctx context.Context, hostID string) error
	// SetOnline records that the host's link connID is open, for ttl: the
	// newest link of a host is its one live link. When it takes over from
	// another link, it wakes the host's watchers (Watch), so the older
	// link learns it was superseded (LinkConn) and closes.
	SetOnline(ctx context.Context, hostID, connID string, ttl time.Duration) error
	// RenewOnline extends link connID's presence by ttl while it is the
	// host's live link (or none is); ErrLeaseLost when a newer link holds it.
	RenewOnline(ctx context.Context, hostID, connID string, ttl time.Duration) error
	// LinkConn answers the id of the host's live link, "" when none is open.
	LinkConn(ctx context.Context, hostID string) (string, error)
	// SetOffline records that link connID closed, unless another link of
	// the host opened since.
	SetOffline(ctx context.Context, hostID, connID string) error

	// Offer appends c to the log key, unless the log holds the same
	// session's call with that tool call id already, and answers the seq it
	// has there. It wakes the log's watchers.
	Offer(ctx context.Context, key string, c *agentv1.HostCall) (int64, error)
	// Ack removes the session's call from the log key; a missing one is no
	// error.
	Ack(ctx context.Context, key, sessionID, toolCallID string) error
	// Calls returns the calls of the log key, in seq order.
	Calls(ctx context.Context, key string) ([]*agentv1.HostCall, error)
	// Watch returns a channel that receives (coalesced) whenever the log
	// key grows or its host is revoked, and once after the watch starts;
	// stop releases it.
	Watch(ctx context.Context, key string) (kick <-chan struct{}, stop func(), err error)

	// StartPairing stores a new pairing until p.Expires; ErrConflict when
	// its user code is in use.
	StartPairing(ctx context.Context, p *Pairing) error
	// ApprovePairing applies fn to the unexpired, unapproved pairing of
	// userCode; ErrNotFound when there is none (unknown, expired, or
	// approved already).
	ApprovePairing(ctx context.Context, userCode string, fn func(*Pairing) error) (*Pairing, error)
	// ClaimPairing returns the pairing of deviceDigest; an approved one is
	// removed as it is returned, so its token is given out once.
	// ErrNotFound when unknown, expired or claimed.
	ClaimPairing(ctx context.Context, deviceDigest string) (*Pairing, error)
	// CountAttempt counts one attempt under key within a window that starts
	// with the first, and answers the attempts in it.
	CountAttempt(ctx context.Context, key string, window time.Duration) (int, error)
	// Attempts answers the attempts counted under key in its current
	// window, without counting one: 0 when none are.
	Attempts(ctx context.Context, key string) (int, error)
}

// EachHost answers the hosts of ids that still exist, in the order of ids,
// each read with get: a host revoked between the listing and the read is
// left out.
func EachHost(ctx context.Context, ids []string, get func(context.Context, string) (*agentv1.LinkedHost, error)) ([]*agentv1.LinkedHost, error) {
	var out []*agentv1.LinkedHost
	for _, id := range ids {
		lh, err := get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, lh)
	}
	return out, nil
}

// WaitingKey names the log of calls whose sessions wait for the owner's
// first linked host of hostApp.
func WaitingKey(owner, hostApp string) string { return "wait:" + hostApp + ":" + owner }
