package statetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// Reopen closes what a store's process held and opens the same store again,
// as a restart of the process does; it answers the hosts and documents of
// the store opened again.
type Reopen func(t *testing.T) (state.Hosts, state.Documents)

// RunDurable checks that hosts, their tokens and delivery logs, pairings,
// the attempts counted against them, and documents survive a restart of
// the store's process: everything the host link and the hand-over of
// documents need to carry a run on after it. open answers an empty store's
// hosts and documents and the way to reopen it. The in-process store keeps
// nothing across a restart and does not run this.
func RunDurable(t *testing.T, open func(t *testing.T) (state.Hosts, state.Documents, Reopen)) {
	ctx := testContext(t)
	hosts, docs, reopen := open(t)
	if err := hosts.CreateHost(ctx, newLinkedHost("h_a", "alice"), "digest-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := hosts.UpdateHost(ctx, "h_a", func(h *agentv1.LinkedHost) error { h.Document = "room.FCStd"; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"c1", "c2"} {
		if _, err := hosts.Offer(ctx, "h_a", hostCall("s1", c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := hosts.Ack(ctx, "h_a", "s1", "c1"); err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour)
	for _, p := range []*state.Pairing{
		{DeviceDigest: "dev-approved", UserCode: "BCDFGHJK", HostApp: "freecad", Expires: expires},
		{DeviceDigest: "dev-open", UserCode: "LMNPQRST", HostApp: "freecad", Expires: expires},
	} {
		if err := hosts.StartPairing(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hosts.ApprovePairing(ctx, "BCDFGHJK", func(p *state.Pairing) error {
		p.Owner, p.HostID, p.HostToken = "alice", "h_b", "nxh_secret"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := hosts.CountAttempt(ctx, "pair:alice", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	data := bytes.Repeat([]byte{0, 'P', 'K', 0xff}, 1<<12)
	if err := docs.PutDocument(ctx, &agentv1.SessionDocument{SessionId: "s1", FileName: "room.FCStd", Data: data, SizeBytes: int64(len(data))}); err != nil {
		t.Fatal(err)
	}

	hosts, docs = reopen(t)
	h, err := hosts.HostByToken(ctx, "digest-a")
	if err != nil || h.GetHostId() != "h_a" || h.GetDocument() != "room.FCStd" {
		t.Fatalf("after the restart the token finds %v, %v; want h_a with its document", h, err)
	}
	if list, err := hosts.ListHosts(ctx, "alice"); err != nil || len(list) != 1 || list[0].GetHostId() != "h_a" {
		t.Fatalf("after the restart alice's hosts are %v, %v; want h_a", list, err)
	}
	calls, err := hosts.Calls(ctx, "h_a")
	if err != nil || len(calls) != 1 || calls[0].GetToolCall().GetToolCallId() != "c2" || calls[0].GetSeq() != 2 {
		t.Fatalf("after the restart the delivery log holds %v, %v; want c2 at seq 2", calls, err)
	}
	if seq, err := hosts.Offer(ctx, "h_a", hostCall("s1", "c3")); err != nil || seq != 3 {
		t.Fatalf("a call offered after the restart got seq %d, %v; want 3 (a seq is never given twice)", seq, err)
	}
	p, err := hosts.ClaimPairing(ctx, "dev-approved")
	if err != nil || p.HostToken != "nxh_secret" || p.HostID != "h_b" {
		t.Fatalf("after the restart the approved pairing claims %+v, %v; want h_b's token", p, err)
	}
	if _, err := hosts.ApprovePairing(ctx, "LMNPQRST", func(*state.Pairing) error { return nil }); err != nil {
		t.Fatalf("after the restart the open pairing cannot be approved: %v", err)
	}
	if n, err := hosts.CountAttempt(ctx, "pair:alice", time.Hour); err != nil || n != 4 {
		t.Fatalf("after the restart the attempts count %d, %v; want 4 (the three before count)", n, err)
	}
	got, err := docs.Document(ctx, "s1")
	if err != nil || got.GetFileName() != "room.FCStd" || !bytes.Equal(got.GetData(), data) {
		t.Fatalf("after the restart the document is %q with %d bytes, %v; want room.FCStd with %d", got.GetFileName(), len(got.GetData()), err, len(data))
	}
	if _, err := docs.Document(ctx, "s_none"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a session without a document: %v, want ErrNotFound", err)
	}
}
