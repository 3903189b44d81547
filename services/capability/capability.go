// Package capability is the capability service: per-host behaviour as data.
// A registry of host providers answers with prompt guidance, view defaults and
// stamped post-commit epilogues, and keeps the dispatch audit log.
package capability

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
)

// ServiceName names this service in logs, traces and metrics.
const ServiceName = "capability"

// MaxDispatchesPerRequest bounds one RecordDispatch call.
const MaxDispatchesPerRequest = 100

// Config configures the capability service.
type Config struct {
	// GRPCAddr is where the service listens when it runs alone.
	GRPCAddr string `env:"NEXUS_GRPC_ADDR, default=127.0.0.1:7103"`
	// AuditPerSession is how many dispatches the audit log keeps per session;
	// the oldest are dropped first.
	AuditPerSession int `env:"NEXUS_AUDIT_PER_SESSION, default=1000"`
	// AuditSessions is how many sessions the audit log keeps; the session
	// written least recently is dropped first.
	AuditSessions int `env:"NEXUS_AUDIT_SESSIONS, default=10000"`
}

// LoadConfig reads Config from l and checks it.
func LoadConfig(ctx context.Context, l config.Lookuper) (Config, error) {
	return config.From[Config](ctx, l)
}

// Validate checks the audit log's bounds.
func (c *Config) Validate() error {
	if c.AuditPerSession < 1 {
		return fmt.Errorf("NEXUS_AUDIT_PER_SESSION must be at least 1, got %d", c.AuditPerSession)
	}
	if c.AuditSessions < 1 {
		return fmt.Errorf("NEXUS_AUDIT_SESSIONS must be at least 1, got %d", c.AuditSessions)
	}
	return nil
}

// Service implements capabilityv1.CapabilityServiceServer.
type Service struct {
	capabilityv1.UnimplementedCapabilityServiceServer
	env   *app.Env
	hosts *registry
	audit *auditLog
	now   func() time.Time
}

// New builds the service.
func New(_ context.Context, env *app.Env, cfg Config) (*Service, error) {
	return newService(env, cfg, time.Now)
}

// newService builds the service with an injected clock, which stamps
// dispatches recorded without a time.
func newService(env *app.Env, cfg Config, now func() time.Time) (*Service, error) {
	hosts, err := newRegistry()
	if err != nil {
		return nil, err
	}
	perSession, sessions := cfg.AuditPerSession, cfg.AuditSessions
	if perSession < 1 {
		perSession = 1000
	}
	if sessions < 1 {
		sessions = 10000
	}
	return &Service{env: env, hosts: hosts, audit: newAuditLog(perSession, sessions), now: now}, nil
}

// Register adds the service to srv.
func (s *Service) Register(srv *rpc.Server) { capabilityv1.RegisterCapabilityServiceServer(srv, s) }

// Close releases what the service holds.
func (s *Service) Close() error { return nil }

// ListHosts answers with every registered host provider.
func (s *Service) ListHosts(context.Context, *capabilityv1.ListHostsRequest) (*capabilityv1.ListHostsResponse, error) {
	return &capabilityv1.ListHostsResponse{Hosts: s.hosts.list()}, nil
}

// GetGuidance answers with the host's prompt guidance.
func (s *Service) GetGuidance(_ context.Context, req *capabilityv1.GetGuidanceRequest) (*capabilityv1.GetGuidanceResponse, error) {
	p, err := s.hosts.lookup(req.GetHostApp())
	if err != nil {
		return nil, hostError(req.GetHostApp(), err)
	}
	return &capabilityv1.GetGuidanceResponse{Host: p.info, Guidance: p.guidance}, nil
}

// GetEpilogue answers with the host's change-report script, stamped with host,
// capability version and the sha256 of its exact bytes.
func (s *Service) GetEpilogue(_ context.Context, req *capabilityv1.GetEpilogueRequest) (*capabilityv1.GetEpilogueResponse, error) {
	p, err := s.hosts.lookup(req.GetHostApp())
	if err != nil {
		return nil, hostError(req.GetHostApp(), err)
	}
	return &capabilityv1.GetEpilogueResponse{Epilogue: p.stamp()}, nil
}

// RecordDispatch appends entries to the audit log. The code of a stamp is not
// kept: host, version and hash name the bytes. A missing user is the caller,
// a missing time is now.
func (s *Service) RecordDispatch(ctx context.Context, req *capabilityv1.RecordDispatchRequest) (*capabilityv1.RecordDispatchResponse, error) {
	ds := req.GetDispatches()
	if len(ds) == 0 {
		return nil, status.Error(codes.InvalidArgument, "dispatches is empty")
	}
	if len(ds) > MaxDispatchesPerRequest {
		return nil, status.Errorf(codes.InvalidArgument, "%d dispatches exceed the limit of %d per request", len(ds), MaxDispatchesPerRequest)
	}
	for i, d := range ds {
		if d.GetSessionId() == "" {
			return nil, status.Errorf(codes.InvalidArgument, "dispatches[%d].session_id is empty", i)
		}
		if d.GetStamp().GetSha256() == "" {
			return nil, status.Errorf(codes.InvalidArgument, "dispatches[%d].stamp.sha256 is empty", i)
		}
	}
	caller := identity.FromIncoming(ctx)
	for _, d := range ds {
		entry := &capabilityv1.Dispatch{
			User: d.GetUser(), SessionId: d.GetSessionId(), RunId: d.GetRunId(), ToolCallId: d.GetToolCallId(),
			Kind: d.GetKind(), DispatchTime: d.GetDispatchTime(),
			Stamp: &capabilityv1.StampedScript{HostApp: d.GetStamp().GetHostApp(),
				CapabilityVersion: d.GetStamp().GetCapabilityVersion(), Sha256: d.GetStamp().GetSha256()},
		}
		if entry.User == "" {
			entry.User = caller
		}
		if entry.DispatchTime == nil {
			entry.DispatchTime = timestamppb.New(s.now())
		}
		s.audit.record(entry)
		s.env.Log.InfoContext(ctx, "dispatch recorded", "session", entry.SessionId,
			"run", entry.RunId, "tool_call", entry.ToolCallId, "kind", entry.Kind.String(), "sha256", entry.Stamp.Sha256)
	}
	return &capabilityv1.RecordDispatchResponse{}, nil
}

// ListDispatches answers with a session's audit log, oldest first.
func (s *Service) ListDispatches(_ context.Context, req *capabilityv1.ListDispatchesRequest) (*capabilityv1.ListDispatchesResponse, error) {
	if req.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is empty")
	}
	return &capabilityv1.ListDispatchesResponse{Dispatches: s.audit.list(req.GetSessionId())}, nil
}

func hostError(hostApp string, err error) error {
	if hostApp == "" {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.NotFound, err.Error())
}

// Run serves the capability service alone until ctx ends.
func Run(ctx context.Context, l config.Lookuper) error {
	cfg, err := LoadConfig(ctx, l)
	if err != nil {
		return err
	}
	return app.RunGRPC(ctx, l, ServiceName, cfg.GRPCAddr, "NEXUS_GRPC_ADDR", Builder(cfg))
}

// Builder returns an app.Builder for the service, so a process can serve it
// alone or beside the others (nexus dev).
func Builder(cfg Config) app.Builder {
	return func(ctx context.Context, env *app.Env) (app.Component, error) { return New(ctx, env, cfg) }
}
