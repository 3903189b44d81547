package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"nexus.local/hosts/freecad/launcher"
	"nexus.local/hosts/freecad/mcphost"
	"nexus.local/platform/config"
	"nexus.local/services/capability"
)

// hostMCP serves the FreeCAD runtime to a local MCP client over stdio (nexus
// host freecad --mcp): the client starts this process, speaks JSON-RPC on its
// stdin and stdout, and everything meant for a person goes to stderr. The
// runtime's own HTTP port is private to this process, so unless --addr or
// NEXUS_HOST_ADDR names one it takes a free port.
func hostMCP(ctx context.Context, fs *flag.FlagSet, opts launcher.Options, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	addrSet := false
	fs.Visit(func(f *flag.Flag) { addrSet = addrSet || f.Name == "addr" })
	if v, _ := config.OS().Lookup("NEXUS_HOST_ADDR"); v == "" && !addrSet {
		opts.Addr = "127.0.0.1:0"
	}
	guidance, stamp, err := capability.HostBehaviour("freecad")
	if err != nil {
		return fmt.Errorf("freecad guidance and change report: %w", err)
	}
	opts.Stdout, opts.Stderr = stderr, stderr
	fmt.Fprintln(stderr, "starting the FreeCAD host runtime for an MCP client on stdio...")
	rt, err := launcher.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("start freecad runtime: %w", err)
	}
	defer rt.Stop()
	fmt.Fprintf(stderr, "FreeCAD host runtime at %s; serving MCP on stdio\n", rt.URL())

	defaults := guidance.GetHost().GetViewDefaults()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcphost.New(mcphost.Config{
		Runtime:  rt.Client,
		Guidance: guidance.GetGuidance(),
		Epilogue: mcphost.Epilogue{Code: stamp.GetCode(), SHA256: stamp.GetContentHash(), CapabilityVersion: stamp.GetCapabilityVersion()},
		View:     defaults.GetView(),
		MaxPx:    defaults.GetMaxPx(),
		Log:      log,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, &mcphost.LineTransport{Reader: stdin, Writer: stdout, Log: log}) }()
	select {
	case err := <-served:
		// The client closing stdin ends the session: that is the normal way
		// a stdio server stops.
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("mcp on stdio: %w", err)
		}
		return nil
	case err := <-exited(rt):
		return err
	}
}
