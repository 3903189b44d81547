package statetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/orchestrator/state"
)

// RunModels checks a state.Models: a call's model in each state is what was
// put last, byte for byte, apart from other calls' and sessions', and a
// session's models are gone once deleted.
func RunModels(t *testing.T, newModels func(t *testing.T) state.Models) {
	ctx := context.Background()
	m := newModels(t)
	if _, err := m.Model(ctx, "s_none", "c", state.ModelAfter); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Model of a call without one: %v, want ErrNotFound", err)
	}
	glb := bytes.Repeat([]byte{'g', 'l', 'T', 'F', 0, 0xff}, 1<<15)
	put := func(session, call string, which state.ModelState, data []byte, ids ...string) {
		t.Helper()
		if err := m.PutModel(ctx, session, call, which, &hostv1.ExportedModel{MimeType: "model/gltf-binary", Data: data, ElementIds: ids}); err != nil {
			t.Fatal(err)
		}
	}
	put("s_1", "c1", state.ModelAfter, []byte("old"), "Wall")
	put("s_1", "c1", state.ModelAfter, glb, "Wall", "Door")
	put("s_1", "c1", state.ModelBefore, []byte("before"), "Wall")
	put("s_1", "c2", state.ModelAfter, []byte("c2"))
	put("s_2", "c1", state.ModelAfter, []byte("other session"))
	got, err := m.Model(ctx, "s_1", "c1", state.ModelAfter)
	if err != nil || !bytes.Equal(got.GetData(), glb) || len(got.GetElementIds()) != 2 {
		t.Fatalf("Model = %d bytes %v, %v; want the last one put, %d bytes [Wall Door]", len(got.GetData()), got.GetElementIds(), err, len(glb))
	}
	if got, err := m.Model(ctx, "s_1", "c1", state.ModelBefore); err != nil || string(got.GetData()) != "before" {
		t.Fatalf("the model before = %q, %v", got.GetData(), err)
	}
	if err := m.DeleteModels(ctx, "s_1"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteModels(ctx, "s_1"); err != nil {
		t.Fatalf("deleting a session without models: %v", err)
	}
	for _, c := range []string{"c1", "c2"} {
		if _, err := m.Model(ctx, "s_1", c, state.ModelAfter); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("Model of %s after DeleteModels: %v, want ErrNotFound", c, err)
		}
	}
	if got, err := m.Model(ctx, "s_2", "c1", state.ModelAfter); err != nil || string(got.GetData()) != "other session" {
		t.Fatalf("another session's model after DeleteModels of s_1: %q, %v", got.GetData(), err)
	}
}
