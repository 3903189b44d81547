package systemtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	// The pure-Go SQLite driver nexus dev writes its history with.
	_ "modernc.org/sqlite"

	"nexus.local/platform/sqlstore"
)

// TestDeleteSessionAfterDevRestart runs the demo as one user under nexus
// dev, restarts nexus dev (its in-process hot state is gone, the SQLite
// history stays) and deletes the session over HTTP: another user gets 404
// and the rows stay; the owner gets 204 and the history rows are gone.
func TestDeleteSessionAfterDevRestart(t *testing.T) {
	t.Parallel()
	bin := buildNexus(t)
	httpAddr := freeAddr(t)
	base := "http://" + httpAddr
	dataDir := t.TempDir()
	env := append(append(devEnv(t, httpAddr), "NEXUS_DATA_DIR="+dataDir, "NEXUS_API_KEYS=k-alice:alice,k-bob:bob"), demoModelEnv()...)
	dev := start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// With API keys configured, the pairing of nexus dev's runtime is for a
	// signed-in caller too.
	preq, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/dev/host-pairing", nil)
	if err != nil {
		t.Fatal(err)
	}
	preq.Header.Set("X-Nexus-Pairing-Secret", devState(t, env).PairingSecret)
	preq.Header.Set("Authorization", "Bearer k-alice")
	presp, err := http.DefaultClient.Do(preq)
	if err != nil {
		t.Fatal(err)
	}
	var pairing struct{ HostURL, HostToken string }
	err = json.NewDecoder(presp.Body).Decode(&pairing)
	presp.Body.Close()
	if err != nil || presp.StatusCode != http.StatusOK {
		t.Fatalf("host pairing: %d %v", presp.StatusCode, err)
	}
	cmd := exec.CommandContext(ctx, bin, "run", "--yes", "--views", t.TempDir(), "--host-url", pairing.HostURL, "--host-token", pairing.HostToken, demoPrompt)
	cmd.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL="+base, "NEXUS_API_KEY=k-alice")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nexus run: %v\n%s", err, out)
	}
	session := sessionOf(t, string(out))

	db, err := sql.Open("sqlite", filepath.Join(dataDir, sqlstore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rows := func() (runs, calls int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE session_id = ?`, session).Scan(&runs); err != nil {
			t.Fatalf("count runs: %v", err)
		}
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_tool_calls WHERE session_id = ?`, session).Scan(&calls); err != nil {
			t.Fatalf("count tool calls: %v", err)
		}
		return runs, calls
	}
	runs, calls := rows()
	if runs != 1 || calls == 0 {
		t.Fatalf("before the restart the history holds %d run(s) and %d tool call(s) of %s, want 1 and some", runs, calls, session)
	}

	interrupt(t, dev)
	start(t, bin, env, "dev")
	waitHTTP(t, base+"/readyz")

	do := func(method, path, key string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Only the history remains: its owner reads it.
	if code := do(http.MethodGet, "/v1/sessions/"+session+"/runs", "k-alice"); code != http.StatusOK {
		t.Fatalf("GET runs after the restart: %d, want 200", code)
	}
	if code := do(http.MethodDelete, "/v1/sessions/"+session, "k-bob"); code != http.StatusNotFound {
		t.Errorf("another user's DELETE: %d, want 404", code)
	}
	if r, c := rows(); r != runs || c != calls {
		t.Errorf("another user's DELETE changed the history: %d run(s), %d tool call(s), was %d and %d", r, c, runs, calls)
	}
	if code := do(http.MethodDelete, "/v1/sessions/"+session, "k-alice"); code != http.StatusNoContent {
		t.Fatalf("the owner's DELETE after the restart: %d, want 204", code)
	}
	if r, c := rows(); r != 0 || c != 0 {
		t.Errorf("after the DELETE the history holds %d run(s) and %d tool call(s), want none", r, c)
	}
	if code := do(http.MethodGet, "/v1/sessions/"+session+"/runs", "k-alice"); code != http.StatusNotFound {
		t.Errorf("GET runs after the DELETE: %d, want 404", code)
	}
	t.Logf("deleted %d run and %d tool call rows of %s after restarting nexus dev", runs, calls, session)
}
