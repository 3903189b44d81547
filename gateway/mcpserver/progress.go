package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress sends progress notifications for one tool call, when the client
// asked for them with a progress token.
type progress struct {
	ctx context.Context
	req *mcp.CallToolRequest

	mu    sync.Mutex
	n     float64
	last  string
	quiet int
}

func (p *progress) say(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.quiet = msg, 0
	p.send(msg)
}

// send notifies the client; p.mu is held, so numbers only increase.
func (p *progress) send(msg string) {
	token := p.req.Params.GetProgressToken()
	if token == nil {
		return
	}
	p.n++
	// A notification that cannot be delivered must not stop the run: the
	// result still reaches the client when it comes back.
	_ = p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.n, Message: msg})
}

// heartbeat repeats the last step, with how long it has been going on, after
// every interval without news. It returns the function that stops it and
// waits until it has stopped.
func (p *progress) heartbeat(interval time.Duration) func() {
	if interval <= 0 || p.req.Params.GetProgressToken() == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-p.ctx.Done():
				return
			case <-tick.C:
				p.mu.Lock()
				p.quiet++
				if p.quiet > 1 {
					p.send(fmt.Sprintf("still at: %s (no news for %s)", p.last, (time.Duration(p.quiet-1) * interval).Round(time.Millisecond)))
				}
				p.mu.Unlock()
			}
		}
	}()
	// Stopping waits for the goroutine, so no notification goes out after
	// the call answered.
	return func() {
		close(done)
		<-exited
	}
}
