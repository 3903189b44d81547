// Package gateway is the public HTTP face of Nexus: JSON routes translated to
// the orchestrator's gRPC API, runs streamed as server-sent events, API-key and
// OIDC authentication, CORS, input limits, and the embedded web UI.
package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"nexus.local/gateway/openapi"
	"nexus.local/gateway/route"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	orchestratorv1 "nexus.local/gen/nexus/orchestrator/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/logging"
	"nexus.local/platform/redisclient"
	"nexus.local/platform/serve"
	"nexus.local/platform/version"
)

// ServiceName names the gateway in logs, traces and metrics.
const ServiceName = "gateway"

// readyTimeout bounds one readiness probe of the orchestrator.
const readyTimeout = 2 * time.Second

// Gateway serves the public HTTP API over one orchestrator connection.
type Gateway struct {
	cfg    Config
	env    *app.Env
	conn   *grpc.ClientConn
	client agentv1.OrchestratorServiceClient
	// runStreams follows runs in batches (batches.go).
	runStreams orchestratorv1.RunStreamServiceClient
	links      agentv1.HostLinkServiceClient
	health     healthpb.HealthClient
	auth       *authenticator
	table      *route.Finder
	streams    streamLimiter
	// shared counts requests and streams in Redis when NEXUS_REDIS_URL is set.
	shared  *sharedLimits
	handler http.Handler
	// sseWrites counts the writes of event-stream frames to clients.
	sseWrites metric.Int64Counter
}

// New dials the orchestrator (lazily: the connection is made on first use)
// and builds the HTTP handler.
func New(ctx context.Context, env *app.Env, cfg Config) (*Gateway, error) {
	if env.Identity.InternalKey == "" && !env.Identity.DevMode {
		return nil, errors.New("NEXUS_INTERNAL_KEY is not set: the gateway signs the identity it passes to the orchestrator with it")
	}
	conn, err := env.Dial(cfg.OrchestratorAddr, "NEXUS_ORCHESTRATOR_ADDR")
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	links := agentv1.NewHostLinkServiceClient(conn)
	auth, err := newAuthenticator(ctx, env.Identity, cfg.Limits, links, env.Log)
	if err != nil {
		conn.Close()
		return nil, err
	}
	g := &Gateway{
		cfg:        cfg,
		env:        env,
		conn:       conn,
		client:     agentv1.NewOrchestratorServiceClient(conn),
		runStreams: orchestratorv1.NewRunStreamServiceClient(conn),
		links:      links,
		health:     healthpb.NewHealthClient(conn),
		auth:       auth,
		table:      route.NewFinder(),
		streams:    newStreamCounter(cfg.Limits.MaxStreamsPerUser),
	}
	if g.sseWrites, err = env.Tel.Meter(ServiceName).Int64Counter("nexus.sse.writes", metric.WithUnit("{write}"),
		metric.WithDescription("Writes of server-sent event frames to clients, each flushed; several events may share one.")); err != nil {
		conn.Close()
		return nil, fmt.Errorf("gateway metrics: %w", err)
	}
	if cfg.RedisURL != "" {
		rdb, err := redisclient.New(cfg.RedisURL)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("limits store (NEXUS_REDIS_URL): %w", err)
		}
		if env.Tel.Exporting() {
			rdb.AddHook(redisclient.TraceHook(env.Tel.Tracer(ServiceName), nil))
		}
		g.shared = newSharedLimits(rdb, cfg.Limits, env.Log)
		g.streams = g.shared
	}
	if g.handler, err = g.routes(ctx); err != nil {
		g.Close()
		return nil, err
	}
	if auth.devLoopback {
		env.Log.Warn("no api keys configured: dev mode admits unauthenticated loopback callers as the local user")
	}
	return g, nil
}

