package hostlink

// This file pairs host runtimes with their users by the device flow of RFC
// 8628: the runtime asks for codes, the person approves the short one, the
// runtime claims its host token once.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
	"nexus.local/services/orchestrator/state"
)

const (
	// pairingTTL is how long a pairing's codes work.
	pairingTTL = 10 * time.Minute
	// pairingInterval is how often a runtime polls ClaimPairing, in seconds.
	pairingInterval = 1
	// userCodeAlphabet has no vowels (no words) and no look-alikes, as RFC
	// 8628 §6.1 recommends; 8 of them are 20^8 ≈ 2.6e10 codes.
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLength   = 8
	// maxApproveFailures is how many unknown codes one user may try per
	// approveWindow before approvals are refused with RESOURCE_EXHAUSTED.
	maxApproveFailures = 10
	approveWindow      = 10 * time.Minute
	// maxClaimsPerInterval is how many polls of one device code a second
	// allows before the runtime is told to slow down (RFC 8628 slow_down).
	maxClaimsPerInterval = 3
	// approvePath is the web UI's approval page; the code rides in its
	// fragment, which never reaches a server log.
	approvePath = "/#approve"
)

// maxHostField bounds what a runtime may say about itself.
const maxHostField = 512

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func newUserCode() string {
	b := make([]byte, userCodeLength)
	_, _ = rand.Read(b)
	for i := range b {
		// 256 is not a multiple of 20; the bias this leaves (at most one
		// part in 12) costs a fraction of a bit of the code's entropy.
		b[i] = userCodeAlphabet[int(b[i])%len(userCodeAlphabet)]
	}
	return string(b)
}

// normalUserCode is a code as the person may type it: any case, dashes and
// spaces anywhere.
func normalUserCode(code string) string {
	return strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(code))
}

func shownUserCode(code string) string { return code[:4] + "-" + code[4:] }

// StartPairing opens a pairing for a runtime.
func (s *Server) StartPairing(ctx context.Context, req *agentv1.StartPairingRequest) (*agentv1.StartPairingResponse, error) {
	if strings.TrimSpace(req.GetHostApp()) == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "host_app is required, e.g. \"freecad\"")
	}
	for name, v := range map[string]string{"host_app": req.GetHostApp(), "document": req.GetDocument(), "runtime_version": req.GetRuntimeVersion(),
		"host_version": req.GetHostVersion(), "machine": req.GetMachine()} {
		if len(v) > maxHostField {
			return nil, refusal.Newf(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_LIMIT_REACHED, "%s is %d bytes; at most %d", name, len(v), maxHostField)
		}
	}
	device := randomText(32)
	for range 5 {
		code := newUserCode()
		err := s.Hosts.StartPairing(ctx, &state.Pairing{
			DeviceDigest: tokenDigest(device), UserCode: code, HostApp: req.GetHostApp(), Document: req.GetDocument(),
			RuntimeVersion: req.GetRuntimeVersion(), HostVersion: req.GetHostVersion(), Machine: req.GetMachine(),
			Started: s.Now(), Expires: s.Now().Add(pairingTTL),
		})
		if errors.Is(err, state.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, state.Status(err, "start pairing")
		}
		return &agentv1.StartPairingResponse{
			DeviceCode: device, UserCode: shownUserCode(code), VerificationUri: approvePath,
			VerificationUriComplete: approvePath + "=" + shownUserCode(code), ExpiresIn: int32(pairingTTL / time.Second), Interval: pairingInterval,
		}, nil
	}
	return nil, refusal.New(codes.Unavailable, agentv1.RefusalReason_REFUSAL_REASON_UNAVAILABLE, "no free pairing code right now; try again")
}

// peekOnly stops an approval once its function has read the pairing, so
// GetPairing reads a code's pairing through the one lookup by code the
// stores have, and changes nothing.
type peekOnly struct{}

func (peekOnly) Error() string { return "peek only" }

// GetPairing describes the open pairing of user_code without approving it.
func (s *Server) GetPairing(ctx context.Context, req *agentv1.GetPairingRequest) (*agentv1.PendingPairing, error) {
	owner := identity.FromIncoming(ctx)
	code := normalUserCode(req.GetUserCode())
	if code == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "user_code is required: the code the host runtime printed")
	}
	var seen state.Pairing
	_, err := s.Hosts.ApprovePairing(ctx, code, func(p *state.Pairing) error {
		seen = *p
		return peekOnly{}
	})
	switch {
	case errors.Is(err, peekOnly{}):
		return &agentv1.PendingPairing{UserCode: shownUserCode(seen.UserCode), HostApp: seen.HostApp, HostVersion: seen.HostVersion,
			RuntimeVersion: seen.RuntimeVersion, Document: seen.Document, Machine: seen.Machine,
			StartTime: timestamppb.New(seen.Started), ExpireTime: timestamppb.New(seen.Expires)}, nil
	case errors.Is(err, state.ErrNotFound):
		return nil, s.unknownCode(ctx, owner, req.GetUserCode())
	}
	return nil, state.Status(err, "read pairing")
}

