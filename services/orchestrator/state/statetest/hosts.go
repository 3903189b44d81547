package statetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// RunHosts runs the host registry's suite; newHosts returns an empty one.
func RunHosts(t *testing.T, newHosts func(t *testing.T) state.Hosts) {
	t.Run("registry and revocation", func(t *testing.T) { t.Parallel(); testHostRegistry(t, newHosts(t)) })
	t.Run("presence", func(t *testing.T) { t.Parallel(); testHostPresence(t, newHosts(t)) })
	t.Run("delivery log", func(t *testing.T) { t.Parallel(); testHostLog(t, newHosts(t)) })
	t.Run("pairing", func(t *testing.T) { t.Parallel(); testPairing(t, newHosts(t)) })
	t.Run("a code is approved and claimed once", func(t *testing.T) { t.Parallel(); testPairingOnce(t, newHosts(t)) })
}

func newLinkedHost(id, owner string) *agentv1.LinkedHost {
	return &agentv1.LinkedHost{HostId: id, Owner: owner, HostApp: "freecad", CreateTime: timestamppb.Now()}
}

func hostCall(session, call string) *agentv1.HostCall {
	return &agentv1.HostCall{SessionId: session, RunId: "r_" + session, ToolCall: &agentv1.ToolCall{ToolCallId: call, ResultToken: "tok-" + call}}
}

