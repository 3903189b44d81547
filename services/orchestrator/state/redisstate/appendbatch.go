package redisstate

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Appends that wait at the same moment, from the runs a replica works, go to
// Redis in one pipeline: each is still its own script, checked and answered
// on its own, and each caller still returns only once Redis has its chunk,
// but a pipeline of many costs about one round trip and one system call
// each way instead of one per chunk. Nothing waits for a batch to fill: a
// batch is whatever queued while the previous one was in flight.
const (
	// appendSenders is how many pipelines may be in flight at once.
	appendSenders = 4
	// maxAppendBatch bounds one pipeline.
	maxAppendBatch = 64
)

// appendReq is one chunk's append script, and then its answer.
type appendReq struct {
	keys []string
	args []any
	res  string
	err  error
	done chan struct{}
	// sent is when its batch left and batch how many it held, for a trace.
	sent  time.Time
	batch int
}

type appender struct {
	tracer trace.Tracer
	rdb    redis.UniversalClient
	script *redis.Script
	reqs   chan *appendReq
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startAppender(rdb redis.UniversalClient, script *redis.Script, tracer trace.Tracer) *appender {
	ctx, cancel := context.WithCancel(context.Background())
	a := &appender{tracer: tracer, rdb: rdb, script: script, reqs: make(chan *appendReq), ctx: ctx, cancel: cancel}
	for range appendSenders {
		a.wg.Go(func() { a.run(ctx) })
	}
	return a
}

func (a *appender) close() {
	a.cancel()
	a.wg.Wait()
}

// do runs the append script for keys and args with the others waiting.
func (a *appender) do(ctx context.Context, keys []string, args ...any) (string, error) {
	r := &appendReq{keys: keys, args: args, done: make(chan struct{})}
	if span := a.startSpan(ctx); span != nil {
		// The batch runs on the appender's context, so the wait in its
		// queue and the pipeline are this span's.
		defer func() { endAppendSpan(span, r) }()
	}
	select {
	case a.reqs <- r:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-a.ctx.Done():
		return "", redis.ErrClosed
	}
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		// The append may still land; a retry of the same chunk is "same".
		return "", ctx.Err()
	}
}

func (a *appender) run(ctx context.Context) {
	batch := make([]*appendReq, 0, maxAppendBatch)
	for {
		select {
		case r := <-a.reqs:
			batch = append(batch[:0], r)
		case <-ctx.Done():
			return
		}
	more:
		for len(batch) < maxAppendBatch {
			select {
			case r := <-a.reqs:
				batch = append(batch, r)
			default:
				break more
			}
		}
		a.send(ctx, batch)
		clear(batch)
	}
}

// send runs a batch in one pipeline and answers each request. A script
// Redis does not have cached yet (after a restart, say) is loaded by
// running it on its own.
func (a *appender) send(ctx context.Context, batch []*appendReq) {
	sent := time.Now()
	for _, r := range batch {
		r.sent, r.batch = sent, len(batch)
	}
	if len(batch) == 1 {
		r := batch[0]
		r.res, r.err = a.script.Run(ctx, a.rdb, r.keys, r.args...).Text()
		close(r.done)
		return
	}
	pipe := a.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, r := range batch {
		cmds[i] = a.script.EvalSha(ctx, pipe, r.keys, r.args...)
	}
	_, _ = pipe.Exec(ctx)
	for i, r := range batch {
		r.res, r.err = cmds[i].Text()
		if r.err != nil && redis.HasErrorPrefix(r.err, "NOSCRIPT") {
			r.res, r.err = a.script.Run(ctx, a.rdb, r.keys, r.args...).Text()
		}
		close(r.done)
	}
}
