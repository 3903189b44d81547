// Package modelrouter is the model-router service: one narrow outbound contract
// (a streaming turn in, vendor-neutral events out) over every model vendor.
//
// Each vendor has an adapter that speaks the vendor's own HTTP and server-sent
// events wire format. The router picks the adapter from the model id
// ("vendor/model"), prepares the transcript for that vendor (foreign reasoning
// signatures dropped, images scaled to the model's vision limit), retries what
// failed before anything was streamed, and turns whatever the vendor streams
// into StreamTurnResponse events ending with the whole assistant message.
package modelrouter

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/logging"
	"nexus.local/platform/refusal"
	"nexus.local/platform/rpc"
)

// ServiceName names this service in logs, traces and metrics.
const ServiceName = "model-router"

// Config configures the model router. Vendor settings use the vendors' own
// variable names.
type Config struct {
	// GRPCAddr is where the service listens when it runs alone.
	GRPCAddr string `env:"NEXUS_GRPC_ADDR, default=127.0.0.1:7102"`
	// DefaultModel is used when a session names none.
	DefaultModel string `env:"NEXUS_DEFAULT_MODEL"`
	// CatalogPath is an optional JSON or YAML file that adds models or overrides
	// the built-in catalog entries with the same id.
	CatalogPath string `env:"NEXUS_MODEL_CATALOG"`

	// Vendor keys and base URLs. A vendor counts as configured when either is
	// set, so a keyless proxy or a loopback test server works too.
	AnthropicAPIKey  string `env:"ANTHROPIC_API_KEY"`
	AnthropicBaseURL string `env:"ANTHROPIC_BASE_URL"`
	OpenAIAPIKey     string `env:"OPENAI_API_KEY"`
	OpenAIBaseURL    string `env:"OPENAI_BASE_URL"`
	GeminiAPIKey     string `env:"GEMINI_API_KEY"`
	GeminiBaseURL    string `env:"GOOGLE_GEMINI_BASE_URL"`
	// CompatBaseURL is an OpenAI-compatible Chat Completions server (Ollama,
	// vLLM, llama.cpp), e.g. http://127.0.0.1:11434/v1.
	CompatBaseURL string `env:"NEXUS_OPENAI_COMPAT_BASE_URL"`
	// CompatAPIKey is sent as a bearer token when the server wants one.
	CompatAPIKey string `env:"NEXUS_OPENAI_COMPAT_API_KEY"`
	// CompatModels lists the models the compatible server offers, for the catalog.
	CompatModels []string `env:"NEXUS_OPENAI_COMPAT_MODELS"`

	// ReplayBaseURL is the replay vendor behind replay/demo and
	// replay/expert (nexus dev and nexus eval start one); without it the
	// replay models are listed as unavailable. The router never starts one
	// itself: the expert plays the eval tasks, which a production service
	// does not link.
	ReplayBaseURL string `env:"NEXUS_REPLAY_BASE_URL"`

	// MaxRetries caps how often one turn is re-sent after a retryable failure
	// that happened before anything was streamed.
	MaxRetries int `env:"NEXUS_MODEL_MAX_RETRIES, default=4"`
	// RetryBaseDelay is the first backoff; it doubles on every attempt.
	RetryBaseDelay time.Duration `env:"NEXUS_MODEL_RETRY_BASE_DELAY, default=1s"`
	// RetryMaxDelay caps one backoff, including a vendor's retry-after.
	RetryMaxDelay time.Duration `env:"NEXUS_MODEL_RETRY_MAX_DELAY, default=60s"`
	// StreamIdleTimeout abandons a vendor response that sends nothing for
	// this long (reasoning models can think quietly for minutes).
	StreamIdleTimeout time.Duration `env:"NEXUS_MODEL_STREAM_IDLE_TIMEOUT, default=5m"`
	// ImageHistory is how many of the newest rendered views a request carries
	// in full; older ones are replaced by a short note. The transcript the
	// person sees keeps every view.
	ImageHistory int `env:"NEXUS_IMAGE_HISTORY, default=2"`
}

// LoadConfig reads Config from l.
func LoadConfig(ctx context.Context, l config.Lookuper) (Config, error) {
	return config.From[Config](ctx, l)
}

// imageCacheSize bounds the scaled images the router keeps, in bytes: enough
// for the renders of many sessions at once.
const imageCacheSize = 128 << 20

// Sleeper waits for d or until ctx ends; tests inject one that does not wait.
type Sleeper func(ctx context.Context, d time.Duration) error

// Option adjusts a Service beyond its Config.
type Option func(*Service)

// WithSleeper replaces the real backoff wait.
func WithSleeper(s Sleeper) Option { return func(svc *Service) { svc.sleep = s } }

