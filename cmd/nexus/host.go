package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"nexus.local/platform/config"
	"nexus.local/services/capability/hostrt"
)

// hostCommand runs a host runtime: nexus host freecad [flags]. It serves until
// Ctrl-C, printing the URL and pairing token a courier needs.
func hostCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "freecad" {
		return fmt.Errorf("usage: nexus host freecad [--addr 127.0.0.1:7723] [--document FILE.FCStd] [--gui] [--mcp] [--connect URL]")
	}
	opts, err := hostrt.LoadOptions(ctx, config.OS())
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("host freecad", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.Addr, "addr", opts.Addr, "loopback address to serve on")
	fs.StringVar(&opts.Document, "document", opts.Document, "FreeCAD document (.FCStd) to open; empty opens a new one")
	fs.BoolVar(&opts.GUI, "gui", opts.GUI, "run the FreeCAD GUI (under Xvfb without a display) for real 3D renders")
	fs.StringVar(&opts.Connect, "connect", opts.Connect, "link the runtime to Nexus at this gateway URL (comma-separated for several): it carries its own calls, pairing first if it has no host token")
	mcpStdio := fs.Bool("mcp", false, "serve the runtime to a local MCP client over stdin/stdout instead of printing its URL")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *mcpStdio {
		return hostMCP(ctx, fs, opts, os.Stdin, os.Stdout, stderr)
	}
	opts.Stdout, opts.Stderr = stderr, stderr
	if opts.Connect != "" && opts.LinkTokenFile == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("find where to keep the host token (set NEXUS_HOST_LINK_TOKEN_FILE): %w", err)
		}
		opts.LinkTokenFile = filepath.Join(dir, "nexus", "host-freecad.token")
	}

	fmt.Fprintln(stdout, "starting the FreeCAD host runtime...")
	rt, err := hostrt.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("start freecad runtime: %w", err)
	}
	defer rt.Stop()
	fmt.Fprintf(stdout, "FreeCAD host runtime at %s\npairing token: %s\n", rt.URL(), rt.Token())

	select {
	case <-ctx.Done():
		return nil
	case err := <-exited(rt):
		return err
	}
}

// exited reports, once, why a runtime process ended on its own.
func exited(rt *hostrt.Runtime) <-chan error {
	c := make(chan error, 1)
	go func() {
		err := rt.Wait()
		if err == nil {
			err = errors.New("exited")
		}
		c <- fmt.Errorf("freecad runtime: %w", err)
	}()
	return c
}
