package launcher

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/platform/enumname"
	"nexus.local/platform/hostclient"
	"nexus.local/platform/osproc"
)

// maxRequestBytes is the largest request the runtime accepts, as the
// add-in's own limit.
const maxRequestBytes = 16 << 20

// process is one FreeCAD process behind the launcher.
type process struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	err  error
	tail *tailBuffer

	mu        sync.Mutex
	deadline  time.Time
	timeoutMs int64
	killedFor string
}

// busyPast answers the running script's timeout when it ran past its
// deadline by more than grace, and zero otherwise.
func (p *process) busyPast(now time.Time, grace time.Duration) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deadline.IsZero() || now.Before(p.deadline.Add(grace)) {
		return 0
	}
	return p.timeoutMs
}

// kill ends the process and all it started at once, remembering why.
func (p *process) kill(reason string) {
	p.mu.Lock()
	if p.killedFor == "" {
		p.killedFor = reason
	}
	p.mu.Unlock()
	pids := osproc.Descendants(p.cmd.Process.Pid)
	osproc.KillGroup(p.cmd.Process.Pid)
	for _, pid := range pids {
		osproc.Kill(pid)
	}
}

// end stops the process politely, then by force after wait, and with it
// every process below it (a script's detached children included).
func (p *process) end(wait time.Duration) {
	pids := osproc.Descendants(p.cmd.Process.Pid)
	osproc.Terminate(p.cmd.Process.Pid)
	select {
	case <-p.done:
	case <-time.After(wait):
		osproc.KillGroup(p.cmd.Process.Pid)
		<-p.done
	}
	for _, pid := range pids {
		osproc.Kill(pid)
	}
}

// reason says why the process ended, for the error a caller gets.
func (p *process) reason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killedFor != "" {
		return p.killedFor
	}
	return fmt.Sprintf("the FreeCAD process ended during the call (%v): a script that calls os._exit or crashes the interpreter ends the whole runtime", p.err)
}

// readStatus follows the runtime's status pipe: when a script starts and by
// when it must end, and where the last commit was saved.
func (r *Runtime) readStatus(p *process, f *os.File) {
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "busy":
			a, b, _ := strings.Cut(rest, " ")
			deadline, err1 := strconv.ParseInt(a, 10, 64)
			timeout, err2 := strconv.ParseInt(b, 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			p.mu.Lock()
			p.deadline, p.timeoutMs = time.UnixMilli(deadline), timeout
			p.mu.Unlock()
		case "idle":
			p.mu.Lock()
			p.deadline, p.timeoutMs = time.Time{}, 0
			p.mu.Unlock()
		case "checkpoint":
			path, name, _ := strings.Cut(rest, "\t")
			r.mu.Lock()
			r.document, r.fileName, r.restored = path, name, true
			r.mu.Unlock()
		}
	}
}

func (r *Runtime) current() *process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// supervise ends a process whose script outlived its deadline, and starts
// a new one, with the document as of the last commit, whenever the current
// one ended without Stop.
func (r *Runtime) supervise(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		p := r.current()
		select {
		case <-ctx.Done():
			r.shutdown()
			return
		case <-r.done:
			return
		case now := <-tick.C:
			if timeout := p.busyPast(now, r.opts.KillGrace); timeout > 0 {
				p.kill(fmt.Sprintf("the script did not stop at its timeout of %d ms (it caught the interruption or was blocked in native code), so the launcher ended the FreeCAD process %s after the deadline", timeout, r.opts.KillGrace))
			}
			continue
		case <-p.done:
		}
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if stopping {
			return
		}
		// A detached child of the old process is not the new one's business.
		for _, pid := range osproc.Descendants(p.cmd.Process.Pid) {
			osproc.Kill(pid)
		}
		startCtx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
		next, err := r.launch(startCtx)
		cancel()
		r.mu.Lock()
		if err != nil {
			r.err = fmt.Errorf("restart after %s: %w", p.reason(), err)
			r.mu.Unlock()
			r.shutdown()
			return
		}
		r.proc = next
		r.restarts++
		r.lastReason = p.reason()
		r.mu.Unlock()
		if r.opts.OnRestart != nil {
			r.opts.OnRestart(p.reason())
		}
	}
}

