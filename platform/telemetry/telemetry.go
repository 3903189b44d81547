// Package telemetry sets up OpenTelemetry tracing and metrics for one process.
//
// Nothing here is global: providers and the propagator are handed to the gRPC
// and HTTP instrumentation explicitly, so several services can share one process
// (nexus dev) and tests can build their own.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Config says where traces go.
type Config struct {
	// OTLPEndpoint is the collector's gRPC endpoint; empty keeps traces in process
	// (they still propagate, so one trace id spans the whole run).
	OTLPEndpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	// SampleRatio is the fraction of new traces recorded.
	SampleRatio float64 `env:"NEXUS_TRACE_SAMPLE_RATIO, default=1"`
}

// Validate refuses a sample ratio outside [0, 1] (NaN included).
func (c *Config) Validate() error {
	if !(c.SampleRatio >= 0 && c.SampleRatio <= 1) {
		return fmt.Errorf("NEXUS_TRACE_SAMPLE_RATIO=%g: want a fraction from 0 to 1", c.SampleRatio)
	}
	return nil
}

// Telemetry holds one process's providers.
type Telemetry struct {
	Tracers    *sdktrace.TracerProvider
	Meters     *sdkmetric.MeterProvider
	Propagator propagation.TextMapPropagator
	registry   *prometheus.Registry
}

// New builds the providers for a process named service.
func New(ctx context.Context, service string, cfg Config) (*Telemetry, error) {
	// OTEL_RESOURCE_ATTRIBUTES adds to the service name, e.g. a replica's
	// service.instance.id, so spans say which process made them.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}

	topts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	}
	if cfg.OTLPEndpoint != "" {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.OTLPEndpoint))
		if err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
		topts = append(topts, sdktrace.WithBatcher(exp))
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}

	return &Telemetry{
		Tracers:    sdktrace.NewTracerProvider(topts...),
		Meters:     sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(promExp)),
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		registry:   reg,
	}, nil
}

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