// unknownCode counts a failed guess of owner's and answers why the code
// was refused: unknown, or too many unknown codes lately.
func (s *Server) unknownCode(ctx context.Context, owner, code string) error {
	n, cerr := s.Hosts.CountAttempt(ctx, approveFailures(owner), approveWindow)
	if cerr == nil && n > maxApproveFailures {
		return lockedOut()
	}
	return refusal.Newf(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_NOT_FOUND, "pairing code %s is unknown, expired (codes last %s) or used already; start the pairing again on the host", code, pairingTTL)
}

// ApprovePairing links the runtime of user_code to the caller.
func (s *Server) ApprovePairing(ctx context.Context, req *agentv1.ApprovePairingRequest) (*agentv1.LinkedHost, error) {
	owner := identity.FromIncoming(ctx)
	code := normalUserCode(req.GetUserCode())
	if code == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "user_code is required: the code the host runtime printed")
	}
	// While the caller is locked out every code is refused, the right one
	// too: a lockout that let a hit through would tell which code is live.
	if n, err := s.Hosts.Attempts(ctx, approveFailures(owner)); err != nil {
		return nil, state.Status(err, "read pairing attempts")
	} else if n >= maxApproveFailures {
		return nil, lockedOut()
	}
	hostID, token := state.NewID("h_"), hostTokenPrefix+randomText(32)
	p, err := s.Hosts.ApprovePairing(ctx, code, func(p *state.Pairing) error {
		p.Owner, p.HostID, p.HostToken = owner, hostID, token
		return nil
	})
	if errors.Is(err, state.ErrNotFound) {
		return nil, s.unknownCode(ctx, owner, req.GetUserCode())
	}
	if err != nil {
		return nil, state.Status(err, "approve pairing")
	}
	h := &agentv1.LinkedHost{HostId: p.HostID, HostApp: p.HostApp, Document: p.Document, RuntimeVersion: p.RuntimeVersion,
		HostVersion: p.HostVersion, Owner: owner, CreateTime: timestamppb.New(s.Now())}
	if err := s.Hosts.CreateHost(ctx, h, tokenDigest(token)); err != nil {
		return nil, state.Status(err, "create host")
	}
	s.Log.Info("host paired", "host", h.GetHostId(), "host_app", h.GetHostApp())
	return h, nil
}

// approveFailures names the count of a user's unknown codes.
func approveFailures(owner string) string { return "approve-fail:" + owner }

// lockedOut refuses an approval of a caller who tried too many unknown codes.
func lockedOut() error {
	return refusal.Newf(codes.ResourceExhausted, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_THROTTLED, "too many unknown pairing codes (%d in %s); every code is refused until then, wait and try again",
		maxApproveFailures, approveWindow)
}

// ClaimPairing answers the host token of an approved pairing, once.
func (s *Server) ClaimPairing(ctx context.Context, req *agentv1.ClaimPairingRequest) (*agentv1.ClaimPairingResponse, error) {
	if req.GetDeviceCode() == "" {
		return nil, refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "device_code is required")
	}
	digest := tokenDigest(req.GetDeviceCode())
	if n, err := s.Hosts.CountAttempt(ctx, "claim:"+digest, pairingInterval*time.Second); err == nil && n > maxClaimsPerInterval {
		return nil, refusal.Newf(codes.ResourceExhausted, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_SLOW_DOWN, "slow_down: poll at most every %d s", pairingInterval)
	}
	p, err := s.Hosts.ClaimPairing(ctx, digest)
	if errors.Is(err, state.ErrNotFound) {
		return nil, refusal.New(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_NOT_FOUND, "expired_token: this pairing expired, was claimed already or never existed; start it again")
	}
	if err != nil {
		return nil, state.Status(err, "claim pairing")
	}
	if p.HostID == "" {
		return &agentv1.ClaimPairingResponse{Status: agentv1.PairingStatus_PAIRING_STATUS_PENDING}, nil
	}
	// The host is described from the pairing: its record may be written a
	// moment after the approval the runtime saw.
	h := &agentv1.LinkedHost{HostId: p.HostID, HostApp: p.HostApp, Document: p.Document, RuntimeVersion: p.RuntimeVersion, HostVersion: p.HostVersion, Owner: p.Owner}
	return &agentv1.ClaimPairingResponse{Status: agentv1.PairingStatus_PAIRING_STATUS_APPROVED, HostToken: p.HostToken, Host: h}, nil
}
