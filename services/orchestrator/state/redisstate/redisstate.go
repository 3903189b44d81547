// Package redisstate keeps the orchestrator's state in Redis so that any
// number of replicas can serve any request: session state, the tool-result
// mailbox with its pub/sub wake-up, cancel signals, each run's event log
// (a Redis Stream) and run leases.
//
// Every replica holds exactly one subscriber connection. Suspended runs,
// cancel watches and event-log followers register in an in-process map and
// are woken by messages on that connection, so a waiting run costs a
// goroutine and a map entry, never a connection. When the subscriber
// reconnects (Redis restarted, failed over, or the network broke) every
// registered waiter re-checks the state it waits on, so a notification lost
// during the outage costs latency, never a result.
//
// Keys that one operation touches together share a hash tag, so the same
// code runs on a single server, behind Sentinel, or on Redis Cluster.
package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"nexus.local/platform/redisclient"
	"nexus.local/services/orchestrator/state"
)

// Options tune a Store; the zero value is usable.
type Options struct {
	// Prefix starts every key and channel; "nexus:" when empty. Replicas of
	// one deployment must share it.
	Prefix string
	// EventMaxLen caps each run's event log (approximately, as Redis trims
	// whole nodes); 10000 when zero.
	EventMaxLen int64
	// EventTTL is how long a run's event log is kept after its last event;
	// 24h when zero.
	EventTTL time.Duration
	// SignalTTL is how long a cancel request is remembered; 24h when zero.
	SignalTTL time.Duration
	// SessionTTL is how long a session and its transcript are kept after
	// their last write; zero keeps them until they are deleted.
	SessionTTL time.Duration
	// ReplicaID names this replica in logs and in the subscriber's client name.
	ReplicaID string
	// Log receives the subscriber's reconnects and errors; discarded when nil.
	Log *slog.Logger
	// OnFull, when set, is called for every command Redis refused because
	// it reached its maxmemory limit, so the operator sees it in a metric.
	OnFull func()
	// Tracer, when set, makes a span of each round trip of a request whose
	// span is sampled (trace.go).
	Tracer trace.Tracer
}

func (o *Options) defaults() {
	if o.Prefix == "" {
		o.Prefix = "nexus:"
	}
	if o.EventMaxLen <= 0 {
		o.EventMaxLen = 10000
	}
	if o.EventTTL <= 0 {
		o.EventTTL = 24 * time.Hour
	}
	if o.SignalTTL <= 0 {
		o.SignalTTL = 24 * time.Hour
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Store implements state.Store on Redis.
type Store struct {
	rdb     redis.UniversalClient
	opts    Options
	sub     *subscriber
	scripts scripts
	outbox  outboxScripts
	appends *appender
}

// scripts are the Lua scripts that make multi-key checks atomic.
type scripts struct {
	acquire, renew, suspend, wake, claim, release, due, deliver, decide, append, finish, update, wakeClaim, saveTranscript *redis.Script
}

func newScripts() scripts {
	return scripts{
		acquire:        redis.NewScript(acquireLua),
		renew:          redis.NewScript(renewLua),
		suspend:        redis.NewScript(suspendLua),
		wake:           redis.NewScript(wakeLua),
		claim:          redis.NewScript(claimLua),
		release:        redis.NewScript(releaseLua),
		due:            redis.NewScript(dueLua),
		deliver:        redis.NewScript(deliverLua),
		decide:         redis.NewScript(decideLua),
		append:         redis.NewScript(appendLua),
		finish:         redis.NewScript(finishLua),
		update:         redis.NewScript(updateLua),
		wakeClaim:      redis.NewScript(wakeClaimLua),
		saveTranscript: redis.NewScript(saveTranscriptLua),
	}
}

var _ state.Store = (*Store)(nil)

// Open connects to the Redis server named by rawURL and starts the replica's
// subscriber. The URL is redis:// or rediss://; a master_name query parameter
// selects Sentinel (the host is then a sentinel), one or more addr parameters
// select Cluster (the host is the first seed node).
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	rdb, err := NewClient(rawURL)
	if err != nil {
		return nil, err
	}
	opts.defaults()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis ping %s: %w", redactURL(rawURL), err)
	}
	rdb.AddHook(unavailableHook{classifier{opts.OnFull}})
	s := &Store{rdb: rdb, opts: opts, scripts: newScripts(), outbox: newOutboxScripts()}
	if opts.Tracer != nil {
		rdb.AddHook(redisclient.TraceHook(opts.Tracer, s.scriptNames()))
	}
	sub, err := startSubscriber(ctx, rdb, opts)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	s.sub = sub
	s.appends = startAppender(rdb, s.scripts.append, opts.Tracer)
	return s, nil
}

// NewClient builds the universal client for rawURL without connecting.
func NewClient(rawURL string) (redis.UniversalClient, error) { return redisclient.New(rawURL) }

// redactURL hides the password so URLs can appear in errors and logs.
func redactURL(raw string) string { return redisclient.Redact(raw) }

// Client returns the underlying client, for tests and diagnostics.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Close stops the subscriber and closes every connection.
func (s *Store) Close() error {
	s.sub.close()
	s.appends.close()
	if err := s.rdb.Close(); err != nil {
		return fmt.Errorf("close redis: %w", err)
	}
	return nil
}

