package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"nexus.local/platform/proctest"
)

// commandPaths walks the command tree: every command a person can ask
// --help of.
func commandPaths() [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out = append(out, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	started := false
	walk(rootCommand(nil, &bytes.Buffer{}, &bytes.Buffer{}, &started), nil)
	return out
}

// TestHelpStartsNothing asks every command for --help (and -h) as its own
// process: each exits 0, prints its usage to stdout, and makes no listen
// system call (strace -f), while every port the services would take is held
// by the test so a service that started would fail.
func TestHelpStartsNothing(t *testing.T) {
	bin, err := proctest.Build(".", filepath.Join(t.TempDir(), "nexus"))
	if err != nil {
		t.Fatal(err)
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is needed to see that help listens on no port: apt-get install strace")
	}
	env := append(os.Environ(), append(proctest.HoldServicePorts(t), "NEXUS_DEV_STATE="+filepath.Join(t.TempDir(), "dev.json"))...)
	paths := commandPaths()
	if len(paths) < 12 {
		t.Fatalf("found only %d commands: %v", len(paths), paths)
	}
	for _, path := range paths {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, path...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				trace := filepath.Join(t.TempDir(), "trace")
				cmd := exec.CommandContext(ctx, strace, append([]string{"-f", "-qq", "-e", "trace=listen", "-o", trace, bin}, args...)...)
				cmd.Env = env
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var exit *exec.ExitError
				if err != nil && !errors.As(err, &exit) {
					t.Fatal(err)
				}
				if code := cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("nexus %s exited %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
				}
				if !strings.Contains(strings.ToLower(stdout.String()), "usage") {
					t.Errorf("nexus %s printed no usage to stdout:\n%s", strings.Join(args, " "), stdout.String())
				}
				// One style for every command: cobra's.
				if !strings.Contains(stdout.String(), "Usage:\n  nexus") || !strings.Contains(stdout.String(), "-h, --help") {
					t.Errorf("nexus %s's help is not in the style of the others (Usage:, -h, --help):\n%s", strings.Join(args, " "), stdout.String())
				}
				calls, err := os.ReadFile(trace)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(calls), "listen(") {
					t.Errorf("nexus %s listened:\n%s", strings.Join(args, " "), calls)
				}
			})
		}
	}
}
