package identity

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/refusal"
)

// healthService answers probes from anyone: it says nothing about users.
const healthService = "grpc.health.v1.Health"

// ServerAuth authenticates every call a gRPC server receives.
type ServerAuth struct {
	verifier *Verifier
	// creds, when set, admits users presenting a credential directly (the
	// CLI calling the orchestrator); services only other services call
	// leave it nil.
	creds *Credentials
	// devLoopback admits loopback callers without a credential as LocalUser.
	devLoopback bool
	log         *slog.Logger
}

// NewServerAuth builds the authentication of a server. verifier checks
// assertions; creds (nil to refuse them) checks credentials; devLoopback
// admits loopback callers without any as LocalUser.
func NewServerAuth(verifier *Verifier, creds *Credentials, devLoopback bool, log *slog.Logger) *ServerAuth {
	return &ServerAuth{verifier: verifier, creds: creds, devLoopback: devLoopback, log: log}
}

// ServerOptions returns the interceptors that authenticate every call.
func (a *ServerAuth) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, err := a.authenticate(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, err := a.authenticate(ss.Context(), info.FullMethod)
			if err != nil {
				return err
			}
			return h(srv, &authedStream{ServerStream: ss, ctx: ctx})
		}),
	}
}

type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *authedStream) Context() context.Context { return s.ctx }

// serviceOf is the gRPC service of a full method name: "/a.b.S/M" is "a.b.S".
func serviceOf(fullMethod string) string {
	svc, _, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return svc
}

func (a *ServerAuth) authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	svc := serviceOf(fullMethod)
	if svc == healthService {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	remote := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		remote = p.Addr.String()
	}
	user, err := a.check(ctx, md, svc, remote)
	if err != nil {
		a.log.WarnContext(ctx, "grpc authentication failed", "method", fullMethod, "remote", remote, "err", err)
		return nil, refusal.New(codes.Unauthenticated, agentv1.RefusalReason_REFUSAL_REASON_UNAUTHENTICATED, "unauthenticated: "+err.Error())
	}
	return WithCaller(ctx, user), nil
}

func (a *ServerAuth) check(ctx context.Context, md metadata.MD, svc, remote string) (string, error) {
	if v := md.Get(AssertionKey); len(v) > 0 {
		if a.verifier == nil {
			return "", errors.New("this service has no NEXUS_INTERNAL_KEY to check assertions with")
		}
		return a.verifier.Verify(v[0], svc)
	}
	if v := md.Get("authorization"); len(v) > 0 && a.creds != nil {
		scheme, token, ok := strings.Cut(v[0], " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", errors.New("authorization metadata: want Bearer <credential>")
		}
		return a.creds.Check(ctx, token)
	}
	if a.devLoopback && IsLoopback(remote) {
		return LocalUser, nil
	}
	if a.creds == nil {
		return "", errors.New("only Nexus services may call this service: no identity assertion")
	}
	return "", errors.New(errNoCredentialText)
}

// DialOptions returns the interceptors that sign an assertion for every call
// made on a connection: for the user ctx acts for (Outgoing, or the caller
// being served), else for this service itself.
func (s *Signer) DialOptions() []grpc.DialOption {
	attach := func(ctx context.Context, method string) context.Context {
		user := outgoingUser(ctx)
		if user == "" {
			user = ServiceUser(s.service)
		}
		return metadata.AppendToOutgoingContext(ctx, AssertionKey, s.Sign(user, serviceOf(method)))
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return inv(attach(ctx, method), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, st grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return st(attach(ctx, method), desc, cc, method, opts...)
		}),
	}
}

// bearer is a credential sent with every call, as the CLI sends its API key.
type bearer struct{ token string }

// Bearer returns a dial option that sends token as Authorization: Bearer.
func Bearer(token string) grpc.DialOption {
	return grpc.WithPerRPCCredentials(bearer{token: token})
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false so the CLI can reach a loopback
// orchestrator; every deployment beyond loopback configures TLS.
func (bearer) RequireTransportSecurity() bool { return false }
