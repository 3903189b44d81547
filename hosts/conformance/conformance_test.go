package conformance

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/services/capability"
)

// TestConformance holds each host runtime to the host contract: info,
// refusals before reading, transaction commit with the epilogue and the
// framed view, rollback of a script that raises, read-only refusal,
// preview and the revision it pins, the call-id ledger, views and the
// script timeout. The runtimes run side by side; the checks on one runtime
// run in order on its one document.
func TestConformance(t *testing.T) {
	runtimes := []struct {
		app   string
		start func(*testing.T, string) *host
	}{
		{"freecad", startFreeCAD},
		{"revit", startRevit},
	}
	for _, rt := range runtimes {
		t.Run(rt.app, func(t *testing.T) {
			t.Parallel()
			h := rt.start(t, token)
			guidance, epilogue, err := capability.HostBehaviour(rt.app)
			if err != nil {
				t.Fatal(err)
			}
			framing, err := protojson.Marshal(guidance.GetHost().GetViewDefaults().GetFraming())
			if err != nil {
				t.Fatal(err)
			}
			s := &suite{h: h, epilogue: map[string]any{"code": epilogue.GetCode(), "contentHash": epilogue.GetContentHash()},
				framing: framing}
			for _, c := range []struct {
				name string
				run  func(*testing.T)
			}{
				{"info", s.info},
				{"refusals", s.refusals},
				{"commit", s.commit},
				{"rollback", s.rollback},
				{"read-only", s.readOnly},
				{"preview", s.preview},
				{"ledger", s.ledger},
				{"views", s.views},
				{"timeout", s.timeout},
			} {
				if !t.Run(c.name, c.run) {
					return
				}
			}
		})
	}
}

type suite struct {
	h        *host
	epilogue map[string]any
	framing  []byte
	n        int
}

// next answers the create script for a new element of its own.
func (s *suite) next() string {
	s.n++
	return fmt.Sprintf(s.h.create, s.n)
}

func (s *suite) capture() map[string]any {
	return map[string]any{"view": s.h.view, "maxPx": 512, "framing": jsonRaw(s.framing)}
}

func (s *suite) info(t *testing.T) {
	in := info(t, s.h)
	if in.GetHostApp() != s.h.app || in.GetHostVersion() == "" || in.GetRuntimeVersion() == "" ||
		in.GetDocument() == "" || in.GetDocumentRevision() == "" {
		t.Fatalf("info lacks a field: %v", in)
	}
}

func (s *suite) refusals(t *testing.T) {
	before := info(t, s.h).GetDocumentRevision()
	for _, c := range []struct {
		what    string
		headers map[string]string
		body    any
		want    int
	}{
		{"no token", map[string]string{"Authorization": ""}, map[string]any{"mode": "MODE_TRANSACTION", "code": s.next()}, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, map[string]any{"mode": "MODE_TRANSACTION", "code": s.next()}, 401},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, map[string]any{"mode": "MODE_TRANSACTION", "code": s.next()}, 403},
		{"no mode", nil, map[string]any{"code": s.next()}, 400},
		{"empty code", nil, map[string]any{"mode": "MODE_TRANSACTION", "code": " "}, 400},
	} {
		status, raw := call(t, s.h, http.MethodPost, "/v1/execute", c.body, c.headers)
		if status != c.want {
			t.Errorf("%s: answered %d, want %d: %s", c.what, status, c.want, raw)
		}
	}
	// A body over the limit is refused from its Content-Length, unread.
	line := rawStatus(t, s.h, "POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+
		"\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{")
	if !strings.Contains(line, " 413 ") {
		t.Errorf("an oversized body answered %q, want 413", line)
	}
	if after := info(t, s.h).GetDocumentRevision(); after != before {
		t.Errorf("a refused request changed the document: revision %s -> %s", before, after)
	}
}