// noContent answers a deleted session with 204 and no body: there is
// nothing left to describe.
func noContent(_ context.Context, w http.ResponseWriter, m proto.Message) error {
	switch m.(type) {
	case *agentv1.DeleteSessionResponse, *agentv1.RevokeHostResponse:
		w.Header().Del("Content-Type")
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// Handler is the gateway's whole HTTP surface.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Close releases the orchestrator connection.
func (g *Gateway) Close() error {
	if g.shared != nil {
		_ = g.shared.close()
	}
	return g.conn.Close()
}

func (g *Gateway) routes(ctx context.Context) (http.Handler, error) {
	// The host link and the two run streams are served as real server-sent
	// events, and a document as its bytes both ways, not as JSON: these
	// registrations take precedence over the generated ones, and read
	// their own query parameters.
	own := map[string]runtime.HandlerFunc{
		"hostLinkService_LinkHost": g.handleHostLink,
		"run":                      g.handleRun,
		"streamRunEvents":          g.handleRunEvents,
		"getCallModel":             g.handleGetCallModel,
		"getSessionDocument":       g.handleGetDocument,
		"putSessionDocument":       g.handlePutDocument,
	}
	if g.cfg.HostURL != "" && g.cfg.PairingSecret != "" {
		own["devHostPairing"] = g.handleHostPairing
	}
	strict := newQueryRoutes(apiServices()...)
	for _, rt := range route.Table() {
		if _, ok := own[rt.Operation]; ok {
			delete(strict, queryKey(rt.Method, rt.Pattern))
		}
	}
	api := runtime.NewServeMux(
		runtime.WithErrorHandler(grpcErrorHandler),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		// Nothing a client sends becomes gRPC metadata but the caller the
		// gateway authenticated: a Grpc-Metadata-X-Nexus-User header must not
		// let one user act as another.
		// The caller travels as an assertion the connection signs for the
		// user the request context carries (identity.Outgoing).
		runtime.WithIncomingHeaderMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithOutgoingHeaderMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithMarshalerOption(runtime.MIMEWildcard, decodedMarshaler{&runtime.HTTPBodyMarshaler{Marshaler: &runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{EmitUnpopulated: true},
			UnmarshalOptions: requestDecoding(),
		}}}),
		runtime.WithMiddlewares(labelRoute, strict.strictQuery),
		runtime.WithForwardResponseOption(noContent),
	)
	if err := agentv1.RegisterOrchestratorServiceHandlerClient(ctx, api, g.client); err != nil {
		return nil, fmt.Errorf("register api routes: %w", err)
	}
	if err := agentv1.RegisterHostLinkServiceHandlerClient(ctx, api, g.links); err != nil {
		return nil, fmt.Errorf("register host link routes: %w", err)
	}
	for _, rt := range route.Table() {
		if h, ok := own[rt.Operation]; ok {
			if err := api.HandlePath(rt.Method, rt.Pattern, h); err != nil {
				return nil, fmt.Errorf("register %s: %w", rt.Operation, err)
			}
		}
	}

	mux := http.NewServeMux()
	limiter := newRateLimiter(g.cfg.Limits.RateLimitRPS, g.cfg.Limits.RateLimitBurst, time.Now)
	if g.shared != nil {
		limiter.shared = g.shared
	}
	mux.Handle("/v1/", g.front(limiter, g.cfg.Server.BodyTimeout, g.hostResults(api)))
	mux.Handle(mcpPath, pointToMetadata(g.front(limiter, g.cfg.Server.BodyTimeout, g.mcpHandler())))
	mux.Handle(mcpMetadataPath, mcpResourceMetadata(g.env.Identity.OIDCIssuer))
	mux.HandleFunc("/healthz", only(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.HandleFunc("/readyz", only(http.MethodGet, g.handleReady))
	spec, err := openapi.Document(version.String())
	if err != nil {
		return nil, err
	}
	mux.HandleFunc("/openapi.json", only(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(spec)
	}))
	web, err := webHandler()
	if err != nil {
		return nil, err
	}
	mux.Handle("/", web)

	var h http.Handler = cors(splitList(g.cfg.CORSOrigins), mux)
	h = otelhttp.NewHandler(withRoute(h), ServiceName,
		otelhttp.WithTracerProvider(g.env.Tel.Tracers),
		otelhttp.WithMeterProvider(g.env.Tel.Meters),
		otelhttp.WithPropagators(g.env.Tel.Propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + routeOf(r.URL.Path) }),
	)
	return g.guard(h), nil
}

// routeOf names a path's route without its ids, so span names stay few.
func routeOf(path string) string {
	parts := strings.Split(path, "/")
	for i := 1; i < len(parts); i++ {
		if parts[i-1] == "sessions" || parts[i-1] == "runs" {
			id, verb, hasVerb := strings.Cut(parts[i], ":")
			if id != "" {
				parts[i] = "{id}"
				if hasVerb {
					parts[i] += ":" + verb
				}
			}
		}
	}
	return strings.Join(parts, "/")
}

// handleReady answers 200 only while the orchestrator reports SERVING.
func (g *Gateway) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	resp, err := g.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		// The detail (addresses included) stays in the log.
		logging.FromContext(r.Context()).Warn("orchestrator health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable",
			"orchestrator": "unreachable: check that the orchestrator runs and NEXUS_ORCHESTRATOR_ADDR names it"})
		return
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable",
			"orchestrator": resp.GetStatus().String() + ": its store or its peers are down; its log says which"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// handleHostPairing tells the web UI which host runtime nexus dev paired, so
