package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"nexus.local/platform/config"
)

// devMetricsServices are the services of nexus dev, in the order their
// internal listeners take ports from NEXUS_METRICS_ADDR.
func devMetricsServices() []string {
	return []string{"gateway", "orchestrator", "model-router", "capability"}
}

// printDevMetrics logs where each service's metrics are, when they are served.
func printDevMetrics(log *slog.Logger, lookups map[string]config.Lookuper) {
	for _, s := range devMetricsServices() {
		if addr, _ := lookups[s].Lookup("NEXUS_METRICS_ADDR"); addr != "" {
			log.Info("metrics (and /debug/pprof/)", "of", s, "url", "http://"+addr+"/metrics")
		}
	}
}

// devMetricsLookups gives each service of nexus dev its own internal
// listener: NEXUS_METRICS_ADDR=127.0.0.1:9090 serves the gateway's metrics
// on 9090, the orchestrator's on 9091, the model-router's on 9092 and the
// capability service's on 9093. Unset, none is served.
func devMetricsLookups(base config.Lookuper) (map[string]config.Lookuper, error) {
	out := map[string]config.Lookuper{}
	addr, _ := base.Lookup("NEXUS_METRICS_ADDR")
	if addr == "" {
		for _, s := range devMetricsServices() {
			out[s] = base
		}
		return out, nil
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("NEXUS_METRICS_ADDR=%s: want host:port: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535-len(devMetricsServices()) {
		return nil, fmt.Errorf("NEXUS_METRICS_ADDR=%s: nexus dev needs a fixed port below %d, and takes it and the next %d", addr, 65535-len(devMetricsServices()), len(devMetricsServices())-1)
	}
	for i, s := range devMetricsServices() {
		out[s] = config.Overlay(map[string]string{"NEXUS_METRICS_ADDR": net.JoinHostPort(host, strconv.Itoa(port+i))}, base)
	}
	return out, nil
}
