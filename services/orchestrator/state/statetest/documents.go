package statetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// RunDocuments checks a state.Documents: a session's document is what was
// put last, byte for byte, and is gone once deleted.
func RunDocuments(t *testing.T, newDocs func(t *testing.T) state.Documents) {
	ctx := context.Background()
	d := newDocs(t)
	if _, err := d.Document(ctx, "s_none"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Document of a session without one: %v, want ErrNotFound", err)
	}
	data := bytes.Repeat([]byte{0, 'P', 'K', 0xff}, 1<<16)
	if err := d.PutDocument(ctx, &agentv1.SessionDocument{SessionId: "s_1", FileName: "a.FCStd", Data: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutDocument(ctx, &agentv1.SessionDocument{SessionId: "s_1", FileName: "b.FCStd", Data: data, SizeBytes: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	got, err := d.Document(ctx, "s_1")
	if err != nil || got.GetFileName() != "b.FCStd" || !bytes.Equal(got.GetData(), data) {
		t.Fatalf("Document = %q with %d bytes, %v; want the last one put, b.FCStd with %d bytes", got.GetFileName(), len(got.GetData()), err, len(data))
	}
	if err := d.DeleteDocument(ctx, "s_1"); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteDocument(ctx, "s_1"); err != nil {
		t.Fatalf("deleting a missing document: %v", err)
	}
	if _, err := d.Document(ctx, "s_1"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Document after DeleteDocument: %v, want ErrNotFound", err)
	}
}
