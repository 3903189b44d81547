package statetest

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"
)

// FaultProxy stands between the orchestrator and a real Redis server and
// breaks the network the way a crash or a flaky link does, at a moment the
// test chooses: when a client sends a command that matches a rule. Redis
// still executes what reached it; only the client's view is broken.
type FaultProxy struct {
	target string
	lis    net.Listener

	mu    sync.Mutex
	rules []*FaultRule
	conns map[net.Conn]struct{}
	down  time.Time
}

// Fault is what a rule does once a matching command went through to Redis.
type Fault int

const (
	// LoseAnswer lets Redis execute the command and answer, then drops the
	// answer and closes the client's connection: a crash or a broken link
	// between the server's reply and the client. With a For it then blacks
	// out as Blackout does, so the client's own retries fail too.
	LoseAnswer Fault = iota + 1
	// Blackout relays the answer, then cuts every connection and refuses
	// new ones for the rule's For: an outage right after the command.
	Blackout
	// Drop never sends the command and blacks out as Blackout does: an
	// outage that begins just before it.
	Drop
)

// FaultRule fires once on the first client write for which Match holds.
type FaultRule struct {
	// Match sees the bytes of one client write (one command or pipeline).
	Match func(b []byte) bool
	Fault Fault
	// For is how long a blackout lasts.
	For time.Duration

	fired chan struct{}
	once  sync.Once
}

// Fired is closed once the rule has fired.
func (r *FaultRule) Fired() <-chan struct{} { return r.fired }

// StartFaultProxy listens on a free loopback port and forwards every
// connection to target (host:port) until the test ends.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fault proxy: listen: %v", err)
	}
	p := &FaultProxy{target: target, lis: lis, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		_ = lis.Close()
		p.cutAll()
	})
	return p
}

// URL is the redis:// URL that reaches Redis through the proxy.
func (p *FaultProxy) URL() string { return "redis://" + p.lis.Addr().String() + "/0" }

// Add arms a rule and returns it.
func (p *FaultProxy) Add(r *FaultRule) *FaultRule {
	r.fired = make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, r)
	return r
}

// Contains matches a write that holds every one of parts.
func Contains(parts ...string) func([]byte) bool {
	return func(b []byte) bool {
		for _, s := range parts {
			if !bytes.Contains(b, []byte(s)) {
				return false
			}
		}
		return true
	}
}

func (p *FaultProxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := time.Now().Before(p.down)
		if !down {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		go p.serve(c)
	}
}

func (p *FaultProxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *FaultProxy) cutAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// take returns the first armed rule that matches b and disarms it.
func (p *FaultProxy) take(b []byte) *FaultRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.Match(b) {
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			return r
		}
	}
	return nil
}

func (p *FaultProxy) serve(client net.Conn) {
	defer p.forget(client)
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	defer p.forget(server)

	// The relay of answers tells a firing rule when the answer to its
	// command came, and whether to pass it on.
	type relayMode struct {
		drop     bool
		answered chan struct{}
	}
	modes := make(chan relayMode, 1)
	go func() {
		defer p.forget(client)
		var mode *relayMode
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			select {
			case m := <-modes:
				mode = &m
			default:
			}
			if n > 0 {
				if mode == nil || !mode.drop {
					if _, werr := client.Write(buf[:n]); werr != nil && mode == nil {
						return
					}
				}
				if mode != nil {
					close(mode.answered)
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 256<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if r := p.take(buf[:n]); r != nil && r.Fault == Drop {
				p.fire(r)
				return
			} else if r != nil {
				m := relayMode{drop: r.Fault == LoseAnswer, answered: make(chan struct{})}
				modes <- m
				_, _ = server.Write(buf[:n])
				select {
				case <-m.answered:
				case <-time.After(10 * time.Second):
				}
				p.fire(r)
				return
			}
			if _, err := server.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// fire breaks the network as r says, once its command was answered.
func (p *FaultProxy) fire(r *FaultRule) {
	if r.Fault == Blackout || r.Fault == Drop || r.For > 0 {
		p.mu.Lock()
		p.down = time.Now().Add(r.For)
		p.mu.Unlock()
		p.cutAll()
	}
	r.once.Do(func() { close(r.fired) })
}