// serve is the public server: it refuses what it does not expect before
// reading it (origin, then pairing token, then the body's size and pace)
// and hands the rest to the FreeCAD process.
func (r *Runtime) serve(w http.ResponseWriter, req *http.Request) {
	origin := req.Header.Get("Origin")
	if origin != "" && origin == r.opts.AllowedOrigin {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Vary", "Origin")
	}
	if req.Method == http.MethodOptions {
		r.forward(w, req, nil)
		return
	}
	if origin != "" && origin != r.opts.AllowedOrigin {
		writeJSONError(w, http.StatusForbidden, fmt.Sprintf("origin not allowed; only %s may call this runtime", r.opts.AllowedOrigin))
		return
	}
	want := "Bearer " + r.token
	if subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte(want)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nexus-host"`)
		w.Header().Set("Connection", "close")
		writeJSONError(w, http.StatusUnauthorized, "missing or wrong pairing token; send Authorization: Bearer <token>")
		return
	}
	var body []byte
	if req.Method == http.MethodPost {
		if req.ContentLength < 0 {
			w.Header().Set("Connection", "close")
			writeJSONError(w, http.StatusLengthRequired, "send the body with a Content-Length; chunked bodies are not accepted")
			return
		}
		if req.ContentLength > maxRequestBytes {
			w.Header().Set("Connection", "close")
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", req.ContentLength, maxRequestBytes))
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(r.opts.BodyTimeout))
		b, err := io.ReadAll(req.Body)
		if err != nil {
			w.Header().Set("Connection", "close")
			writeJSONError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s: %v", r.opts.BodyTimeout, err))
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		body = b
	}
	r.forward(w, req, body)
}

// forward calls the FreeCAD process. When the process ends during the call
// (a script killed it, or ran past its timeout and was ended), the caller
// gets a clear error once a new process serves: an execute call gets it as
// the script's error, so a model reading the result learns what happened.
func (r *Runtime) forward(w http.ResponseWriter, req *http.Request, body []byte) {
	started := time.Now()
	p := r.current()
	resp, err := r.send(req, p, body)
	var op *net.OpError
	if err != nil && errors.As(err, &op) && op.Op == "dial" && req.Context().Err() == nil {
		// The process was already gone: nothing of this call ran, so it goes
		// to the new process once one serves.
		if _, ok := r.awaitRestart(req.Context(), p); ok {
			p = r.current()
			resp, err = r.send(req, p, body)
		}
	}
	if err == nil && resp.ContentLength > hostclient.MaxAnswerBytes {
		// The runtime bounds what it answers; an answer past the limit is
		// refused whole rather than passed on cut short.
		_ = resp.Body.Close()
		writeJSONError(w, http.StatusBadGateway, fmt.Sprintf("the FreeCAD runtime answered %d bytes, more than the limit of %d bytes; the answer was dropped", resp.ContentLength, hostclient.MaxAnswerBytes))
		return
	}
	if err == nil {
		defer func() { _ = resp.Body.Close() }()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, hostclient.MaxAnswerBytes))
		return
	}
	if req.Context().Err() != nil {
		return
	}
	reason, ok := r.awaitRestart(req.Context(), p)
	if !ok {
		writeJSONError(w, http.StatusServiceUnavailable, fmt.Sprintf("the FreeCAD runtime did not answer: %v", err))
		return
	}
	msg := reason + "; the runtime was restarted with the document as of the last commit, and nothing this call did was kept"
	if req.URL.Path != "/v1/execute" {
		writeJSONError(w, http.StatusServiceUnavailable, msg+"; try again")
		return
	}
	res := map[string]any{
		"committed": false,
		"error": map[string]any{"type": enumname.Camel(hostv1.ExecCondition_EXEC_CONDITION_RUNTIME_RESTARTED),
			"condition": hostv1.ExecCondition_EXEC_CONDITION_RUNTIME_RESTARTED.String(), "message": msg},
		"durationMs": time.Since(started).Milliseconds(),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// send makes one call to the FreeCAD process p.
func (r *Runtime) send(req *http.Request, p *process, body []byte) (*http.Response, error) {
	out, err := http.NewRequestWithContext(req.Context(), req.Method, p.url+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build the call: %w", err)
	}
	for _, h := range []string{"Authorization", "Origin", "Content-Type", "Access-Control-Request-Method",
		"Access-Control-Request-Headers", "Access-Control-Request-Private-Network"} {
		if v := req.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	resp, err := r.http.Do(out)
	if err != nil {
		return nil, fmt.Errorf("call the FreeCAD process: %w", err)
	}
	return resp, nil
}

// awaitRestart waits until p has ended and a new process serves; it answers
// why p ended, or false when p is still running (the call failed for
// another reason) or no new process came up.
func (r *Runtime) awaitRestart(ctx context.Context, p *process) (string, bool) {
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		return "", false
	case <-ctx.Done():
		return "", false
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.current() != p {
			return p.reason(), true
		}
		select {
		case <-r.done:
			return "", false
		case <-ctx.Done():
			return "", false
		case <-tick.C:
		}
	}
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
