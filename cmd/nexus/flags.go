package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// flagHelp is the answer of a command asked for --help: its flags, for the
// cobra help every other command prints.
type flagHelp struct{ fs *flag.FlagSet }

func (flagHelp) Error() string { return "help requested" }

// flagError is a command line parseFlags refused.
type flagError struct{ err error }

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// parseFlags parses args into fs as cobra parses every other command's
// (--name value, --name=value, the same errors); with -h or --help it
// answers flagHelp instead, before the command starts anything.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if wantsHelp(args) {
		return flagHelp{fs: fs}
	}
	pfs := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	pfs.SetOutput(io.Discard)
	pfs.AddGoFlagSet(fs)
	if err := pfs.Parse(args); err != nil {
		return flagError{err}
	}
	if pfs.NArg() > 0 {
		return flagError{fmt.Errorf("unknown argument %q: %s takes flags only", pfs.Arg(0), fs.Name())}
	}
	// The flags given are set on fs too, so its Visit sees them.
	var errs []error
	pfs.Visit(func(f *pflag.Flag) { errs = append(errs, fs.Set(f.Name, f.Value.String())) })
	return errors.Join(errs...)
}

// wantsHelp reports -h or --help among the flags (before a "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}
