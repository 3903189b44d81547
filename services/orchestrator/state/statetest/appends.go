package statetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/services/orchestrator/state"
)

// testConcurrentAppends appends to many runs at once, as a replica's
// workers do, so that stores which commit the appends waiting at the same
// moment together get batches: each run also gets a retry of every chunk
// (the same bytes: success) and a different chunk at the same seq (a
// conflict) racing with it. Every answer is the one an append alone would
// get, and every log holds exactly its own chunks.
func testConcurrentAppends(t *testing.T, s state.Store) {
	ctx := testContext(t)
	const runs, chunks = 24, 20
	chunk := func(run, seq int, text string) *agentv1.StreamChunk {
		return &agentv1.StreamChunk{Seq: int64(seq), RunId: fmt.Sprintf("run-batch-%d", run),
			Chunk: &agentv1.StreamChunk_Message{Message: &agentv1.MessageDelta{Text: text}}}
	}
	errs := make(chan error, runs*chunks)
	var wg sync.WaitGroup
	for run := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run-batch-%d", run)
			for seq := 1; seq <= chunks; seq++ {
				want := chunk(run, seq, fmt.Sprintf("run %d chunk %d", run, seq))
				if err := s.Append(ctx, id, want); err != nil {
					errs <- fmt.Errorf("append %s at %d: %w", id, seq, err)
					return
				}
				var same, other error
				var both sync.WaitGroup
				both.Go(func() { same = s.Append(ctx, id, proto.Clone(want).(*agentv1.StreamChunk)) })
				both.Go(func() { other = s.Append(ctx, id, chunk(run, seq, "another chunk")) })
				both.Wait()
				if same != nil || !errors.Is(other, state.ErrEventConflict) {
					errs <- fmt.Errorf("%s at %d: a retry answered %v, another chunk %v; want success and a conflict", id, seq, same, other)
				}
			}
			if err := s.Finish(ctx, id); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for run := range runs {
		id := fmt.Sprintf("run-batch-%d", run)
		var got []*agentv1.StreamChunk
		if err := s.Follow(ctx, id, 0, state.EachChunk(func(c *agentv1.StreamChunk) error { got = append(got, c); return nil })); err != nil {
			t.Fatalf("follow %s: %v", id, err)
		}
		if len(got) != chunks {
			t.Errorf("%s holds %d chunks, want %d", id, len(got), chunks)
			continue
		}
		for i, c := range got {
			if want := chunk(run, i+1, fmt.Sprintf("run %d chunk %d", run, i+1)); !proto.Equal(c, want) {
				t.Errorf("%s chunk %d is %v, want %v", id, i+1, c, want)
			}
		}
	}
}
