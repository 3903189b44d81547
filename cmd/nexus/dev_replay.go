package main

import (
	"context"
	"log/slog"

	"nexus.local/platform/config"
	"nexus.local/services/modelrouter/replay"
)

// devReplay starts the replay vendor behind replay/demo and replay/expert
// (the demo cassette, or NEXUS_REPLAY_CASSETTE, and the expert that plays
// the eval tasks' reference solutions for nexus eval) unless
// NEXUS_REPLAY_BASE_URL names one, and points the model-router at it. It
// lives here, not in the model-router: the expert links the eval tasks,
// which a production service never does. It serves until ctx ends.
func devReplay(ctx context.Context, overrides map[string]string, env config.Lookuper, log *slog.Logger) error {
	if url, ok := env.Lookup("NEXUS_REPLAY_BASE_URL"); ok && url != "" {
		return nil
	}
	cassette, _ := env.Lookup("NEXUS_REPLAY_CASSETTE")
	url, err := replay.Serve(ctx, cassette)
	if err != nil {
		return err
	}
	overrides["NEXUS_REPLAY_BASE_URL"] = url
	log.Info("replay vendor", "url", url, "cassette", cassette)
	return nil
}
