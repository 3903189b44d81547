package bench

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
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
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- ServeFloor(ctx, addr, v.url) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeFloor: %v", err)
		}
	}()
	p := &proxy{name: "floor", exited: make(chan struct{})}
	if err := p.waitListening(ctx, addr, func() string { return "" }); err != nil {
		t.Fatal(err)
	}

	read := func(url string) string {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(`{"messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Bench-Direct", "1")
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
