package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"nexus.local/cmd/nexus/internal/cli"
	"nexus.local/gateway"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/sqlstore"
	"nexus.local/services/capability"
	"nexus.local/services/modelrouter"
	"nexus.local/services/orchestrator"
)

// devConfig configures nexus dev.
type devConfig struct {
	HTTPAddr string `env:"NEXUS_HTTP_ADDR, default=127.0.0.1:8080"`
	// The services listen where their peers look for them, so the CLI and
	// other programs reach the dev stack at the usual addresses.
	OrchestratorAddr string `env:"NEXUS_ORCHESTRATOR_ADDR, default=127.0.0.1:7101"`
	ModelRouterAddr  string `env:"NEXUS_MODEL_ROUTER_ADDR, default=127.0.0.1:7102"`
	CapabilityAddr   string `env:"NEXUS_CAPABILITY_ADDR, default=127.0.0.1:7103"`
	// NoHost skips the FreeCAD host runtime, for machines without FreeCAD.
	NoHost bool `env:"NEXUS_DEV_NO_HOST, default=false"`
}

// devCommand runs all four services in one process, talking gRPC over
// loopback, with the in-process bus unless NEXUS_REDIS_URL is set.
func devCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg devConfig
	if err := config.Load(ctx, config.OS(), &cfg); err != nil {
		return err
	}
	hostOpts, err := launcher.LoadOptions(ctx, config.OS())
	if err != nil {
		return err
	}
	fs.BoolVar(&cfg.NoHost, "no-host", cfg.NoHost, "do not start the FreeCAD host runtime")
	fs.BoolVar(&hostOpts.GUI, "gui", hostOpts.GUI, "run the FreeCAD GUI (under Xvfb without a display) for real 3D renders")
	fs.StringVar(&hostOpts.Document, "document", hostOpts.Document, "your FreeCAD document (.FCStd): opened, and every commit saved to it; empty keeps one in the data folder")
	fs.BoolVar(&hostOpts.NoSave, "no-save", hostOpts.NoSave, "do not save commits to the document")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	dataDir, err := devDataDir()
	if err != nil {
		return err
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer lock.release()
	if !cfg.NoHost && hostOpts.Document == "" {
		doc, err := devDocument(hostOpts.NoSave)
		if err != nil {
			return err
		}
		hostOpts.Document = doc
	}
	// The terminal is the person's: what they need to start. Everything else
	// (the services' logs, FreeCAD's banner and the runtime's lines, the
	// addresses a developer looks up) goes to the log file.
	logPath, err := devLogPath(config.OS())
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the log file %s (NEXUS_LOG_FILE moves it): %w", logPath, err)
	}
	defer logFile.Close()
	devLog := slog.New(slog.NewTextHandler(logFile, nil)).With("service", "dev")
	fmt.Fprintln(stdout, "starting nexus...")

	httpLis, err := app.Listen(cfg.HTTPAddr, "NEXUS_HTTP_ADDR")
	if err != nil {
		return err
	}
	capLis, err := app.Listen(cfg.CapabilityAddr, "NEXUS_CAPABILITY_ADDR")
	if err != nil {
		return err
	}
	routerLis, err := app.Listen(cfg.ModelRouterAddr, "NEXUS_MODEL_ROUTER_ADDR")
	if err != nil {
		return err
	}
	orchLis, err := app.Listen(cfg.OrchestratorAddr, "NEXUS_ORCHESTRATOR_ADDR")
	if err != nil {
		return err
	}

	sec, err := newDevSecurity(time.Now())
	if err != nil {
		return err
	}
	overrides := map[string]string{
		"NEXUS_CAPABILITY_ADDR":    capLis.Addr().String(),
		"NEXUS_MODEL_ROUTER_ADDR":  routerLis.Addr().String(),
		"NEXUS_ORCHESTRATOR_ADDR":  orchLis.Addr().String(),
		"NEXUS_DEV_MODE":           "true",
		"NEXUS_INTERNAL_KEY":       sec.internalKey,
		"NEXUS_TLS_CA":             string(sec.ca.CertPEM()),
		"NEXUS_TLS_CERT":           string(sec.cert),
		"NEXUS_TLS_KEY":            string(sec.key),
		"NEXUS_DEV_PAIRING_SECRET": sec.pairingSecret,
		"NEXUS_LOG_FILE":           logPath,
	}
	statePath, err := cli.DevStatePath(config.OS())
	if err != nil {
		return err
	}
	if err := lock.say(devHolder{PID: os.Getpid(), URL: "http://" + httpLis.Addr().String(), Started: time.Now()}); err != nil {
		return err
	}
	if err := cli.WriteDevState(statePath, cli.DevState{
		PID: os.Getpid(), DataDir: dataDir, OrchestratorAddr: orchLis.Addr().String(), GatewayURL: "http://" + httpLis.Addr().String(),
		CAPEM: string(sec.ca.CertPEM()), PairingSecret: sec.pairingSecret,
	}); err != nil {
		return err
	}
	defer cli.RemoveDevState(statePath, os.Getpid())

	g, gctx := errgroup.WithContext(ctx)
	var rt *launcher.Runtime
	if !cfg.NoHost {
		hostOpts.AllowedOrigin = "http://" + httpLis.Addr().String()
		// The runtime links to this stack as the local user's host at
		// once: its calls are carried whether or not anybody follows a run.
		linkToken, err := devLinkToken()
		if err != nil {
			return err
		}
		hostOpts.Connect, hostOpts.LinkToken = "http://"+httpLis.Addr().String(), linkToken
		overrides["NEXUS_DEV_LINK_TOKEN"] = hostOpts.LinkToken
		hostOpts.Stdout, hostOpts.Stderr = logFile, logFile
		hostOpts.OnRestart = func(reason string) {
			// The person's FreeCAD went away under them: say so where they look.
			fmt.Fprintf(stdout, "FreeCAD stopped and was restarted with the document as of its last commit: %s\n", reason)
			devLog.Warn("freecad restarted", "reason", reason)
		}
		rt, err = launcher.Start(ctx, hostOpts)
		if err != nil {
			return fmt.Errorf("start freecad runtime (set NEXUS_DEV_NO_HOST=true to run without it): %w", err)
		}
		defer rt.Stop()
		overrides["NEXUS_DEV_HOST_URL"] = rt.URL()
		overrides["NEXUS_DEV_HOST_TOKEN"] = rt.Token()
		g.Go(func() error {
			select {
			case <-gctx.Done():
				return nil
			case err := <-exited(rt):
				return err
			}
		})
		devLog.Info("freecad host runtime", "url", rt.URL(), "document", rt.SavesTo())
	}
	if err := devReplay(ctx, overrides, config.OS(), devLog); err != nil {
		return err
	}
	lookup := config.Overlay(overrides, config.OS())
	metricsLookup, err := devMetricsLookups(lookup)
	if err != nil {
		return err
	}

	capCfg, err := capability.LoadConfig(ctx, lookup)
	if err != nil {
		return err
	}
	routerCfg, err := modelrouter.LoadConfig(ctx, lookup)
	if err != nil {
		return err
	}
	orchCfg, err := orchestrator.LoadConfig(ctx, lookup)
	if err != nil {
		return err
	}

	// What must last lives in one database for every service: the SQLite
	// file in the data folder unless NEXUS_DATABASE_URL names PostgreSQL.
	db, err := sqlstore.Open(ctx, capCfg.Database)
	if err != nil {
		return err
	}
	defer db.Close()

	g.Go(func() error {
		return app.ServeGRPCOn(gctx, metricsLookup["capability"], capability.ServiceName, capLis, capability.BuilderOn(capCfg, db))
	})
	g.Go(func() error {
		return app.ServeGRPCOn(gctx, metricsLookup["model-router"], modelrouter.ServiceName, routerLis, modelrouter.Builder(routerCfg))
	})
	g.Go(func() error {
		return app.ServeGRPCOn(gctx, metricsLookup["orchestrator"], orchestrator.ServiceName, orchLis, orchestrator.BuilderOn(orchCfg, db))
	})
	g.Go(func() error { return gateway.ServeOn(gctx, metricsLookup["gateway"], httpLis) })

	devLog.Info("orchestrator grpc over tls from an in-memory ca", "addr", orchLis.Addr().String(), "cli_state", statePath)
	devLog.Info("mcp endpoint (streamable http)", "url", "http://"+httpLis.Addr().String()+"/mcp")
	printDevMetrics(devLog, metricsLookup)

	url := fmt.Sprintf("http://%s/#pair=%s", httpLis.Addr(), sec.pairingSecret)
	fmt.Fprintf(stdout, "\nnexus is running at %s\n", url)
	demo := false
	if cat, err := modelrouter.LoadCatalog(routerCfg); err == nil && strings.HasPrefix(cat.Default, modelrouter.VendorReplay+"/") {
		demo = true
	}
	fmt.Fprintln(stdout, "  next: "+devNext(demo, cfg.NoHost))
	fmt.Fprintln(stdout, "  data: "+devData(db, rt, logPath))
	fmt.Fprintln(stdout, "  terminal: "+devTerminal())
	fmt.Fprintln(stdout, "Ctrl-C stops it.")
	err = g.Wait()
	if err == nil && ctx.Err() != nil {
		// One process stops: nothing carries on elsewhere, and nothing is lost.
		fmt.Fprintln(stdout, "\nstopping nexus: sessions, run history and the document are kept for the next start")
	}
	return err
}