func (s *suite) commit(t *testing.T) {
	before := info(t, s.h).GetDocumentRevision()
	res := execute(t, s.h, map[string]any{"mode": "MODE_TRANSACTION", "code": s.next(), "transactionName": "conformance",
		"epilogue": s.epilogue, "capture": s.capture()})
	if !res.GetCommitted() || res.GetError() != nil {
		t.Fatalf("not committed: %v", res.GetError())
	}
	if len(res.GetChanges().GetAdded()) == 0 {
		t.Errorf("a commit that added an element reports no added element: %v", res.GetChanges())
	}
	ep := res.GetEpilogue()
	if ep.GetError() != nil || !strings.Contains(ep.GetStdout(), "=== CHANGE REPORT ===") ||
		ep.GetContentHash() != s.epilogue["contentHash"] || ep.GetReport() == nil {
		t.Errorf("epilogue: error %v, hash %s (stamped %s), report %v\n%s", ep.GetError(), ep.GetContentHash(),
			s.epilogue["contentHash"], ep.GetReport(), ep.GetStdout())
	}
	if len(res.GetImages()) != 1 {
		t.Errorf("no framed image (note %q)", res.GetCaptureNote())
	} else if f := res.GetImages()[0].GetFramed(); f != "document" && !strings.HasPrefix(f, "changed: ") {
		// The changed elements, or the whole document when they span most of it.
		t.Errorf("the image frames %q, want the changed elements or the document", f)
	}
	if res.GetDocumentRevision() == before || res.GetDocumentRevision() != info(t, s.h).GetDocumentRevision() {
		t.Errorf("revision %s before, %s in the result, %s now", before, res.GetDocumentRevision(), info(t, s.h).GetDocumentRevision())
	}
}

func (s *suite) rollback(t *testing.T) {
	before, rev := dump(t, s.h), info(t, s.h).GetDocumentRevision()
	code := s.next() + "raise ValueError('conformance: raised on purpose')\n"
	res := execute(t, s.h, map[string]any{"mode": "MODE_TRANSACTION", "code": code, "epilogue": s.epilogue})
	e := res.GetError()
	if res.GetCommitted() || e.GetType() != "ValueError" || e.GetLine() != int32(strings.Count(code, "\n")) {
		t.Fatalf("want an uncommitted ValueError at line %d, got committed=%v %v", strings.Count(code, "\n"), res.GetCommitted(), e)
	}
	if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT {
		t.Errorf("rollback %v: %v", res.GetRollback(), res.GetRollbackDifferences())
	}
	if after := dump(t, s.h); after != before {
		t.Errorf("the document differs after a rolled-back script:\nbefore %s\nafter  %s", before, after)
	}
	if res.GetDocumentRevision() != rev {
		t.Errorf("revision moved %s -> %s though nothing was kept", rev, res.GetDocumentRevision())
	}
}

func (s *suite) readOnly(t *testing.T) {
	before := dump(t, s.h)
	res := execute(t, s.h, map[string]any{"mode": "MODE_READ_ONLY", "code": s.next()})
	if res.GetCommitted() || res.GetError().GetType() != "ReadOnlyViolation" {
		t.Fatalf("a read-only script that changed the document: committed=%v %v", res.GetCommitted(), res.GetError())
	}
	if after := dump(t, s.h); after != before {
		t.Errorf("the document differs after a refused read-only run")
	}
	read := execute(t, s.h, map[string]any{"mode": "MODE_READ_ONLY", "code": s.h.count})
	if read.GetError() != nil || strings.TrimSpace(read.GetStdout()) == "" {
		t.Errorf("a read-only read: %v %q", read.GetError(), read.GetStdout())
	}
}

