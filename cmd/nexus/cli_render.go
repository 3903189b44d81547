package main

import (
	"io"
	"os"

	"nexus.local/cmd/nexus/internal/cli"
	"nexus.local/platform/config"
)

// cliIO builds what the client commands need from the process: its
// environment, and whether stdout is a terminal (styles, spinner).
func cliIO(stdout, stderr io.Writer) cli.IO {
	return cli.IO{Stdout: stdout, Stderr: stderr, TTY: isTerminal(stdout), Env: config.OS()}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
