package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"nexus.local/hosts/revit"
	"nexus.local/platform/hostclient"
)

// hostRevitCommand runs the Revit add-in's runtime: nexus host revit
// --double. Revit itself runs only on Windows with a licence, so here the
// runtime runs on the Revit API double under python3; inside Revit the
// extension's Connect button starts the same runtime.
func hostRevitCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("host revit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	onDouble := fs.Bool("double", false, "run the add-in's runtime on the Revit API double (plain CPython), the one way there is off Revit")
	addr := fs.String("addr", envOr("NEXUS_HOST_ADDR", hostclient.DefaultAddr), "loopback address to serve on")
	connect := fs.String("connect", os.Getenv("NEXUS_HOST_CONNECT"), "link the runtime to Nexus at this gateway URL (comma-separated for several): it carries its own calls, pairing first if it has no host token")
	version := fs.Int("revit-version", 2026, "the Revit version the double plays, 2023 to 2027 (ids: IntegerValue before 2024, Value from 2024, both until 2026)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*onDouble {
		return errors.New("host revit: the runtime runs inside Revit, started from the Nexus ribbon's Connect button " +
			"(install it with make revit-addin; see hosts/revit/README.md); off Revit, run it on the double: nexus host revit --double")
	}
	o := revit.Options{Addr: *addr, Token: os.Getenv("NEXUS_HOST_TOKEN"), AllowedOrigin: os.Getenv("NEXUS_HOST_ALLOWED_ORIGIN"),
		RevitVersion: *version, Connect: *connect, LinkToken: os.Getenv("NEXUS_HOST_LINK_TOKEN"),
		LinkTokenFile: os.Getenv("NEXUS_HOST_LINK_TOKEN_FILE"), Stderr: stderr}
	if o.Connect != "" && o.LinkTokenFile == "" {
		var err error
		if o.LinkTokenFile, err = linkTokenFile("revit"); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "starting the Revit add-in's runtime on the Revit API double...")
	p, err := revit.Start(ctx, o)
	if err != nil {
		return fmt.Errorf("start revit runtime: %w", err)
	}
	defer p.Stop()
	fmt.Fprintf(stdout, "Revit host runtime (on the Revit API double, Revit %d) at %s\npairing token: %s\n", *version, p.URL, p.Token)
	select {
	case <-ctx.Done():
		return nil
	case <-p.Done():
		return fmt.Errorf("revit runtime exited: %v", p.Err())
	}
}
