package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"nexus.local/platform/config"
)

// TestTraceContextReachesTheOrchestrator shows a caller's traceparent
// carried through the gateway: the orchestrator's span is a child in the
// same trace, for unary routes and for streams.
func TestTraceContextReachesTheOrchestrator(t *testing.T) {
	orch := startTestOrchestrator(t, toolRunScript)
	base := startGateway(t, gatewayEnv(orch))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parent := "00-" + traceID + "-00f067aa0ba902b7-01"
	session := createSessionWith(t, base, aliceKey, "traceparent", parent)
	resp := request(t, http.MethodPost, base+"/v1/sessions/"+session+"/runs", aliceKey, `{"prompt":"add a box"}`, "traceparent", parent)
	if _, err := newSSEReader(resp.Body).next(); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"CreateSession", "Run"} {
		v, _ := orch.traces.Load(method)
		got, _ := v.(string)
		if !strings.HasPrefix(got, "00-"+traceID+"-") || got == parent {
			t.Errorf("%s carried traceparent %q, want a child span of trace %s", method, got, traceID)
		}
	}
}

func createSessionWith(t *testing.T, base, key string, header ...string) string {
	t.Helper()
	resp := request(t, http.MethodPost, base+"/v1/sessions", key, `{"hostApp":"freecad"}`, header...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create session: %d", resp.StatusCode)
	}
	return decodeJSON(t, resp)["sessionId"].(string)
}

// oidcIssuer is a loopback OpenID provider: discovery document and JWKS,
// signing RS256 ID tokens with its own key.
type oidcIssuer struct {
	*httptest.Server
	key *rsa.PrivateKey
}

func startOIDCIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &oidcIssuer{key: key}
	iss.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"issuer": iss.URL, "jwks_uri": iss.URL + "/keys", "authorization_endpoint": iss.URL + "/auth",
				"token_endpoint": iss.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256"},
			})
		case "/keys":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(iss.Close)
	return iss
}

func (iss *oidcIssuer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: iss.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	sig, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := sig.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return compact
}

// TestOIDCBearerTokens shows ID tokens from the configured issuer admitted
// as their namespaced subject, and tokens that are expired, for another
// audience, from another issuer or without a subject refused with 401; a
// subject that spells an API key's user is still another user; and an
// issuer without an audience refused at start.
func TestOIDCBearerTokens(t *testing.T) {
	iss := startOIDCIssuer(t)
	other := startOIDCIssuer(t)
	stack := startRealStack(t)
	base := startGateway(t, realGatewayEnv(stack, "NEXUS_OIDC_ISSUER", iss.URL, "NEXUS_OIDC_AUDIENCE", "nexus-web"))
	now := time.Now()
	claims := func(sub, aud string, exp time.Time) map[string]any {
		return map[string]any{"iss": iss.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "exp": exp.Unix()}
	}
	tests := []struct {
		name      string
		token     string
		status    int
		wantOwner string
	}{
		{"valid", iss.token(t, claims("user-123", "nexus-web", now.Add(time.Hour))), http.StatusOK, "oidc:" + iss.URL + "#user-123"},
		{"expired", iss.token(t, claims("user-123", "nexus-web", now.Add(-time.Hour))), http.StatusUnauthorized, ""},
		{"other audience", iss.token(t, claims("user-123", "someone-else", now.Add(time.Hour))), http.StatusUnauthorized, ""},
		{"other issuer's key", other.token(t, claims("user-123", "nexus-web", now.Add(time.Hour))), http.StatusUnauthorized, ""},
		{"empty subject", iss.token(t, claims("", "nexus-web", now.Add(time.Hour))), http.StatusUnauthorized, ""},
		{"subject alice is not the api key's alice", iss.token(t, claims("alice", "nexus-web", now.Add(time.Hour))), http.StatusOK, "oidc:" + iss.URL + "#alice"},
		{"api key still works", aliceKey, http.StatusOK, "key:alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := request(t, http.MethodPost, base+"/v1/sessions", tt.token, `{"hostApp":"freecad"}`)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status != http.StatusOK {
				if e := apiErrorOf(t, resp); e.Status != "UNAUTHENTICATED" {
					t.Errorf("status %s, want UNAUTHENTICATED", e.Status)
				}
				return
			}
			if owner := decodeJSON(t, resp)["owner"]; owner != tt.wantOwner {
				t.Errorf("owner %v, want %s", owner, tt.wantOwner)
			}
		})
	}

	t.Run("the oidc alice sees none of the api key alice's sessions", func(t *testing.T) {
		keySession := createSession(t, base, aliceKey)
		oidcAlice := iss.token(t, claims("alice", "nexus-web", now.Add(time.Hour)))
		if resp := request(t, http.MethodGet, base+"/v1/sessions/"+keySession, oidcAlice, ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET the api key alice's session as oidc alice: status %d, want 404", resp.StatusCode)
		}
		list := decodeJSON(t, request(t, http.MethodGet, base+"/v1/sessions", oidcAlice, ""))
		for _, s := range asList(list["sessions"]) {
			if s.(map[string]any)["sessionId"] == keySession {
				t.Errorf("oidc alice lists the api key alice's session %s", keySession)
			}
		}
	})

	t.Run("no audience refuses to start", func(t *testing.T) {
		env := withInternalKey(realGatewayEnv(stack, "NEXUS_OIDC_ISSUER", iss.URL))
		lis, err := netListen()
		if err != nil {
			t.Fatal(err)
		}
		err = ServeOn(t.Context(), config.Map(env), lis)
		if err == nil || !strings.Contains(err.Error(), "NEXUS_OIDC_AUDIENCE") {
			t.Fatalf("err %v, want one naming NEXUS_OIDC_AUDIENCE", err)
		}
	})
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