func testHostRegistry(t *testing.T, s state.Hosts) {
	ctx := testContext(t)
	if err := s.CreateHost(ctx, newLinkedHost("h_a", "alice"), "digest-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateHost(ctx, newLinkedHost("h_b", "bob"), "digest-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateHost(ctx, newLinkedHost("h_a", "bob"), "digest-x"); err == nil {
		t.Fatal("a second host under a used id was stored")
	}
	h, err := s.HostByToken(ctx, "digest-a")
	if err != nil || h.GetHostId() != "h_a" || h.GetOwner() != "alice" {
		t.Fatalf("HostByToken = %v, %v; want h_a of alice", h, err)
	}
	if _, err := s.HostByToken(ctx, "digest-unknown"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("an unknown token: %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateHost(ctx, "h_a", func(h *agentv1.LinkedHost) error { h.Document = "room.FCStd"; return nil }); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListHosts(ctx, "alice")
	if err != nil || len(list) != 1 || list[0].GetDocument() != "room.FCStd" {
		t.Fatalf("alice's hosts = %v, %v; want h_a with its document", list, err)
	}
	if _, err := s.Offer(ctx, "h_a", hostCall("s1", "c1")); err != nil {
		t.Fatal(err)
	}
	kick, stop, err := s.Watch(ctx, "h_a")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	<-kick // the first look
	if err := s.RevokeHost(ctx, "h_a"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kick:
	case <-ctx.Done():
		t.Fatal("a revocation did not wake the host's link")
	}
	if _, err := s.HostByToken(ctx, "digest-a"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("the revoked host's token still works: %v", err)
	}
	if _, err := s.GetHost(ctx, "h_a"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("the revoked host is still there: %v", err)
	}
	if calls, _ := s.Calls(ctx, "h_a"); len(calls) != 0 {
		t.Fatalf("the revoked host's log kept %d calls", len(calls))
	}
	if list, _ := s.ListHosts(ctx, "alice"); len(list) != 0 {
		t.Fatalf("alice still lists %d hosts", len(list))
	}
	if err := s.RevokeHost(ctx, "h_a"); err != nil {
		t.Fatalf("revoking again: %v", err)
	}
	if h, err := s.HostByToken(ctx, "digest-b"); err != nil || h.GetOwner() != "bob" {
		t.Fatalf("bob's host after alice's revocation: %v, %v", h, err)
	}
}

func testHostPresence(t *testing.T, s state.Hosts) {
	ctx := testContext(t)
	if err := s.CreateHost(ctx, newLinkedHost("h_p", "alice"), "digest-p"); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.GetHost(ctx, "h_p"); h.GetOnline() {
		t.Fatal("a host that never linked is online")
	}
	if err := s.SetOnline(ctx, "h_p", "conn-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.GetHost(ctx, "h_p"); !h.GetOnline() || h.GetOfflineSince() != nil {
		t.Fatalf("after SetOnline: %v", h)
	}
	kick, stop, err := s.Watch(ctx, "h_p")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	<-kick // the first look
	// The live link renews itself; nobody is woken.
	if err := s.RenewOnline(ctx, "h_p", "conn-1", time.Minute); err != nil {
		t.Fatalf("the live link's renewal: %v", err)
	}
	if err := s.SetOnline(ctx, "h_p", "conn-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	// A new link opened before the old one was seen to close: it is the
	// host's one live link, and the old one is woken to learn so.
	if err := s.SetOnline(ctx, "h_p", "conn-2", time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kick:
	case <-ctx.Done():
		t.Fatal("a newer link did not wake the older one")
	}
	if conn, err := s.LinkConn(ctx, "h_p"); err != nil || conn != "conn-2" {
		t.Fatalf("the live link is %q, %v; want conn-2", conn, err)
	}
	if err := s.RenewOnline(ctx, "h_p", "conn-1", time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("the superseded link's renewal: %v, want ErrLeaseLost", err)
	}
	if conn, _ := s.LinkConn(ctx, "h_p"); conn != "conn-2" {
		t.Fatalf("after the superseded link's renewal the live link is %q; want conn-2", conn)
	}
	if err := s.SetOffline(ctx, "h_p", "conn-1"); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.GetHost(ctx, "h_p"); !h.GetOnline() {
		t.Fatal("the old link's close took the new link's host offline")
	}
	if err := s.SetOffline(ctx, "h_p", "conn-2"); err != nil {
		t.Fatal(err)
	}
	h, _ := s.GetHost(ctx, "h_p")
	if h.GetOnline() || h.GetOfflineSince() == nil {
		t.Fatalf("after the last link closed: online=%v offline since %v", h.GetOnline(), h.GetOfflineSince())
	}
	if conn, err := s.LinkConn(ctx, "h_p"); err != nil || conn != "" {
		t.Fatalf("with no link open the live link is %q, %v; want none", conn, err)
	}
}

func testHostLog(t *testing.T, s state.Hosts) {
	ctx := testContext(t)
	key := "h_log"
	kick, stop, err := s.Watch(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	<-kick
	seq1, err := s.Offer(ctx, key, hostCall("s1", "c1"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-kick:
	case <-ctx.Done():
		t.Fatal("an offer did not wake the log's watcher")
	}
	again, err := s.Offer(ctx, key, hostCall("s1", "c1"))
	if err != nil || again != seq1 {
		t.Fatalf("offering the same call again: seq %d, %v; want %d", again, err, seq1)
	}
	seq2, _ := s.Offer(ctx, key, hostCall("s2", "c1"))
	seq3, _ := s.Offer(ctx, key, hostCall("s1", "c2"))
	if !(seq1 < seq2 && seq2 < seq3) {
		t.Fatalf("seqs %d %d %d are not increasing", seq1, seq2, seq3)
	}
	calls, err := s.Calls(ctx, key)
	if err != nil || len(calls) != 3 {
		t.Fatalf("Calls = %d, %v; want 3", len(calls), err)
	}
	for i, want := range []int64{seq1, seq2, seq3} {
		if calls[i].GetSeq() != want {
			t.Fatalf("call %d has seq %d, want %d", i, calls[i].GetSeq(), want)
		}
	}
	if calls[0].GetToolCall().GetResultToken() != "tok-c1" {
		t.Fatalf("the call lost its result token: %v", calls[0])
	}
	if err := s.Ack(ctx, key, "s1", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(ctx, key, "s1", "c1"); err != nil {
		t.Fatalf("acking again: %v", err)
	}
	calls, _ = s.Calls(ctx, key)
	if len(calls) != 2 || calls[0].GetSessionId() != "s2" {
		t.Fatalf("after the ack: %v", calls)
	}
	if other, _ := s.Calls(ctx, "h_other"); len(other) != 0 {
		t.Fatalf("another host's log holds %d calls", len(other))
	}
	// An acked call offered again (a replica that re-sends after a lost
	// answer never does this, but a new call under the id would) is new.
	if seq4, _ := s.Offer(ctx, key, hostCall("s1", "c1")); seq4 <= seq3 {
		t.Fatalf("a re-offered call got seq %d, not after %d", seq4, seq3)
	}
}

func newPairing(code string, expires time.Time) *state.Pairing {
	return &state.Pairing{DeviceDigest: "dev-" + code, UserCode: code, HostApp: "freecad", Expires: expires}
}

func testPairing(t *testing.T, s state.Hosts) {
	ctx := testContext(t)
	if err := s.StartPairing(ctx, newPairing("BCDFGHJK", time.Now().Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if err := s.StartPairing(ctx, newPairing("BCDFGHJK", time.Now().Add(time.Minute))); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("a user code in use again: %v, want ErrConflict", err)
	}
	p, err := s.ClaimPairing(ctx, "dev-BCDFGHJK")
	if err != nil || p.HostID != "" {
		t.Fatalf("claiming before approval = %v, %v; want it pending", p, err)
	}
	if _, err := s.ApprovePairing(ctx, "ZZZZZZZZ", func(*state.Pairing) error { return nil }); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("approving an unknown code: %v", err)
	}
	got, err := s.ApprovePairing(ctx, "BCDFGHJK", func(p *state.Pairing) error {
		p.Owner, p.HostID, p.HostToken = "alice", "h_1", "secret"
		return nil
	})
	if err != nil || got.HostID != "h_1" {
		t.Fatalf("approve = %v, %v", got, err)
	}
	if _, err := s.ApprovePairing(ctx, "BCDFGHJK", func(*state.Pairing) error { return nil }); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("approving a used code again: %v, want ErrNotFound", err)
	}
	p, err = s.ClaimPairing(ctx, "dev-BCDFGHJK")
	if err != nil || p.HostToken != "secret" || p.Owner != "alice" {
		t.Fatalf("claim = %v, %v", p, err)
	}
	if _, err := s.ClaimPairing(ctx, "dev-BCDFGHJK"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("claiming twice: %v, want ErrNotFound", err)
	}
	// Expired codes are gone for approval and claim alike.
	if err := s.StartPairing(ctx, newPairing("LMNPQRST", time.Now().Add(1500*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	// Expiry is a matter of the clock, so the test lets the clock pass it.
	time.Sleep(1600 * time.Millisecond)
	if _, err := s.ApprovePairing(ctx, "LMNPQRST", func(*state.Pairing) error { return nil }); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("approving an expired code: %v, want ErrNotFound", err)
	}
	if _, err := s.ClaimPairing(ctx, "dev-LMNPQRST"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("claiming an expired code: %v, want ErrNotFound", err)
	}
	for i := 1; i <= 3; i++ {
		n, err := s.CountAttempt(ctx, "approve:alice", time.Minute)
		if err != nil || n != i {
			t.Fatalf("attempt %d counted as %d, %v", i, n, err)
		}
	}
	if n, _ := s.CountAttempt(ctx, "approve:bob", time.Minute); n != 1 {
		t.Fatalf("bob's first attempt counted as %d", n)
	}
	// Reading the count counts nothing.
	for range 2 {
		if n, err := s.Attempts(ctx, "approve:alice"); err != nil || n != 3 {
			t.Fatalf("alice's attempts read as %d, %v; want 3", n, err)
		}
	}
	if n, err := s.Attempts(ctx, "approve:carol"); err != nil || n != 0 {
		t.Fatalf("carol's attempts (none) read as %d, %v; want 0", n, err)
	}
	// A window that has passed counts nothing.
	if _, err := s.CountAttempt(ctx, "approve:dave", time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if n, err := s.Attempts(ctx, "approve:dave"); err != nil || n != 0 {
		t.Fatalf("dave's attempts after their window read as %d, %v; want 0", n, err)
	}
}

func testPairingOnce(t *testing.T, s state.Hosts) {
	ctx := testContext(t)
	if err := s.StartPairing(ctx, newPairing("VWXZBCDF", time.Now().Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	approved := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ApprovePairing(ctx, "VWXZBCDF", func(p *state.Pairing) error {
				p.Owner, p.HostID, p.HostToken = fmt.Sprintf("user%d", i), fmt.Sprintf("h_%d", i), "t"
				return nil
			})
			if err == nil {
				mu.Lock()
				approved++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if approved != 1 {
		t.Fatalf("%d racing approvals succeeded, want 1", approved)
	}
	claimed := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p, err := s.ClaimPairing(ctx, "dev-VWXZBCDF"); err == nil && p.HostToken != "" {
				mu.Lock()
				claimed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if claimed != 1 {
		t.Fatalf("%d racing claims got the token, want 1", claimed)
	}
}
