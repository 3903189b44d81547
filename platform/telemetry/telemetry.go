// Package telemetry sets up OpenTelemetry tracing and metrics for one process.
//
// Nothing here is global: providers and the propagator are handed to the gRPC
// and HTTP instrumentation explicitly, so several services can share one process
// (nexus dev) and tests can build their own. Export and sampling follow the
// standard OTEL_* variables.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"nexus.local/platform/version"
)

// Config says where traces go and which are kept, in the variables the
// OpenTelemetry specification defines. The zero Config keeps every trace in
// process.
type Config struct {
	// Disabled turns tracing off (spans are neither sampled nor exported).
	Disabled bool `env:"OTEL_SDK_DISABLED, default=false"`
	// Exporter is "otlp" or "none"; "otlp" exports only when an endpoint is set.
	Exporter string `env:"OTEL_TRACES_EXPORTER, default=otlp"`
	// Endpoint is the collector's base URL (gRPC: http://host:4317; HTTP:
	// http://host:4318, to which /v1/traces is added). Empty keeps traces in
	// process (they still propagate, so one trace id spans the whole run).
	Endpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	// TracesEndpoint overrides Endpoint for traces and is used as it is.
	TracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`
	// Protocol is "grpc" or "http/protobuf".
	Protocol string `env:"OTEL_EXPORTER_OTLP_PROTOCOL, default=grpc"`
	// TracesProtocol overrides Protocol for traces.
	TracesProtocol string `env:"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"`
	// Headers are sent with every export, "key=value,key2=value2".
	Headers string `env:"OTEL_EXPORTER_OTLP_HEADERS"`
	// Sampler is one of always_on, always_off, traceidratio,
	// parentbased_always_on, parentbased_always_off, parentbased_traceidratio.
	Sampler string `env:"OTEL_TRACES_SAMPLER, default=parentbased_always_on"`
	// SamplerArg is the ratio of the ratio samplers, in [0, 1].
	SamplerArg string `env:"OTEL_TRACES_SAMPLER_ARG"`
}

// Validate names the OTEL_* variable that is off.
func (c *Config) Validate() error {
	var errs []error
	if c.Exporter != "" && c.Exporter != "otlp" && c.Exporter != "none" {
		errs = append(errs, fmt.Errorf("OTEL_TRACES_EXPORTER must be otlp or none, got %q", c.Exporter))
	}
	if p := c.protocol(); p != "" && p != "grpc" && p != "http/protobuf" {
		errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_PROTOCOL) must be grpc or http/protobuf, got %q", p))
	}
	if _, err := c.sampler(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.headers(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// headers parses OTEL_EXPORTER_OTLP_HEADERS ("key=value,key2=value2", values
// URL-encoded as the specification says).
func (c *Config) headers() (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(c.Headers, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas; %q is not", kv)
		}
		uv, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: value of %s: %w", strings.TrimSpace(k), err)
		}
		out[strings.TrimSpace(k)] = uv
	}
	return out, nil
}

func (c *Config) protocol() string {
	if c.TracesProtocol != "" {
		return c.TracesProtocol
	}
	return c.Protocol
}

// sampler builds the sampler OTEL_TRACES_SAMPLER names.
func (c *Config) sampler() (sdktrace.Sampler, error) {
	ratio := 1.0
	if c.SamplerArg != "" {
		r, err := strconv.ParseFloat(c.SamplerArg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG must be a ratio in [0, 1], got %q", c.SamplerArg)
		}
		ratio = r
	}
	switch c.Sampler {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio; got %q", c.Sampler)
}

// exporter returns the span exporter the settings ask for, or nil.
func (c *Config) exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	if c.Disabled || c.Exporter == "none" || (c.Endpoint == "" && c.TracesEndpoint == "") {
		return nil, nil
	}
	headers, err := c.headers()
	if err != nil {
		return nil, err
	}
	if c.protocol() == "http/protobuf" {
		endpoint := c.TracesEndpoint
		if endpoint == "" {
			endpoint = strings.TrimRight(c.Endpoint, "/") + "/v1/traces"
		}
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(headers))
		if err != nil {
			return nil, fmt.Errorf("otlp http exporter: %w", err)
		}
		return exp, nil
	}
	endpoint := c.TracesEndpoint
	if endpoint == "" {
		endpoint = c.Endpoint
	}
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint), otlptracegrpc.WithHeaders(headers))
	if err != nil {
		return nil, fmt.Errorf("otlp grpc exporter: %w", err)
	}
	return exp, nil
}

// Telemetry holds one process's providers.
type Telemetry struct {
	Tracers    *sdktrace.TracerProvider
	Meters     *sdkmetric.MeterProvider
	Propagator propagation.TextMapPropagator
	registry   *prometheus.Registry
	exporting  bool
}

// Instrumentation scopes whose metric attributes are trimmed to a fixed set,
// so no label carries a Host header, a peer address or a raw path.
const (
	scopeHTTP = "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	scopeGRPC = "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
)

// boundedKeys are the request attributes metrics keep: each has few values.
func boundedKeys() []attribute.Key {
	return []attribute.Key{
		"http.request.method", "http.response.status_code", "http.route", "url.scheme", "error.type",
		"rpc.system", "rpc.system.name", "rpc.service", "rpc.method", "rpc.grpc.status_code", "rpc.response.status_code",
	}
}

// New builds the providers for a process named service.
func New(ctx context.Context, service string, cfg Config) (*Telemetry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// OTEL_RESOURCE_ATTRIBUTES adds to the service name, e.g. a replica's
	// service.instance.id, so spans say which process made them.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	sampler, err := cfg.sampler()
	if err != nil {
		return nil, err
	}
	if cfg.Disabled {
		sampler = sdktrace.NeverSample()
	}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sampler)}
	exp, err := cfg.exporter(ctx)
	if err != nil {
		return nil, err
	}
	if exp != nil {
		topts = append(topts, sdktrace.WithBatcher(exp))
	}

	reg := prometheus.NewRegistry()
	// Beside the defaults, how long goroutines wait to run
	// (go_sched_latencies_seconds): what a request waits for on a busy
	// process that no span of its own shows.
	goCollector := collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/latencies:seconds$`)}))
	reg.MustRegister(goCollector, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "nexus_build_info", Help: "Always 1; the version label says which build of nexus runs.",
			ConstLabels: prometheus.Labels{"version": version.String()},
		}, func() float64 { return 1 }))
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	keep := attribute.NewAllowKeysFilter(boundedKeys()...)
	views := []sdkmetric.View{
		sdkmetric.NewView(sdkmetric.Instrument{Name: "*", Scope: instrumentation.Scope{Name: scopeHTTP}}, sdkmetric.Stream{AttributeFilter: keep}),
		sdkmetric.NewView(sdkmetric.Instrument{Name: "*", Scope: instrumentation.Scope{Name: scopeGRPC}}, sdkmetric.Stream{AttributeFilter: keep}),
	}

	return &Telemetry{
		Tracers: sdktrace.NewTracerProvider(topts...),
		Meters: sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(promExp), sdkmetric.WithView(views...),
			// Exemplars would carry trace ids in label sets longer than the
			// Prometheus text format allows; traces are found by their own attributes.
			sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter)),
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		registry:   reg,
		exporting:  exp != nil,
	}, nil
}

// Exporting says whether spans leave the process. Spans that only a
// collector would read (one per store round trip, say) are made only then:
// kept in the process, they would cost every sampled request their making.
func (t *Telemetry) Exporting() bool { return t.exporting }

// Tracer returns a named tracer.
func (t *Telemetry) Tracer(name string) trace.Tracer { return t.Tracers.Tracer(name) }

// Meter returns a named meter.
func (t *Telemetry) Meter(name string) metric.Meter { return t.Meters.Meter(name) }

// MetricsHandler serves the process's metrics in the Prometheus text format.
func (t *Telemetry) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.Tracers.Shutdown(ctx), t.Meters.Shutdown(ctx))
}
