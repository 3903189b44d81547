package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/sse"
)

// Host-link delivery: hosts paired and linked over the gateway's real link
// stream (GET /v1/host-link, server-sent events), each carrying the calls of
// its own sessions as a runtime does, timed from the orchestrator writing a
// call to the host's delivery log to the host reading it off the stream.
//
// The calls arrive at a steady rate over all hosts (Options.HostCallRate, a
// call started every 1/rate s whether or not the ones before it ended),
// going round the hosts, each host carrying one call at a time as a runtime
// does. So a level measures what the number of linked hosts costs at the
// same load, and a latency, not how fast a saturated machine clears a
// queue: runs started back to back as fast as they end keep both cores
// busy, and the delivery then waits in the run queue behind other runs'
// work (the stream levels measure the mesh at saturation).

// HostLinkLevel is the host link measured at one number of linked hosts.
type HostLinkLevel struct {
	Store string `json:"store"`
	// Hosts is how many hosts were linked at once, each carrying its own
	// sessions' calls.
	Hosts int `json:"hosts"`
	Calls int `json:"calls"`
	// CallsPerSecond is the rate the calls were started at, over all hosts.
	CallsPerSecond int `json:"calls_per_second"`
	// DeliveryMs is from the call's offer time (the orchestrator writing
	// it to the host's log) to the host reading it off its link.
	DeliveryMs Percentiles `json:"delivery_ms"`
	Errors     int         `json:"errors"`
	FirstError string      `json:"first_error,omitempty"`
}

// linkPatience bounds every wait of the measurement; it guards against a
// hang and measures nothing.
const linkPatience = 2 * time.Minute

// benchHost is one paired host: its token and the calls its link reads.
type benchHost struct {
	id, token string
	calls     chan linkedCall
	// busy makes the host carry one call at a time, as the runtime does.
	busy sync.Mutex
}

type linkedCall struct {
	call     *agentv1.HostCall
	received time.Time
}

