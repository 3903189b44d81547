// Package identity says who is calling, at every boundary, the same way.
//
// Users are named by where their credential came from, so two kinds of
// credential can never share a name: an API key's user is "key:<name>", an
// OIDC subject is "oidc:<issuer>#<sub>", and the one user of nexus dev on
// loopback is "local". The gateway checks the credential a request carries
// (Credentials) and passes the user on to the orchestrator as a short-lived
// assertion it signs with the internal key (Signer); each service checks that
// signature (Verifier) and never takes a bare header's word. Direct gRPC
// clients such as the CLI present the credential itself, which the
// orchestrator checks with the same Credentials code.
package identity

import (
	"context"
	"net"
)

// AssertionKey is the gRPC metadata key of a signed identity assertion.
const AssertionKey = "x-nexus-assertion"

// LocalUser is the caller when nobody authenticated: nexus dev on loopback,
// or the CLI talking to its own dev stack.
const LocalUser = "local"

// servicePrefix names a service acting for nobody in particular.
const servicePrefix = "service:"

// ServiceUser is the identity of a service calling on its own behalf, such
// as the orchestrator carrying on a run after its client went away.
func ServiceUser(service string) string { return servicePrefix + service }

// KeyUser is the user of an API key named name.
func KeyUser(name string) string { return "key:" + name }

// OIDCUser is the user of an OIDC token with subject sub from issuer.
func OIDCUser(issuer, sub string) string { return "oidc:" + issuer + "#" + sub }

type callerKey struct{}

type outgoingKey struct{}

// WithCaller returns ctx carrying the caller a server authenticated.
func WithCaller(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, callerKey{}, user)
}

// FromIncoming returns the caller that this server's interceptor
// authenticated. A server without the interceptor (only tests build one)
// sees LocalUser: nothing a client sends names the caller by itself.
func FromIncoming(ctx context.Context) string {
	if u, ok := ctx.Value(callerKey{}).(string); ok && u != "" {
		return u
	}
	return LocalUser
}

// Outgoing returns ctx whose calls assert that they act for user; the client
// interceptor of a connection dialled with a Signer signs the assertion.
func Outgoing(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, outgoingKey{}, user)
}

// outgoingUser is the user calls made with ctx act for: the one named by
// Outgoing, else the caller this server is serving, else nobody.
func outgoingUser(ctx context.Context) string {
	if u, ok := ctx.Value(outgoingKey{}).(string); ok && u != "" {
		return u
	}
	if u, ok := ctx.Value(callerKey{}).(string); ok && u != "" {
		return u
	}
	return ""
}

// IsLoopback says whether addr (host:port or a bare host) is a loopback address.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