// Service implements modelv1.ModelRouterServiceServer.
type Service struct {
	modelv1.UnimplementedModelRouterServiceServer
	env      *app.Env
	cfg      Config
	catalog  *Catalog
	adapters map[string]adapter
	sleep    Sleeper
	images   *imageCache
	vt       *vendorTelemetry
}

// New builds the router: the catalog and one adapter per vendor.
func New(ctx context.Context, env *app.Env, cfg Config, opts ...Option) (*Service, error) {
	s := &Service{env: env, cfg: cfg, sleep: sleepContext, images: newImageCache(imageCacheSize)}
	for _, o := range opts {
		o(s)
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("NEXUS_MODEL_MAX_RETRIES=%d: must be 0 or more", cfg.MaxRetries)
	}
	if cfg.ImageHistory < 0 || cfg.ImageHistory > 20 {
		return nil, fmt.Errorf("NEXUS_IMAGE_HISTORY=%d: must be between 0 and 20", cfg.ImageHistory)
	}
	if cfg.StreamIdleTimeout <= 0 {
		return nil, fmt.Errorf("NEXUS_MODEL_STREAM_IDLE_TIMEOUT=%s: must be positive", cfg.StreamIdleTimeout)
	}
	vt, err := newVendorTelemetry(env.Tel)
	if err != nil {
		return nil, fmt.Errorf("model-router telemetry: %w", err)
	}
	s.vt = vt
	call := newCaller(cfg.StreamIdleTimeout)
	cat, err := LoadCatalog(cfg)
	if err != nil {
		return nil, err
	}
	s.catalog = cat
	s.adapters = map[string]adapter{
		VendorAnthropic: &anthropicAdapter{vendor: VendorAnthropic, baseURL: orDefault(cfg.AnthropicBaseURL, "https://api.anthropic.com"), apiKey: cfg.AnthropicAPIKey, http: call},
		VendorOpenAI:    &openaiAdapter{baseURL: orDefault(cfg.OpenAIBaseURL, "https://api.openai.com/v1"), apiKey: cfg.OpenAIAPIKey, http: call},
		VendorGemini:    &geminiAdapter{baseURL: orDefault(cfg.GeminiBaseURL, "https://generativelanguage.googleapis.com"), apiKey: cfg.GeminiAPIKey, http: call},
		VendorCompat:    &compatAdapter{baseURL: cfg.CompatBaseURL, apiKey: cfg.CompatAPIKey, http: call},
		VendorReplay:    &anthropicAdapter{vendor: VendorReplay, baseURL: strings.TrimRight(cfg.ReplayBaseURL, "/"), apiKey: "replay", http: call},
	}
	env.Log.Info("model router ready", "default_model", cat.Default, "replay", cfg.ReplayBaseURL)
	return s, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return strings.TrimRight(v, "/")
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Register adds the service to srv.
func (s *Service) Register(srv *rpc.Server) { modelv1.RegisterModelRouterServiceServer(srv, s) }

// Close releases nothing: the router holds no server of its own.
func (s *Service) Close() error { return nil }

// ListModels answers with the model catalog.
func (s *Service) ListModels(context.Context, *modelv1.ListModelsRequest) (*modelv1.ListModelsResponse, error) {
	return &modelv1.ListModelsResponse{Models: s.catalog.Infos(), DefaultModel: s.catalog.Default}, nil
}

// StreamTurn sends one turn to the vendor that serves req.Model and streams it
// back. Vendor failures become a TurnError event; only a bad request or an
// unconfigured vendor is a gRPC error.
func (s *Service) StreamTurn(req *modelv1.StreamTurnRequest, stream modelv1.ModelRouterService_StreamTurnServer) error {
	ctx := stream.Context()
	return s.streamTurn(ctx, req, func(ev *modelv1.StreamTurnResponse) error {
		s.vt.messages.Add(ctx, 1)
		return stream.Send(ev)
	})
}

// StreamTurnBatches is StreamTurn with the events that were produced while
// the last message was being sent going together as the next one.
func (s *Service) StreamTurnBatches(req *modelv1.StreamTurnBatchesRequest, stream modelv1.ModelRouterService_StreamTurnBatchesServer) error {
	ctx := stream.Context()
	b := newBatcher(func(events []*modelv1.StreamTurnResponse) error {
		s.vt.messages.Add(ctx, 1)
		return stream.Send(&modelv1.StreamTurnBatch{Events: events})
	})
	err := s.streamTurn(ctx, req.GetTurn(), b.add)
	// Everything queued leaves before the stream ends, whatever err is.
	if cerr := b.close(); err == nil {
		err = cerr
	}
	return err
}

// streamTurn runs one turn, handing each event to send.
func (s *Service) streamTurn(ctx context.Context, req *modelv1.StreamTurnRequest, send func(*modelv1.StreamTurnResponse) error) error {
	modelID := req.GetModel()
	if modelID == "" {
		modelID = s.catalog.Default
	}
	entry, err := s.catalog.Lookup(modelID)
	if err != nil {
		return refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_UNKNOWN_MODEL, err.Error())
	}
	if !entry.Available {
		return refusal.Newf(codes.FailedPrecondition, agentv1.RefusalReason_REFUSAL_REASON_MODEL_UNAVAILABLE, "model %s is not available: %s", entry.ID, entry.Note)
	}
	ad := s.adapters[entry.Vendor]
	msgs, err := prepareMessages(req.GetMessages(), entry, s.cfg.ImageHistory, s.images.scale)
	if err != nil {
		return refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, err.Error())
	}
	tools, err := parseTools(req.GetTools())
	if err != nil {
		return refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_INVALID_FIELD, err.Error())
	}
	if len(msgs) == 0 {
		return refusal.New(codes.InvalidArgument, agentv1.RefusalReason_REFUSAL_REASON_MISSING_FIELD, "messages is empty: a turn needs at least one user message")
	}
	maxTokens := req.GetMaxTokens()
	if maxTokens <= 0 || maxTokens > entry.MaxOutputTokens {
		maxTokens = entry.MaxOutputTokens
	}
	t := &turn{
		entry: entry, system: req.GetSystem(), messages: msgs, tools: tools,
		maxTokens: maxTokens, sessionID: req.GetSessionId(), allowCompaction: req.GetAllowCompaction(),
	}
	log := s.env.Log.With("session", req.GetSessionId(), "model", entry.ID)
	out := &emitter{send: send}
	return s.runTurn(logging.WithLogger(ctx, log), ad, t, out)
}