// Key layout. Braces are Redis Cluster hash tags: the keys of one session
// live in one slot, and all lease bookkeeping lives in one slot, so the
// scripts and transactions below never cross slots.
func (s *Store) sessionKey(id string) string    { return s.opts.Prefix + "s:{" + id + "}" }
func (s *Store) transcriptKey(id string) string { return s.opts.Prefix + "t:{" + id + "}" }
func (s *Store) mailboxKey(id string) string    { return s.opts.Prefix + "mb:{" + id + "}" }
func (s *Store) decidedKey(id string) string    { return s.opts.Prefix + "dec:{" + id + "}" }
func (s *Store) runKey(run string) string       { return s.opts.Prefix + "run:{" + run + "}" }
func (s *Store) ownerKey(owner string) string   { return s.opts.Prefix + "owner:{" + owner + "}" }
func (s *Store) cancelKey(run string) string    { return s.opts.Prefix + "c:{" + run + "}" }
func (s *Store) eventsKey(run string) string    { return s.opts.Prefix + "ev:{" + run + "}" }
func (s *Store) leaseInfoKey() string           { return s.opts.Prefix + "{leases}:info" }
func (s *Store) leaseExpiryKey() string         { return s.opts.Prefix + "{leases}:expiry" }

// Channels. Cancel notifications match the replica's one pattern
// subscription; event-log channels are subscribed to by name only while a
// follower is interested, so a busy run's events do not fan out to every
// replica.
func cancelChannel(prefix, run string) string { return prefix + "n:c:" + run }
func eventsChannel(prefix, run string) string { return prefix + "evn:" + run }

// globEscape quotes the characters PSUBSCRIBE treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isRedisDown says whether err is a transport problem worth retrying, as
// opposed to a reply from the server.
func isRedisDown(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// LOADING and similar transient server states come back as replies.
		msg := rerr.Error()
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "READONLY") ||
			strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "CLUSTERDOWN")
	}
	return true
}

// isRedisFull says whether err is the server refusing a write because it
// reached maxmemory and may not evict.
func isRedisFull(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "OOM")
}

// isExecAbort says whether err is EXEC refusing a transaction because one
// of its queued commands was refused; the reason is that command's error.
func isExecAbort(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "EXECABORT")
}

// unavailableError marks a transport failure as state.ErrUnavailable while
// keeping the cause (a net.Error, say) reachable with errors.As.
type unavailableError struct{ err error }

func (e unavailableError) Error() string        { return e.err.Error() }
func (e unavailableError) Unwrap() error        { return e.err }
func (e unavailableError) Is(target error) bool { return target == state.ErrUnavailable }

// fullError marks a write refused for want of memory: state.ErrFull, and
// state.ErrUnavailable too, since it passes once an operator makes room.
type fullError struct{ err error }

func (e fullError) Error() string {
	return "the state store is full: Redis reached its maxmemory limit and refuses writes (raise maxmemory or free memory): " + e.err.Error()
}
func (e fullError) Unwrap() error { return e.err }
func (e fullError) Is(target error) bool {
	return target == state.ErrFull || target == state.ErrUnavailable
}

// abortError is an EXECABORT with the refusal that caused it, so the caller
// reads why the transaction was discarded.
type abortError struct{ abort, cause error }

func (e abortError) Error() string   { return e.abort.Error() + " (" + e.cause.Error() + ")" }
func (e abortError) Unwrap() []error { return []error{e.abort, e.cause} }

// classifier marks errors for the orchestrator and counts refusals for
// want of memory.
type classifier struct{ onFull func() }

// count calls onFull once for a command or pipeline that was refused for
// want of memory.
func (c classifier) count(errs ...error) {
	if c.onFull == nil {
		return
	}
	for _, err := range errs {
		if errors.Is(err, state.ErrFull) {
			c.onFull()
			return
		}
	}
}

// mark classifies err, whose cause is cause (the refusal of a queued
// command for an EXECABORT, err itself otherwise).
func (c classifier) mark(err, cause error) error {
	switch {
	case err == nil || errors.Is(err, state.ErrUnavailable):
		return err
	case isRedisFull(cause):
		return fullError{err}
	case isExecAbort(err) && cause == err:
		// The refused command is not known: a transaction discarded
		// while the server restarts is the store being away.
		return unavailableError{err}
	case isRedisDown(cause):
		return unavailableError{err}
	}
	return err
}

// unavailableHook marks every command's transport failure, so the
// orchestrator can tell "Redis is away, wait" from a real refusal without
// knowing Redis, and a full Redis from both.
type unavailableHook struct{ c classifier }

func (unavailableHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h unavailableHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Err() != nil {
			cmd.SetErr(h.c.mark(cmd.Err(), cmd.Err()))
		}
		err = h.c.mark(err, err)
		h.c.count(err, cmd.Err())
		return err
	}
}

func (h unavailableHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		// A transaction's queued command that was refused (LOADING after a
		// restart, OOM when full) is why EXEC answered EXECABORT.
		var cause error
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil && !isExecAbort(e) {
				cause = e
				break
			}
		}
		fix := func(e error) error {
			if isExecAbort(e) && cause != nil {
				return h.c.mark(abortError{e, cause}, cause)
			}
			return h.c.mark(e, e)
		}
		errs := []error{fix(err)}
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				cmd.SetErr(fix(cmd.Err()))
				errs = append(errs, cmd.Err())
			}
		}
		h.c.count(errs...)
		return errs[0]
	}
}
