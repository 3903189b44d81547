package orchestrator

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"nexus.local/platform/logging"
	"nexus.local/platform/sqlstore"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/memory"
	"nexus.local/services/orchestrator/state/redisstate"
	"nexus.local/services/orchestrator/state/sqlitestate"
)

// openStore picks the state implementation. This is the single switch point:
// with NEXUS_REDIS_URL set, replicas share state through Redis; without it,
// state lives in the SQLite file of the run history (nexus dev), so sessions
// and suspended runs survive a restart; only a history on PostgreSQL without
// Redis leaves state in this process. onFull counts the writes a full store
// refused; tracer traces Redis's round trips for sampled requests.
func openStore(ctx context.Context, cfg Config, db *sqlstore.DB, replica string, now func() time.Time, onFull func(), tracer trace.Tracer) (state.Store, error) {
	log := logging.FromContext(ctx)
	if cfg.RedisURL != "" {
		return redisstate.Open(ctx, cfg.RedisURL, redisstate.Options{
			ReplicaID: replica, Log: log,
			SessionTTL: cfg.History.HotRetention, EventTTL: cfg.History.eventTTL(), OnFull: onFull, Tracer: tracer,
		})
	}
	if file := db.SQLite(); file != nil {
		log.Info("sessions and runs are kept in the sqlite file", "database", db.Where())
		return sqlitestate.Open(ctx, file, sqlitestate.Options{
			Now: now, SessionTTL: cfg.History.HotRetention, EventTTL: cfg.History.eventTTL(), Writer: db.Writer(), Tracer: tracer,
		})
	}
	log.Warn("sessions and runs are kept in this process only and are lost when it stops; set NEXUS_REDIS_URL to keep them")
	return memory.Open(memory.Options{Now: now, SessionTTL: cfg.History.HotRetention, EventTTL: cfg.History.eventTTL()}), nil
}

// openHosts opens the host registry in the same store as the rest, so it
// lasts as long as the sessions whose calls its delivery logs hold.
func openHosts(store state.Store, now func() time.Time) state.Hosts {
	switch s := store.(type) {
	case *redisstate.Store:
		return redisstate.NewHosts(s)
	case *sqlitestate.Store:
		return sqlitestate.NewHosts(s)
	}
	return memory.NewHosts(now)
}

// openDocuments opens the session documents in the same store as the hosts.
func openDocuments(store state.Store) state.Documents {
	switch s := store.(type) {
	case *redisstate.Store:
		return redisstate.NewDocuments(s)
	case *sqlitestate.Store:
		return sqlitestate.NewDocuments(s)
	}
	return memory.NewDocuments()
}

// openModels opens the review models in the same store as the documents.
func openModels(store state.Store) state.Models {
	switch s := store.(type) {
	case *redisstate.Store:
		return redisstate.NewModels(s)
	case *sqlitestate.Store:
		return sqlitestate.NewModels(s)
	}
	return memory.NewModels()
}