func (s *suite) preview(t *testing.T) {
	before, rev := dump(t, s.h), info(t, s.h).GetDocumentRevision()
	code := s.next()
	res := execute(t, s.h, map[string]any{"mode": "MODE_PREVIEW", "code": code, "epilogue": s.epilogue, "capture": s.capture()})
	if !res.GetPreviewed() || res.GetCommitted() || res.GetError() != nil || len(res.GetChanges().GetAdded()) == 0 {
		t.Fatalf("preview: previewed=%v committed=%v error=%v changes=%v", res.GetPreviewed(), res.GetCommitted(), res.GetError(), res.GetChanges())
	}
	if !strings.Contains(res.GetEpilogue().GetStdout(), "=== CHANGE REPORT ===") || len(res.GetImages()) != 1 {
		t.Errorf("a preview reports and renders what a commit would: epilogue %q, %d images (%s)",
			res.GetEpilogue().GetStdout(), len(res.GetImages()), res.GetCaptureNote())
	}
	if res.GetRollback() != hostv1.RollbackExactness_ROLLBACK_EXACTNESS_EXACT || res.GetDocumentRevision() != rev {
		t.Errorf("preview rollback %v %v, revision %s -> %s", res.GetRollback(), res.GetRollbackDifferences(), rev, res.GetDocumentRevision())
	}
	if after := dump(t, s.h); after != before {
		t.Fatalf("the document differs after a preview")
	}
	stale := execute(t, s.h, map[string]any{"mode": "MODE_TRANSACTION", "code": code, "expectRevision": rev + "-stale"})
	if stale.GetCommitted() || stale.GetError().GetType() != "RevisionChanged" {
		t.Errorf("a commit pinned to another revision: committed=%v %v", stale.GetCommitted(), stale.GetError())
	}
	kept := execute(t, s.h, map[string]any{"mode": "MODE_TRANSACTION", "code": code, "expectRevision": rev})
	if !kept.GetCommitted() || len(kept.GetChanges().GetAdded()) != len(res.GetChanges().GetAdded()) {
		t.Errorf("the approved preview did not commit as previewed: %v %v", kept.GetError(), kept.GetChanges())
	}
}

func (s *suite) ledger(t *testing.T) {
	code := s.next()
	body := map[string]any{"toolCallId": fmt.Sprintf("conformance-%s-ledger", s.h.app), "mode": "MODE_TRANSACTION", "code": code}
	n0 := count(t, s.h)
	_, first := call(t, s.h, http.MethodPost, "/v1/execute", body, nil)
	n1 := count(t, s.h)
	status, again := call(t, s.h, http.MethodPost, "/v1/execute", body, nil)
	if status != http.StatusOK || !bytes.Equal(first, again) {
		t.Errorf("a repeated call id answered %d and %s, want the first answer %s", status, again, first)
	}
	if n2 := count(t, s.h); n0 == n1 || n2 != n1 {
		t.Errorf("element counts %s, %s, %s: the call must run exactly once", n0, n1, n2)
	}
	body["code"] = s.next()
	status, raw := call(t, s.h, http.MethodPost, "/v1/execute", body, nil)
	res := &hostv1.HostResult{}
	decode(t, raw, res)
	if status != http.StatusConflict || res.GetError().GetType() != "CallIdReused" {
		t.Errorf("an id reused for other code answered %d %v", status, res.GetError())
	}
	if n3 := count(t, s.h); n3 != n1 {
		t.Errorf("a refused reuse changed the document: %s -> %s elements", n1, n3)
	}
}

func (s *suite) views(t *testing.T) {
	status, raw := call(t, s.h, http.MethodPost, "/v1/export-view", map[string]any{"view": s.h.view, "maxPx": 256}, nil)
	if status != http.StatusOK {
		t.Fatalf("export-view answered %d: %s", status, raw)
	}
	res := &hostv1.HostResult{}
	decode(t, raw, res)
	if len(res.GetImages()) != 1 {
		t.Fatalf("export-view answered %d images", len(res.GetImages()))
	}
	im := res.GetImages()[0]
	cfg, err := png.DecodeConfig(bytes.NewReader(im.GetData()))
	if err != nil || im.GetMimeType() != "image/png" {
		t.Fatalf("not a PNG (%s): %v", im.GetMimeType(), err)
	}
	if int32(cfg.Width) != im.GetWidth() || int32(cfg.Height) != im.GetHeight() || max(cfg.Width, cfg.Height) > 256 {
		t.Errorf("image %dx%d, says %dx%d, max 256", cfg.Width, cfg.Height, im.GetWidth(), im.GetHeight())
	}
}

func (s *suite) timeout(t *testing.T) {
	before := dump(t, s.h)
	res := execute(t, s.h, map[string]any{"mode": "MODE_TRANSACTION", "code": s.next() + "while True:\n    pass\n", "timeoutMs": 1500})
	if res.GetCommitted() || res.GetError().GetType() != "ScriptTimeout" {
		t.Fatalf("a script past its timeout: committed=%v %v", res.GetCommitted(), res.GetError())
	}
	if after := dump(t, s.h); after != before {
		t.Errorf("the document differs after a script that timed out")
	}
}

// jsonRaw passes already-encoded JSON through json.Marshal unchanged.
type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return j, nil }
