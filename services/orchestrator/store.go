package orchestrator

import (
	"context"
	"time"

	"nexus.local/platform/logging"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/state/redisstate"
)

// openStore picks the state implementation. This is the single switch point
// between the in-process store and the shared one: with NEXUS_REDIS_URL empty
// everything stays in this process. onFull counts the writes a full store
// refused.
func openStore(ctx context.Context, cfg Config, replica string, now func() time.Time, onFull func()) (state.Store, error) {
	if cfg.RedisURL == "" {
		return memory.New(now), nil
	}
	return redisstate.Open(ctx, cfg.RedisURL, redisstate.Options{
		ReplicaID: replica, Log: logging.FromContext(ctx),
		SessionTTL: cfg.History.HotRetention, EventTTL: cfg.History.eventTTL(), OnFull: onFull,
	})
}

// openHosts opens the host registry in the same store as the rest.
func openHosts(store state.Store, now func() time.Time) state.Hosts {
	if rs, ok := store.(*redisstate.Store); ok {
		return redisstate.NewHosts(rs)
	}
	return memory.NewHosts(now)
}
