package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/sqlstore"
	"nexus.local/services/orchestrator/metrics"
)

// historySweepEvery is how often the history retention runs.
const historySweepEvery = time.Hour

// HistoryConfig says where the run history lives and how long what the
// orchestrator keeps is kept.
type HistoryConfig struct {
	// Database is where the run history lives: PostgreSQL, or the SQLite
	// file in the data folder.
	Database sqlstore.Config
	// HistoryRetention is how long run history rows are kept; 0 keeps them
	// until their session is deleted.
	HistoryRetention time.Duration `env:"NEXUS_HISTORY_RETENTION, default=2160h"`
	// HotRetention is how long sessions and transcripts stay in the hot
	// state (Redis) after their last write, and event logs after their last
	// event (at most a day); 0 keeps sessions and transcripts until they are
	// deleted.
	HotRetention time.Duration `env:"NEXUS_HOT_RETENTION, default=168h"`

	// shared is a database the process opened for every service (nexus
	// dev); nil means the orchestrator opens its own.
	shared *sqlstore.DB
}

// maxEventTTL bounds how long a run's event log stays in Redis: it serves
// clients rejoining a run, and the run history keeps what lasts.
const maxEventTTL = 24 * time.Hour

// eventTTL is the hot retention of event logs: NEXUS_HOT_RETENTION, at most
// a day; zero leaves the store's default.
func (c HistoryConfig) eventTTL() time.Duration { return min(c.HotRetention, maxEventTTL) }

func (c HistoryConfig) validate() error {
	if c.HistoryRetention < 0 || c.HotRetention < 0 {
		return fmt.Errorf("NEXUS_HISTORY_RETENTION and NEXUS_HOT_RETENTION must not be negative (0 keeps forever), got %s and %s", c.HistoryRetention, c.HotRetention)
	}
	return c.Database.Validate()
}

// BuilderOn is Builder on a database the process opened already and closes
// itself: nexus dev opens the SQLite file once for every service.
func BuilderOn(cfg Config, db *sqlstore.DB) app.Builder {
	cfg.History.shared = db
	return Builder(cfg)
}

// history records each run and its tool calls in the database, and expires
// old rows.
type history struct {
	db   *sqlstore.DB
	owns bool
	log  *slog.Logger
	now  func() time.Time
	stop context.CancelFunc
	done chan struct{}
}

// openHistory opens (or shares) the database and starts the retention sweep.
func openHistory(ctx context.Context, log *slog.Logger, all Config, now func() time.Time) (*history, error) {
	cfg := all.History
	h := &history{db: cfg.shared, log: log, now: now, done: make(chan struct{})}
	if h.db == nil {
		db, err := sqlstore.Open(ctx, cfg.Database)
		if err != nil {
			return nil, fmt.Errorf("open the run history: %w", err)
		}
		h.db, h.owns = db, true
	}
	log.Info("run history opened", "database", h.db.Where())
	if all.RedisURL != "" && h.db.Path() != "" {
		// Replicas that share sessions through Redis must share one history
		// too; each one's own SQLite file would answer differently.
		log.Warn("run history is in a local sqlite file while replicas share state through redis; set NEXUS_DATABASE_URL to postgresql",
			"database", h.db.Where())
	}
	sweepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h.stop = stop
	go func() {
		defer close(h.done)
		h.sweep(sweepCtx, cfg.HistoryRetention)
	}()
	return h, nil
}

func (h *history) close() error {
	h.stop()
	<-h.done
	if h.owns {
		return h.db.Close()
	}
	return nil
}

func (h *history) sweep(ctx context.Context, retention time.Duration) {
	if retention <= 0 {
		return
	}
	t := time.NewTicker(historySweepEvery)
	defer t.Stop()
	for {
		n, err := h.db.ExpireHistory(ctx, h.now().Add(-retention))
		switch {
		case err != nil && ctx.Err() == nil:
			h.log.Warn("history retention", "err", err)
		case n > 0:
			h.log.Info("runs expired from the history", "runs", n, "retention", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// recordRunStart writes the run's history row before its first turn. A run
// whose row cannot be written does not start: what must last is not lost
// silently.
func (s *Service) recordRunStart(ctx context.Context, rs *orchestratorv1.RunState, prompt string) error {
	err := s.history.db.StartRun(ctx, sqlstore.Run{
		RunID: rs.GetRunId(), SessionID: rs.GetSessionId(), Owner: rs.GetUser(), HostApp: rs.GetHostApp(), Prompt: prompt,
		Models: []string{rs.GetModel()}, StartedAt: s.now(),
	})
	if err != nil {
		return fmt.Errorf("history_unavailable: the run history could not record this run, so it did not start: %w", err)
	}
	return nil
}

// recordRunEnd writes how a finished run ended, its turns, usage and cost;
// writing it again (a replica finishing a run whose closing was cut short)
// changes nothing.
func (s *Service) recordRunEnd(ctx context.Context, rs *orchestratorv1.RunState, log *slog.Logger) {
	total := rs.GetTotal()
	run := sqlstore.Run{
		RunID: rs.GetRunId(), Models: []string{rs.GetModel()}, Outcome: "completed", Turns: int(rs.GetTurns()), EndedAt: s.now(),
		Usage: sqlstore.Usage{
			InputTokens: total.GetInputTokens(), OutputTokens: total.GetOutputTokens(),
			CacheReadTokens: total.GetCacheReadTokens(), CacheWriteTokens: total.GetCacheWriteTokens(),
			ReasoningTokens: total.GetReasoningTokens(), CostUSD: total.GetCostUsd(),
		},
	}
	if n := len(rs.GetEnding()); n > 0 {
		if e := rs.GetEnding()[n-1].GetError(); e != nil {
			code := metrics.ErrorCodeName(e)
			run.Outcome, run.ErrorCode, run.ErrorMessage = code, code, e.GetMessage()
		}
	}
	if err := s.history.db.FinishRun(context.WithoutCancel(ctx), run); err != nil {
		log.Warn("record the end of the run", "err", err)
	}
}

// runRecord is the public form of a history row.
func runRecord(r sqlstore.Run) *agentv1.RunRecord {
	rec := &agentv1.RunRecord{
		RunId: r.RunID, Prompt: r.Prompt, Models: r.Models, Outcome: r.Outcome, ErrorMessage: r.ErrorMessage,
		Turns: int32(r.Turns), HostApp: r.HostApp, StartTime: timestamp(r.StartedAt), EndTime: timestamp(r.EndedAt),
		Usage: &agentv1.TokenUsage{
			InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens, CacheReadTokens: r.Usage.CacheReadTokens,
			CacheWriteTokens: r.Usage.CacheWriteTokens, ReasoningTokens: r.Usage.ReasoningTokens, CostUsd: r.Usage.CostUSD,
		},
		ToolCalls: map[string]int32{},
	}
	for k, n := range r.ToolCalls {
		rec.ToolCalls[k] = int32(n)
	}
	return rec
}
