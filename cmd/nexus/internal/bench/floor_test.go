package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFloorRelaysEachEventWhole reads one turn through the floor relay and
// one straight from the vendor: apart from the send stamps and the turn's
// id, the two bodies are the same bytes, so the floor does the hops' work and
// no less.
func TestFloorRelaysEachEventWhole(t *testing.T) {
	v, err := startVendor("", 500, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	ctx := t.Context()
	addr := serveFloor(t, v.url)

	read := func(url string) string {
		req, err := directRequest(ctx, url, strings.NewReader(`{"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: %s, Content-Type %q", url, resp.Status, resp.Header.Get("Content-Type"))
		}
		return string(b)
	}
	varying := regexp.MustCompile(`@t\d+|\d{8}`)
	through, direct := varying.ReplaceAllString(read("http://"+addr), "#"), varying.ReplaceAllString(read(v.url), "#")
	if events := strings.Count(direct, "\n\n"); events < 50 {
		t.Fatalf("the vendor's turn has %d events, want a whole turn:\n%s", events, direct)
	}
	if through != direct {
		t.Errorf("through the floor:\n%s\nstraight from the vendor:\n%s", through, direct)
	}
}

// TestFloorSaysWhyThereIsNoStream points the floor at a vendor that refuses
// every turn: the bench's reader gets the floor's 502 and the vendor's
// status, not an empty stream.
func TestFloorSaysWhyThereIsNoStream(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529)
	}))
	defer refusing.Close()
	s := direct(t.Context(), http.DefaultClient, &vendor{url: "http://" + serveFloor(t, refusing.URL)})
	if s.err == nil || !strings.Contains(s.err.Error(), "502") || !strings.Contains(s.err.Error(), "529") || s.chunks != 0 {
		t.Errorf("through the floor to a refusing vendor: %d chunks, error %v; want no chunk and an error naming the 502 and the vendor's 529", s.chunks, s.err)
	}
}

// serveFloor runs the floor relay in this process, in front of vendorURL,
// until the test ends, and returns its address once it listens.
func serveFloor(t *testing.T, vendorURL string) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- ServeFloor(ctx, addr, vendorURL) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeFloor: %v", err)
		}
	})
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-served:
			served <- err // for the clean-up
			t.Fatalf("ServeFloor ended before it listened: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
