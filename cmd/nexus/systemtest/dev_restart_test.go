package systemtest

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestKilledDevKeepsPairings pairs a runtime by code with nexus dev on its
// embedded default, kills nexus dev with SIGKILL and starts it again on the
// same data folder: the host is still listed under its id, its token still
// opens its link, and nexus dev's own runtime links again as the same host.
// Before, the list was empty after the restart and the token was refused
// with 401, so every runtime had to pair again under a new id.
func TestKilledDevKeepsPairings(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	env := append(devEnv(t, httpAddr), demoModelEnv()...)
	base := "http://" + httpAddr
	dev := start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	token := pairOverHTTP(t, base, "")
	before := hostPresence(t, base)
	if len(before) != 2 || !before["h_dev"] {
		t.Fatalf("before the kill the hosts are %v; want nexus dev's own, online, and the paired one", before)
	}

	dev.Kill()
	start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")
	after := hostPresence(t, base)
	ids := func(m map[string]bool) []string {
		var out []string
		for id := range m {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(ids(after), ids(before)) {
		t.Fatalf("after the restart the hosts are %v, want %v", ids(after), ids(before))
	}
	resp := linkRequest(t, base, token)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the paired host's token after the restart: HTTP %d, want its link", resp.StatusCode)
	}
	waitFor(t, "nexus dev's own runtime to link again as h_dev", time.Minute, func() bool { return hostPresence(t, base)["h_dev"] })
}