// runTurn calls the adapter, retrying failures that happened before anything
// was streamed, and reports the rest as a TurnError event.
func (s *Service) runTurn(ctx context.Context, ad adapter, t *turn, out *emitter) error {
	log := logging.FromContext(ctx)
	for attempt := 0; ; attempt++ {
		actx, call := s.vt.start(ctx, t, attempt)
		end, err := ad.stream(actx, t, out)
		if err == nil {
			end.Model = t.entry.ID
			end.Usage.CostUsd = t.entry.cost(end.Usage)
			call.ok(ctx, end)
			log.Info("turn finished", "stop", end.StopReason, "attempts", attempt+1,
				"input_tokens", end.Usage.InputTokens, "cache_read_tokens", end.Usage.CacheReadTokens,
				"output_tokens", end.Usage.OutputTokens, "cost_usd", end.Usage.CostUsd)
			return out.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_End{End: end}})
		}
		if ctx.Err() != nil {
			call.abandon(ctx.Err())
			return status.FromContextError(ctx.Err()).Err()
		}
		if out.sendErr != nil {
			call.abandon(out.sendErr)
			return out.sendErr
		}
		ve := asVendorError(t.entry.Vendor, err)
		retry := ve.Retryable && !out.sent && attempt < s.cfg.MaxRetries
		call.failed(ctx, ve, retry)
		if retry {
			wait := backoff(attempt, ve.RetryAfter, s.cfg.RetryBaseDelay, s.cfg.RetryMaxDelay)
			log.Warn("vendor call failed, retrying", "attempt", attempt+1, "wait", wait, "err", ve)
			if err := s.sleep(ctx, wait); err != nil {
				return status.FromContextError(err).Err()
			}
			continue
		}
		log.Warn("vendor call failed", "attempt", attempt+1, "streamed", out.sent, "err", ve)
		msg := ve.Error()
		if out.sent {
			msg += "; the turn had already started streaming, so its partial output is incomplete"
		} else if ve.Retryable {
			msg += fmt.Sprintf("; gave up after %d attempts", attempt+1)
		}
		return out.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Error{Error: &modelv1.TurnError{
			Code: ve.Code, Message: msg, Retryable: ve.Retryable && !out.sent,
		}}})
	}
}

// Run serves the model router alone until ctx ends.
func Run(ctx context.Context, l config.Lookuper) error {
	cfg, err := LoadConfig(ctx, l)
	if err != nil {
		return err
	}
	return app.RunGRPC(ctx, l, ServiceName, cfg.GRPCAddr, "NEXUS_GRPC_ADDR", Builder(cfg))
}

// Builder returns an app.Builder for the service.
func Builder(cfg Config, opts ...Option) app.Builder {
	return func(ctx context.Context, env *app.Env) (app.Component, error) { return New(ctx, env, cfg, opts...) }
}
