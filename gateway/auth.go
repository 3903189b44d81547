package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"google.golang.org/grpc/codes"

	"nexus.local/platform/identity"
)

type userKey struct{}

// userFrom returns the authenticated caller the auth middleware stored.
func userFrom(ctx context.Context) string {
	if u, ok := ctx.Value(userKey{}).(string); ok {
		return u
	}
	return ""
}

// authenticator turns a request into the user it acts for.
type authenticator struct {
	keys     map[string]string
	verifier *oidc.IDTokenVerifier
	// devLoopback admits unauthenticated loopback callers as the local user.
	devLoopback bool
}

func newAuthenticator(ctx context.Context, cfg Config) (*authenticator, error) {
	keys, err := parseAPIKeys(cfg.APIKeys)
	if err != nil {
		return nil, err
	}
	a := &authenticator{keys: keys}
	if cfg.OIDCIssuer != "" {
		provider, err := oidc.NewProvider(ctx, cfg.OIDCIssuer)
		if err != nil {
			return nil, fmt.Errorf("oidc discovery at NEXUS_OIDC_ISSUER=%s: %w", cfg.OIDCIssuer, err)
		}
		a.verifier = provider.Verifier(&oidc.Config{ClientID: cfg.OIDCAudience, SkipClientIDCheck: cfg.OIDCAudience == ""})
	}
	if len(keys) == 0 && a.verifier == nil {
		if !cfg.DevMode {
			return nil, errors.New("no authentication configured: set NEXUS_API_KEYS or NEXUS_OIDC_ISSUER, or NEXUS_DEV_MODE=true to admit loopback callers without a key")
		}
		a.devLoopback = true
	}
	return a, nil
}

// authenticate returns the caller of r: the user of its API key, the subject
// of its verified JWT, or the local user for a loopback caller in dev mode.
func (a *authenticator) authenticate(r *http.Request) (string, error) {
	token, ok := bearer(r)
	if !ok {
		if a.devLoopback && isLoopback(r.RemoteAddr) {
			return identity.LocalUser, nil
		}
		return "", errors.New("unauthenticated: send Authorization: Bearer <api key>")
	}
	for key, user := range a.keys {
		if subtle.ConstantTimeCompare([]byte(key), []byte(token)) == 1 {
			return user, nil
		}
	}
	if a.verifier != nil && strings.Count(token, ".") == 2 {
		idt, err := a.verifier.Verify(r.Context(), token)
		if err != nil {
			return "", fmt.Errorf("unauthenticated: bearer token: %w", err)
		}
		return idt.Subject, nil
	}
	if a.devLoopback && isLoopback(r.RemoteAddr) {
		return identity.LocalUser, nil
	}
	return "", errors.New("unauthenticated: the bearer token is not a known API key")
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	// EventSource cannot send headers, so the rejoin stream also takes the
	// key as a query parameter.
	if h == "" && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events") {
		if t := r.URL.Query().Get("access_token"); t != "" {
			return t, true
		}
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requireUser authenticates every request to next and stores the caller in
// its context.
func (a *authenticator) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := a.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nexus"`)
			writeJSONError(w, http.StatusUnauthorized, codes.Unauthenticated, err.Error(), nil)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

// cors answers preflights and tags responses for the configured origins only.
// A cross-origin request from any other origin is refused outright, so a web
// page cannot drive a loopback gateway in dev mode through simple requests.
func cors(origins []string, next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, o := range origins {
		allowed[strings.TrimRight(o, "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || sameOrigin(origin, r) {
			next.ServeHTTP(w, r)
			return
		}
		if !allowed[origin] {
			writeJSONError(w, http.StatusForbidden, codes.PermissionDenied, "origin "+origin+" is not in NEXUS_CORS_ORIGINS", nil)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, traceparent, tracestate")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func sameOrigin(origin string, r *http.Request) bool {
	return origin == "http://"+r.Host || origin == "https://"+r.Host
}
