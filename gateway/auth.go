package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"nexus.local/gateway/route"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/identity"
	"nexus.local/platform/refusal"
)

type userKey struct{}

// userFrom returns the authenticated caller the auth middleware stored.
func userFrom(ctx context.Context) string {
	if u, ok := ctx.Value(userKey{}).(string); ok {
		return u
	}
	return ""
}

// authenticator turns a request into the user it acts for, with the same
// credential check the orchestrator applies to direct gRPC clients.
type authenticator struct {
	creds *identity.Credentials
	// devLoopback admits unauthenticated loopback callers as the local user.
	devLoopback bool
	// failures throttles client addresses that keep failing to authenticate.
	failures *rateLimiter
	// passed holds the credentials that passed lately, which a throttled
	// address may still use.
	passed *recentSet
	// hosts checks host tokens.
	hosts hostAuthenticator
	log   *slog.Logger
}

// hostAuthenticator checks a host token: the orchestrator's AuthenticateHost.
type hostAuthenticator interface {
	AuthenticateHost(ctx context.Context, in *agentv1.AuthenticateHostRequest, opts ...grpc.CallOption) (*agentv1.LinkedHost, error)
}

func newAuthenticator(ctx context.Context, idc identity.Config, lim Limits, hosts hostAuthenticator, log *slog.Logger) (*authenticator, error) {
	creds, err := identity.NewCredentials(ctx, idc)
	if err != nil {
		return nil, err
	}
	a := &authenticator{
		creds:    creds,
		failures: newRateLimiter(lim.AuthFailuresPerMinute/60, lim.AuthFailureBurst, time.Now),
		passed:   newRecentSet(passedFor, maxPassed, time.Now),
		hosts:    hosts,
		log:      log,
	}
	if creds.Empty() {
		if !idc.DevMode {
			return nil, errors.New("no authentication configured: set NEXUS_API_KEYS or NEXUS_OIDC_ISSUER, or NEXUS_DEV_MODE=true to admit loopback callers without a key")
		}
		a.devLoopback = true
	}
	return a, nil
}

// authenticate returns the caller of r: the user of its API key, the
// namespaced subject of its verified JWT, or the local user for a loopback
// caller in dev mode.
func (a *authenticator) authenticate(r *http.Request) (string, error) {
	token, ok := bearer(r)
	if !ok {
		if a.devLoopback && identity.IsLoopback(r.RemoteAddr) {
			return identity.LocalUser, nil
		}
		return "", errors.New("unauthenticated: send Authorization: Bearer <api key>")
	}
	if a.devLoopback {
		// No key is configured, so no bearer token can be one: a caller
		// that sends one is refused rather than admitted as someone else.
		return "", errors.New("unauthenticated: the bearer token is not a configured key (this dev server has none: call it from loopback without an Authorization header, or set NEXUS_API_KEYS)")
	}
	user, err := a.creds.Check(r.Context(), token)
	if err != nil {
		return "", fmt.Errorf("unauthenticated: %w", err)
	}
	return user, nil
}

func bearer(r *http.Request) (string, bool) {
	// Only the header: a credential in a URL lands in every proxy's access
	// log, so the web UI reads streams with fetch, not EventSource.
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// clientAddr is the address a request came from, without its port: the key
// failed authentications are counted by.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// admit checks the credential of r against what its route admits, before
// a byte of its body is read, and returns r's context with the caller in
// it. A client address that keeps failing is refused with 429 for a while
// without its credential being checked, unless the credential is one that
// passed lately: someone else's failures behind the same address never
// throttle a working key. A refused request is answered and ok is false.
func (a *authenticator) admit(w http.ResponseWriter, r *http.Request, rt *route.Route) (ctx context.Context, ok bool) {
	addr := clientAddr(r)
	token, hasToken := bearer(r)
	if wait, blocked := a.failures.blocked(addr); blocked && !(hasToken && a.passed.has(token)) {
		secs := int64(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		refuseEarly(w, r, http.StatusTooManyRequests, codes.ResourceExhausted, agentv1.RefusalReason_REFUSAL_REASON_AUTH_THROTTLED,
			fmt.Sprintf("too many failed authentications from %s (NEXUS_AUTH_FAILURES_PER_MINUTE); retry in %d s", addr, secs))
		return nil, false
	}
	// A runtime that pairs has no credential yet. It acts for no user:
	// the orchestrator checks what its requests carry.
	if rt.Admits&route.NoCredential != 0 {
		return context.WithValue(r.Context(), userKey{}, "pairing:"+addr), true
	}
	fail := func(reason refusal.Reason, err error) {
		a.failures.take(addr)
		a.log.Warn("authentication failed", "remote", addr, "path", r.URL.Path, "err", err)
		// Logged once as the address crosses into the throttle; what it
		// sends while throttled is refused without a line each.
		if wait, blocked := a.failures.blocked(addr); blocked {
			a.log.Warn("authentication throttled", "remote", addr, "for", wait.Round(time.Second).String())
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="nexus"`)
		refuseEarly(w, r, http.StatusUnauthorized, codes.Unauthenticated, reason, err.Error())
	}
	if hasToken && strings.HasPrefix(token, hostTokenPrefix) {
		// A host token opens the link, its results and its documents only.
		if rt.Admits&route.HostToken == 0 {
			refuseEarly(w, r, http.StatusForbidden, codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_NOT_ALLOWED,
				"a host token carries the host's calls (GET /v1/host-link, POST .../tool-results, PUT .../document) and nothing else; use your own API key here")
			return nil, false
		}
		if _, err := a.hosts.AuthenticateHost(r.Context(), &agentv1.AuthenticateHostRequest{HostToken: token}); err != nil {
			if refusal.Of(err) != agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_UNKNOWN {
				writeStatusError(r.Context(), w, err)
				return nil, false
			}
			fail(agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_UNKNOWN, errors.New("unauthenticated: the host token is unknown or was revoked: pair the runtime again"))
			return nil, false
		}
		a.passed.add(token)
		ctx := context.WithValue(r.Context(), userKey{}, tokenKey(token))
		return context.WithValue(ctx, hostTokenKey{}, token), true
	}
	user, err := a.authenticate(r)
	if err != nil {
		fail(agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED, err)
		return nil, false
	}
	if rt.Admits&route.UserCredential == 0 {
		refuseEarly(w, r, http.StatusForbidden, codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_HOST_TOKEN_REQUIRED,
			"only a linked host calls this route, with its host token (pair the runtime first), not a user's credential")
		return nil, false
	}
	if hasToken {
		a.passed.add(token)
	}
	return identity.Outgoing(context.WithValue(r.Context(), userKey{}, user), user), true
}

// refuseEarly answers a request whose body was not read and closes the
// connection, so a client trickling a body is not waited on.
func refuseEarly(w http.ResponseWriter, r *http.Request, httpStatus int, code codes.Code, reason refusal.Reason, msg string) {
	if r.Body != nil && r.Body != http.NoBody {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	writeProblem(w, httpStatus, code, reason, msg, nil)
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
			refuseEarly(w, r, http.StatusForbidden, codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_ORIGIN_NOT_ALLOWED, "origin "+origin+" is not in NEXUS_CORS_ORIGINS")
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, X-Nexus-Pairing-Secret, traceparent, tracestate")
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