// the person does not copy the token by hand. Only loopback callers that
// hold the pairing secret nexus dev printed get it: a page that merely
// reaches the port (through a rebound name, say) does not.
func (g *Gateway) handleHostPairing(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	if !identity.IsLoopback(r.RemoteAddr) {
		writeNotFound(w, r)
		return
	}
	secret := r.Header.Get("X-Nexus-Pairing-Secret")
	if subtle.ConstantTimeCompare([]byte(secret), []byte(g.cfg.PairingSecret)) != 1 {
		writeProblem(w, http.StatusForbidden, codes.PermissionDenied, agentv1.RefusalReason_REFUSAL_REASON_PAIRING_SECRET_REQUIRED,
			"the host pairing needs the pairing secret nexus dev printed, in X-Nexus-Pairing-Secret (open the URL nexus dev printed)", nil)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]string{"hostUrl": g.cfg.HostURL, "hostToken": g.cfg.HostToken})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// only admits one method (and HEAD with GET) and answers others with a JSON 405.
func only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			writeMethodNotAllowed(w, r, method)
			return
		}
		h(w, r)
	}
}

// Run serves the gateway alone on NEXUS_HTTP_ADDR until ctx ends.
func Run(ctx context.Context, l config.Lookuper) error {
	cfg, err := LoadConfig(ctx, l)
	if err != nil {
		return err
	}
	lis, err := app.Listen(cfg.HTTPAddr, "NEXUS_HTTP_ADDR")
	if err != nil {
		return err
	}
	return serveOn(ctx, l, cfg, lis)
}

// ServeOn serves the gateway on lis until ctx ends, then shuts down
// gracefully. nexus dev uses it to put every service in one process.
func ServeOn(ctx context.Context, l config.Lookuper, lis net.Listener) error {
	cfg, err := LoadConfig(ctx, l)
	if err != nil {
		lis.Close()
		return err
	}
	return serveOn(ctx, l, cfg, lis)
}

func serveOn(ctx context.Context, l config.Lookuper, cfg Config, lis net.Listener) error {
	defer lis.Close()
	env, err := app.NewEnv(ctx, ServiceName, l)
	if err != nil {
		return err
	}
	defer env.Close(ctx)
	ctx = env.Context(ctx)
	g, err := New(ctx, env, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", ServiceName, err)
	}
	defer g.Close()
	env.Log.Info("gateway ready", "addr", lis.Addr().String(), "orchestrator", cfg.OrchestratorAddr)
	return serve.HTTPServer(ctx, lis, &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    cfg.Server.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(env.Log.Handler(), slog.LevelDebug),
	})
}
