package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/config"
	"nexus.local/platform/hostclient"
)

// hostCommand runs a host runtime: nexus host freecad [flags]. It serves until
// Ctrl-C, printing the URL and pairing token a courier needs.
func hostCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "freecad" {
		return fmt.Errorf("usage: nexus host freecad [--addr %s] [--document FILE.FCStd [--no-save]] [--gui] [--mcp] [--connect URL] | --install-addon [--mod-dir DIR]", hostclient.DefaultAddr)
	}
	opts, err := launcher.LoadOptions(ctx, config.OS())
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("host freecad", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.Addr, "addr", opts.Addr, "loopback address to serve on")
	fs.StringVar(&opts.Document, "document", opts.Document, "your FreeCAD document (.FCStd): opened, and every commit saved to it (created at the first commit if missing); empty opens a new one saved nowhere")
	fs.BoolVar(&opts.NoSave, "no-save", opts.NoSave, "open --document without saving commits to it")
	fs.BoolVar(&opts.GUI, "gui", opts.GUI, "run the FreeCAD GUI (under Xvfb without a display) for real 3D renders")
	fs.StringVar(&opts.Connect, "connect", opts.Connect, "link the runtime to Nexus at this gateway URL (comma-separated for several): it carries its own calls, pairing first if it has no host token")
	mcpStdio := fs.Bool("mcp", false, "serve the runtime to a local MCP client over stdin/stdout instead of printing its URL")
	install := fs.Bool("install-addon", false, "copy the Nexus add-on into FreeCAD's Mod folder and say where, instead of running the runtime")
	modDir := fs.String("mod-dir", "", "with --install-addon: FreeCAD's Mod folder (empty asks freecadcmd where it is)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *install {
		return installAddon(ctx, stdout, *modDir, opts.FreeCADCmd)
	}
	if *mcpStdio {
		return hostMCP(ctx, fs, opts, os.Stdin, os.Stdout, stderr)
	}
	opts.Stdout, opts.Stderr = stderr, stderr
	opts.OnRestart = func(reason string) {
		fmt.Fprintf(stdout, "FreeCAD stopped and was restarted with the document as of its last commit: %s\n", reason)
	}
	if opts.Connect != "" && opts.LinkTokenFile == "" {
		if opts.LinkTokenFile, err = linkTokenFile("freecad"); err != nil {
			return err
		}
	}

	fmt.Fprintln(stdout, "starting the FreeCAD host runtime...")
	rt, err := launcher.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("start freecad runtime: %w", err)
	}
	defer rt.Stop()
	fmt.Fprintf(stdout, "FreeCAD host runtime at %s\npairing token: %s\n", rt.URL(), rt.Token())
	printDocument(stdout, rt)

	select {
	case <-ctx.Done():
		return nil
	case err := <-exited(rt):
		return err
	}
}

// printDocument says where commits go, so the person knows which file
// holds their work.
func printDocument(stdout io.Writer, rt *launcher.Runtime) {
	if to := rt.SavesTo(); to != "" {
		fmt.Fprintf(stdout, "document %s: every commit is saved to it\n", to)
		return
	}
	fmt.Fprintln(stdout, "document: not saved to any file (--document FILE saves every commit to FILE)")
}

// exited reports, once, why a runtime process ended on its own.
func exited(rt *launcher.Runtime) <-chan error {
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

// linkTokenFile is where a linked runtime of app keeps its host token unless
// NEXUS_HOST_LINK_TOKEN_FILE says otherwise: the user's config folder.
func linkTokenFile(app string) (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find where to keep the host token (set NEXUS_HOST_LINK_TOKEN_FILE): %w", err)
	}
	return filepath.Join(dir, "nexus", "host-"+app+".token"), nil
}
