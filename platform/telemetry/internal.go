package telemetry

import (
	"net/http"
	"net/http/pprof"
)

// InternalHandler is what a process serves on its internal listener
// (NEXUS_METRICS_ADDR), never on a public port: Prometheus metrics at
// /metrics and the Go profiler at /debug/pprof/.
func (t *Telemetry) InternalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.MetricsHandler())
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
