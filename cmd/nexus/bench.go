package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"nexus.local/cmd/nexus/internal/bench"
	"nexus.local/cmd/nexus/internal/cli"
)

// benchCommand measures what the mesh adds to the vendor's own latency.
func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "the quick form (make test and make bench run it)")
	conc := fs.String("concurrency", "", "comma-separated numbers of concurrent streams (default 1,50,200; short 1,10,50)")
	rate := fs.Int("rate", 0, "deltas per second each stream types (default 50)")
	redis := fs.String("redis", "", `also measure with the orchestrator's state in Redis: a redis:// URL of a server of the bench's own, or "auto" to start one`)
	gateway := fs.String("gateway", "", "measure a running deployment behind this gateway URL instead of starting nexus dev")
	vendorAddr := fs.String("vendor-addr", "", "where the loopback vendor listens (with --gateway: the deployment's ANTHROPIC_BASE_URL)")
	apiKey := fs.String("api-key", os.Getenv("NEXUS_API_KEY"), "API key for --gateway")
	suspended := fs.Int("suspended", 0, "runs suspended at once for the heap figure (default 10000; short 300)")
	maxStreams := fs.Int("max-streams", 0, "where the sustained-streams ramp stops (default 2000; short 200)")
	hosts := fs.String("hosts", "", "comma-separated numbers of linked hosts the host-link delivery is measured at (default 1,10,100)")
	hostRate := fs.Int("host-rate", 0, "host-link calls started a second over all linked hosts (default 20)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	chart := fs.String("chart", "", "draw the chart as SVG into this file")
	profile := fs.String("profile", "", "record CPU profiles of the mesh during the largest level into this folder, one a second (cpu-<store>-<n>.pprof; go tool pprof merges them)")
	reference := fs.String("reference", "nginx", `a plain forwarding proxy measured beside the mesh in the same run: "nginx" (Debian's, one hop, proxy_buffering off) or "none"`)
	floor := fs.Bool("floor", true, "also measure the floor relay: the mesh's hops (two gRPC streams over mutual TLS between HTTP in and out) with none of its work")
	traceAt := fs.Int("trace", 0, "trace one run of the level of this many streams (one of --concurrency) with each store, and print its stages: the first chunk and the tool-result rendezvous")
	serveFloor := fs.String("serve-floor", "", "serve the floor relay on this address, forwarding to the vendor at --vendor-addr (nexus bench starts it; not for use by hand)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *serveFloor != "" {
		if *vendorAddr == "" {
			return cli.UsageError{Err: errors.New("bench --serve-floor needs --vendor-addr, the vendor it forwards to")}
		}
		return bench.ServeFloor(ctx, *serveFloor, "http://"+*vendorAddr)
	}
	o := bench.Full()
	if *short {
		o = bench.Short()
	}
	ref, err := bench.ParseReference(*reference)
	if err != nil {
		return err
	}
	o.Reference, o.ProfileDir, o.Floor, o.Trace = ref, *profile, *floor, *traceAt
	if *conc != "" {
		o.Concurrency = nil
		for _, f := range strings.Split(*conc, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("--concurrency: %q is not a positive number", f)
			}
			o.Concurrency = append(o.Concurrency, n)
		}
	}
	if *hosts != "" {
		o.Hosts = nil
		for _, f := range strings.Split(*hosts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("--hosts: %q is not a positive number", f)
			}
			o.Hosts = append(o.Hosts, n)
		}
	}
	for name, v := range map[string]*int{"rate": rate, "suspended": suspended, "max-streams": maxStreams, "host-rate": hostRate, "trace": traceAt} {
		if *v < 0 {
			return fmt.Errorf("--%s must not be negative, got %d", name, *v)
		}
	}
	if *rate > 0 {
		o.Rate = *rate
	}
	if *suspended > 0 {
		o.SuspendedRuns = *suspended
	}
	if *maxStreams > 0 {
		o.MaxStreams = *maxStreams
	}
	if *hostRate > 0 {
		o.HostCallRate = *hostRate
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the nexus binary: %w", err)
	}
	o.Binary, o.RedisURL, o.Gateway, o.VendorAddr, o.APIKey, o.Log = bin, *redis, *gateway, *vendorAddr, *apiKey, stderr
	rep, err := bench.Run(ctx, o)
	if rep != nil {
		rep.WriteTable(stdout)
		if *jsonOut != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
			}
			if jerr != nil {
				return fmt.Errorf("write %s: %w", *jsonOut, jerr)
			}
		}
		if *chart != "" {
			f, cerr := os.Create(*chart)
			if cerr == nil {
				cerr = rep.WriteSVG(f)
				if closeErr := f.Close(); cerr == nil {
					cerr = closeErr
				}
			}
			if cerr != nil {
				return fmt.Errorf("write %s: %w", *chart, cerr)
			}
		}
	}
	return err
}