// hostLink links n hosts and runs perHost calls through each, started at
// rate calls a second over all of them; it revokes the hosts when done.
func (m *mesh) hostLink(ctx context.Context, n, perHost, rate int) HostLinkLevel {
	l := HostLinkLevel{Store: m.store, Hosts: n, CallsPerSecond: rate}
	fail := func(err error) {
		if l.Errors == 0 {
			l.FirstError = err.Error()
		}
		l.Errors++
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hosts := make([]*benchHost, n)
	errs := make([]error, n)
	parallel(n, 16, func(i int) { hosts[i], errs[i] = m.pairHost(ctx) })
	defer parallel(n, 16, func(i int) {
		if hosts[i] != nil {
			if resp, err := m.c.do(context.WithoutCancel(ctx), http.MethodDelete, "/v1/hosts/"+hosts[i].id, ""); err == nil {
				resp.Body.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		fail(err)
		return l
	}
	var links sync.WaitGroup
	defer links.Wait()
	defer cancel()
	linked := make([]chan error, n)
	for i, h := range hosts {
		linked[i] = make(chan error, 1)
		links.Go(func() { m.readLink(ctx, h, linked[i]) })
	}
	for i := range hosts {
		if err := <-linked[i]; err != nil {
			fail(err)
			return l
		}
	}
	var mu sync.Mutex
	var delivery []time.Duration
	var calls sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range n * perHost {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		calls.Go(func() {
			d, err := m.linkedCall(ctx, hosts[i%n])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fail(err)
				return
			}
			delivery = append(delivery, d)
		})
	}
	calls.Wait()
	l.Calls, l.DeliveryMs = len(delivery), percentiles(delivery)
	return l
}

// pairHost pairs one host for the bench's user, as a runtime and the
// person do.
func (m *mesh) pairHost(ctx context.Context) (*benchHost, error) {
	var start struct{ DeviceCode, UserCode string }
	if err := m.c.postJSON(ctx, "/v1/host-pairings", "", `{"hostApp":"freecad","document":"bench"}`, &start); err != nil {
		return nil, fmt.Errorf("start pairing: %w", err)
	}
	if err := m.c.postJSON(ctx, "/v1/host-pairings:approve", m.c.apiKey, fmt.Sprintf(`{"userCode":%q}`, start.UserCode), nil); err != nil {
		return nil, fmt.Errorf("approve pairing: %w", err)
	}
	var claim struct {
		HostToken string
		Host      struct{ HostID string }
	}
	if err := m.c.postJSON(ctx, "/v1/host-pairings:claim", "", fmt.Sprintf(`{"deviceCode":%q}`, start.DeviceCode), &claim); err != nil {
		return nil, fmt.Errorf("claim pairing: %w", err)
	}
	return &benchHost{id: claim.Host.HostID, token: claim.HostToken, calls: make(chan linkedCall, 16)}, nil
}

// readLink holds h's link open until ctx ends, passing on every call it
// reads; linked gets nil once the link is open, or why it did not open.
func (m *mesh) readLink(ctx context.Context, h *benchHost, linked chan<- error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.c.base+"/v1/host-link?hostApp=freecad&document=bench", nil)
	if err != nil {
		linked <- err
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := m.c.http.Do(req)
	if err != nil {
		linked <- fmt.Errorf("open the host link: %w", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
		linked <- fmt.Errorf("open the host link: %s: %s", resp.Status, b)
		return
	}
	events := sse.NewReader(resp.Body, maxEventLine)
	var readErr error
	for {
		ev, err := events.Next()
		if err != nil {
			readErr = err
			break
		}
		now := time.Now()
		switch ev.Type {
		case "linked":
			linked <- nil
		case "call":
			var c agentv1.HostCall
			if err := protojson.Unmarshal(ev.Data, &c); err == nil {
				select {
				case h.calls <- linkedCall{call: &c, received: now}:
				case <-ctx.Done():
					return
				}
			}
		}
	}
	select {
	case linked <- fmt.Errorf("the host link closed before it opened: %v", readErr):
	default:
	}
}

// linkedCall starts one run on a new session bound to h, nobody following
// it, and answers its call when h's link delivers it; it returns how long
// the delivery took.
func (m *mesh) linkedCall(ctx context.Context, h *benchHost) (time.Duration, error) {
	h.busy.Lock()
	defer h.busy.Unlock()
	var sess struct{ SessionID string }
	if err := m.c.postJSON(ctx, "/v1/sessions", m.c.apiKey,
		fmt.Sprintf(`{"hostApp":"freecad","hostId":%q,"model":"anthropic/claude-sonnet-4-5","reviewPolicy":"REVIEW_POLICY_NONE"}`, h.id), &sess); err != nil {
		return 0, fmt.Errorf("create a session on host %s: %w", h.id, err)
	}
	if err := m.c.postJSON(ctx, "/v1/sessions/"+sess.SessionID+"/runs:start", m.c.apiKey, `{"prompt":"`+quickMarker+` look"}`, nil); err != nil {
		return 0, fmt.Errorf("start a run: %w", err)
	}
	wait := time.NewTimer(linkPatience)
	defer wait.Stop()
	for {
		select {
		case got := <-h.calls:
			if got.call.GetSessionId() != sess.SessionID {
				continue // An earlier call offered again: answered already.
			}
			d := got.received.Sub(got.call.GetOfferTime().AsTime())
			tc := got.call.GetToolCall()
			body := fmt.Sprintf(`{"toolCallId":%q,"resultToken":%q,"result":{"committed":false,"stdout":"12"}}`, tc.GetToolCallId(), tc.GetResultToken())
			if err := m.c.postJSON(ctx, "/v1/sessions/"+sess.SessionID+"/tool-results", h.token, body, nil); err != nil {
				return 0, fmt.Errorf("post the host's result: %w", err)
			}
			return d, nil
		case <-wait.C:
			return 0, fmt.Errorf("host %s got no call for session %s within %s", h.id, sess.SessionID, linkPatience)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// postJSON posts body with key (none when empty) and decodes a 200 answer
// into out when given.
func (c *client) postJSON(ctx context.Context, path, key, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
