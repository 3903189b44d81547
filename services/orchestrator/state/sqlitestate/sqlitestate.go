// Package sqlitestate keeps the orchestrator's state in the SQLite file of
// nexus dev, so that sessions, transcripts, run states, event logs, the
// mailbox and the schedule of unfinished runs survive a restart: a suspended
// run is rows in the file, and the process that opens the file next carries
// it on.
//
// It serves one process. Writes take the store's lock and one transaction
// each; followers of an event log and cancel watches are woken in process,
// never by polling the file. Replicas that share state use state/redisstate.
package sqlitestate

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	"go.opentelemetry.io/otel/trace"

	"nexus.local/services/orchestrator/state"
)

//go:embed migrations/*.sql
var migrations embed.FS

// versionTable records the hot state's schema version, apart from the run
// history's in the same file.
const versionTable = "hot_state_version"

// Default retention of event logs and cancel signals, as in redisstate: long
// enough for a client that lost its stream to rejoin a run that just ended.
const (
	defaultEventTTL  = 24 * time.Hour
	defaultSignalTTL = 24 * time.Hour
	// decidedTTL is how long a session remembers how its calls were decided,
	// so a courier that retries late is still answered the same.
	decidedTTL = 24 * time.Hour
	// pruneEvery spaces the deletes of expired rows; reads ignore expired
	// rows whether or not they were deleted yet.
	pruneEvery = time.Minute
)

// Options tune a Store; the zero value is usable.
type Options struct {
	// Now is the store's clock; time.Now when nil.
	Now func() time.Time
	// SessionTTL is how long a session and its transcript are kept after
	// their last write; zero keeps them until they are deleted.
	SessionTTL time.Duration
	// EventTTL is how long a run's event log is kept after its last event;
	// 24h when zero.
	EventTTL time.Duration
	// SignalTTL is how long a cancel request is remembered; 24h when zero.
	SignalTTL time.Duration
	// Writer is the lock of every writer of the file (the run history's
	// too, sqlstore.DB.Writer), so they queue in the process rather than
	// in SQLite's sleeping busy handler; a lock of the store's own when nil.
	Writer sync.Locker
	// Tracer, when set, makes a span of a sampled request's wait for the
	// file's write lock (trace.go).
	Tracer trace.Tracer
}

// Store implements state.Store on a SQLite database.
type Store struct {
	db   *sql.DB
	opts Options

	// writer serialises writes, so a read-check-write is atomic without
	// relying on SQLite's busy handler between the file's writers.
	writer    sync.Locker
	lastPrune time.Time

	events   notifier
	cancels  cancelWatches
	hostLogs logWatches
	appends  appendQueue
}

var _ state.Store = (*Store)(nil)

// Open brings the hot-state tables of db up to date and returns the store.
// db stays its opener's to close.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("open sqlite state: no database")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.EventTTL <= 0 {
		opts.EventTTL = defaultEventTTL
	}
	if opts.SignalTTL <= 0 {
		opts.SignalTTL = defaultSignalTTL
	}
	if opts.Writer == nil {
		opts.Writer = &sync.Mutex{}
	}
	if opts.SessionTTL < 0 {
		return nil, fmt.Errorf("open sqlite state: session retention must not be negative, got %s", opts.SessionTTL)
	}
	p, err := migrator(db)
	if err != nil {
		return nil, err
	}
	if _, err := p.Up(ctx); err != nil {
		return nil, fmt.Errorf("migrate the state tables: %w", err)
	}
	return &Store{db: db, opts: opts, writer: opts.Writer, events: notifier{waits: map[string]chan struct{}{}}, cancels: cancelWatches{watches: map[string]*cancelWatch{}}}, nil
}

// migrator answers the migrations of the hot-state tables on db.
func migrator(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("embedded state migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithTableName(versionTable))
	if err != nil {
		return nil, fmt.Errorf("state migrations: %w", err)
	}
	return p, nil
}

// Close releases nothing of the database, which its opener closes; it wakes
// every follower so none waits on a store that is gone.
func (s *Store) Close() error {
	s.events.notifyAll()
	return nil
}

// write runs fn in one transaction under the store's lock, with the store's
// time in unix nanoseconds.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx, now int64) error) error {
	return classify(s.writeTx(ctx, fn))
}

// writeTx is write before its error is classified.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx, now int64) error) error {
	s.lockWrites(ctx)
	defer s.writer.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	if err := fn(tx, now.UnixNano()); err != nil {
		_ = tx.Rollback()
		return err
	}
	if now.Sub(s.lastPrune) >= pruneEvery || now.Before(s.lastPrune) {
		if err := prune(ctx, tx, now.UnixNano()); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("delete expired state: %w", err)
		}
		s.lastPrune = now
	}
	return tx.Commit()
}

// prune deletes what expired.
func prune(ctx context.Context, tx *sql.Tx, now int64) error {
	for _, q := range []string{
		`DELETE FROM hot_sessions WHERE expires > 0 AND expires <= $1`,
		`DELETE FROM hot_transcripts WHERE session_id IN (SELECT session_id FROM hot_transcript_heads WHERE expires > 0 AND expires <= $1)`,
		`DELETE FROM hot_transcript_heads WHERE expires > 0 AND expires <= $1`,
		`DELETE FROM hot_mailboxes WHERE expires <= $1`,
		`DELETE FROM hot_decided WHERE expires <= $1`,
		`DELETE FROM hot_signals WHERE expires <= $1`,
		`DELETE FROM hot_events WHERE run_id IN (SELECT run_id FROM hot_event_logs WHERE expires <= $1)`,
		`DELETE FROM hot_event_logs WHERE expires <= $1`,
		`DELETE FROM hot_pairings WHERE expires <= $1`,
		`DELETE FROM hot_attempts WHERE expires <= $1`,
		`DELETE FROM hot_documents WHERE expires > 0 AND expires <= $1`,
		`DELETE FROM hot_models WHERE expires > 0 AND expires <= $1`,
	} {
		if _, err := tx.ExecContext(ctx, q, now); err != nil {
			return err
		}
	}
	return nil
}

// now is the store's time in unix nanoseconds.
func (s *Store) now() int64 { return s.opts.Now().UnixNano() }

// sessionExpiry is when a session written at now expires; 0 is never.
func (s *Store) sessionExpiry(now int64) int64 {
	if s.opts.SessionTTL <= 0 {
		return 0
	}
	return now + s.opts.SessionTTL.Nanoseconds()
}

// decidedExpiry is when a decision taken at now is forgotten: a day, or
// sooner when sessions are kept for less.
func (s *Store) decidedExpiry(now int64) int64 {
	ttl := decidedTTL
	if s.opts.SessionTTL > 0 {
		ttl = min(ttl, s.opts.SessionTTL)
	}
	return now + ttl.Nanoseconds()
}

// notifier wakes the waiters of a key (a run's event log) in process.
type notifier struct {
	mu    sync.Mutex
	waits map[string]chan struct{}
}

// wait returns a channel closed at the key's next notify.
func (n *notifier) wait(key string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.waits[key]
	if !ok {
		ch = make(chan struct{})
		n.waits[key] = ch
	}
	return ch
}

func (n *notifier) notify(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch, ok := n.waits[key]; ok {
		close(ch)
		delete(n.waits, key)
	}
}

func (n *notifier) notifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for key, ch := range n.waits {
		close(ch)
		delete(n.waits, key)
	}
}

// Batch runs the steps one after the other: the file is in this process,
// so a round trip costs nothing to save.
func (s *Store) Batch(ctx context.Context, steps ...state.Step) error {
	return state.RunSteps(ctx, s, steps...)
}
