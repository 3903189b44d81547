// Package capability is the capability service: per-host behaviour as data.
// A registry of host providers answers with prompt guidance, view defaults and
// stamped post-commit epilogues, and keeps the dispatch audit log.
package capability

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/refusal"
	"nexus.local/platform/rpc"
	"nexus.local/platform/sqlstore"
)

// ServiceName names this service in logs, traces and metrics.
const ServiceName = "capability"

// MaxDispatchesPerRequest bounds one RecordDispatch call.
const MaxDispatchesPerRequest = 100

// Config configures the capability service.
type Config struct {
	// GRPCAddr is where the service listens when it runs alone.
	GRPCAddr string `env:"NEXUS_GRPC_ADDR, default=127.0.0.1:7103"`
	// Database is where the audit log lives: PostgreSQL, or the SQLite file
	// in the data folder.
	Database sqlstore.Config
	// AuditRetention is how long audit rows are kept; 0 keeps them forever.
	// Deleting a session does not delete them.
	AuditRetention time.Duration `env:"NEXUS_AUDIT_RETENTION, default=8760h"`
}

// LoadConfig reads Config from l and checks it.
func LoadConfig(ctx context.Context, l config.Lookuper) (Config, error) {
	return config.From[Config](ctx, l)
}

// Validate checks the database settings and the retention.
func (c *Config) Validate() error {
	if c.AuditRetention < 0 {
		return fmt.Errorf("NEXUS_AUDIT_RETENTION must not be negative (0 keeps the audit log forever), got %s", c.AuditRetention)
	}
	return c.Database.Validate()
}

// Service implements capabilityv1.CapabilityServiceServer. It keeps nothing
// in memory between calls: the audit log lives in the database, so any
// number of replicas serve one log.
type Service struct {
	capabilityv1.UnimplementedCapabilityServiceServer
	env    *app.Env
	hosts  *registry
	db     *sqlstore.DB
	ownsDB bool
	now    func() time.Time

	stopSweep context.CancelFunc
	sweepDone chan struct{}
}

// New opens the audit log's database and builds the service.
func New(ctx context.Context, env *app.Env, cfg Config) (*Service, error) {
	db, err := sqlstore.Open(ctx, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("open the audit log: %w", err)
	}
	env.Log.Info("audit log opened", "database", db.Where())
	s, err := newService(ctx, env, cfg, db, time.Now)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// newService builds the service on an open database with an injected clock,
// which stamps dispatches recorded without a time and drives the retention.
func newService(ctx context.Context, env *app.Env, cfg Config, db *sqlstore.DB, now func() time.Time) (*Service, error) {
	hosts, err := newRegistry()
	if err != nil {
		return nil, err
	}
	s := &Service{env: env, hosts: hosts, db: db, now: now, sweepDone: make(chan struct{})}
	sweepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopSweep = stop
	go func() {
		defer close(s.sweepDone)
		s.sweep(sweepCtx, cfg.AuditRetention)
	}()
	return s, nil
}

// Register adds the service to srv.
func (s *Service) Register(srv *rpc.Server) { capabilityv1.RegisterCapabilityServiceServer(srv, s) }

// Close stops the retention sweep and closes the database it opened.
func (s *Service) Close() error {
	s.stopSweep()
	<-s.sweepDone
	if s.ownsDB {
		return s.db.Close()
	}
	return nil
}

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

func hostError(hostApp string, err error) error {
	if hostApp == "" {
		return refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, err.Error())
	}
	return refusal.New(codes.NotFound, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_HOST_APP, err.Error())
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

// BuilderOn is Builder on a database the process opened already and closes
// itself: nexus dev opens the SQLite file once for every service.
func BuilderOn(cfg Config, db *sqlstore.DB) app.Builder {
	return func(ctx context.Context, env *app.Env) (app.Component, error) {
		return newService(ctx, env, cfg, db, time.Now)
	}
}
