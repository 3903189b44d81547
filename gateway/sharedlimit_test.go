package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"testing"
)

// sharedRedisURL is the test machine's Redis; each test's users are new
// names, so nothing it counts is anyone else's.
const sharedRedisURL = "redis://127.0.0.1:6379/0"

func randomUser(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "limit-" + hex.EncodeToString(b[:])
}

// twoGateways starts two gateways one after the other: the first answers
// before the second is built, since building one sets grpc-gateway's
// process-wide query parser (two at once race on it; separate processes, as
// in a cluster, do not share it).
func twoGateways(t *testing.T, a, b map[string]string) []string {
	t.Helper()
	first := startGateway(t, a)
	resp := request(t, http.MethodGet, first+"/healthz", "", "")
	resp.Body.Close()
	return []string{first, startGateway(t, b)}
}

// TestSharedRateLimitTwoGateways: two gateways against one Redis hold one
// user to the limit, not twice it; the same two gateways without Redis (each
// its own counter) admit twice the burst, which is what the store fixes.
func TestSharedRateLimitTwoGateways(t *testing.T) {
	stack := startRealStack(t)
	const burst = 5
	for _, tt := range []struct {
		name  string
		redis string
		want  int
	}{
		{"one Redis", sharedRedisURL, burst},
		{"in-process counters", "", 2 * burst},
	} {
		t.Run(tt.name, func(t *testing.T) {
			user := randomUser(t)
			key := "key-" + user
			// One request per 1000 s: nothing refills while the test runs.
			env := func() map[string]string {
				return realGatewayEnv(stack, "NEXUS_API_KEYS", key+":"+user, "NEXUS_REDIS_URL", tt.redis,
					"NEXUS_RATE_LIMIT_RPS", "0.001", "NEXUS_RATE_LIMIT_BURST", "5")
			}
			gateways := twoGateways(t, env(), env())
			admitted, refused := 0, 0
			for i := range 4 * burst {
				resp := request(t, http.MethodGet, gateways[i%2]+"/v1/models", key, "")
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					admitted++
				case http.StatusTooManyRequests:
					refused++
					if resp.Header.Get("Retry-After") == "" {
						t.Error("a 429 without Retry-After")
					}
				default:
					t.Fatalf("request %d: status %d", i, resp.StatusCode)
				}
			}
			if admitted != tt.want || refused != 4*burst-tt.want {
				t.Errorf("admitted %d and refused %d of %d requests across two gateways, want %d admitted", admitted, refused, 4*burst, tt.want)
			}
		})
	}
}

// TestSharedStreamCapTwoGateways: with one stream allowed per user, a
// stream held open on one gateway refuses the user's next stream on the
// other, and closing it frees the slot for the other gateway.
func TestSharedStreamCapTwoGateways(t *testing.T) {
	stack := startRealStack(t)
	env := realGatewayEnv(stack, "NEXUS_REDIS_URL", sharedRedisURL, "NEXUS_MAX_STREAMS_PER_USER", "1")
	// Alice's streams are counted under her name: a key of her own makes
	// the count this test's alone.
	user := randomUser(t)
	key := "key-" + user
	env["NEXUS_API_KEYS"] = key + ":" + user + "," + aliceKey + ":alice"
	gw := twoGateways(t, env, env)
	a, b := gw[0], gw[1]

	resp := request(t, http.MethodPost, a+"/v1/sessions", key, `{"hostApp":"freecad","reviewPolicy":"REVIEW_POLICY_NONE"}`)
	session, _ := decodeJSON(t, resp)["sessionId"].(string)
	run := request(t, http.MethodPost, a+"/v1/sessions/"+session+"/runs", key, `{"prompt":"add a 20 mm box"}`)
	if run.StatusCode != http.StatusOK {
		t.Fatalf("run on gateway A: %d", run.StatusCode)
	}
	rd := newSSEReader(run.Body)
	if _, err := rd.next(); err != nil {
		t.Fatal(err)
	}
	runID, _ := decodeJSON(t, request(t, http.MethodGet, a+"/v1/sessions/"+session, key, ""))["activeRunId"].(string)

	second := request(t, http.MethodGet, b+"/v1/runs/"+runID+"/events", key, "")
	second.Body.Close()
	if second.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second stream on gateway B while A holds one: status %d, want 429", second.StatusCode)
	}
	run.Body.Close()
	// A lets go of the slot when its handler returns, which follows the
	// closed connection; B is admitted once it has.
	for {
		third := request(t, http.MethodGet, b+"/v1/runs/"+runID+"/events", key, "")
		third.Body.Close()
		if third.StatusCode == http.StatusOK {
			break
		}
		if third.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("after A closed its stream: status %d", third.StatusCode)
		}
		if t.Context().Err() != nil {
			t.Fatal("gateway A never released the stream's slot")
		}
	}
}
