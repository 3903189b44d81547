// Package version says which build of nexus is running. The image build
// writes the release into version.txt before compiling (see deploy/Dockerfile);
// a build from a git checkout adds the commit the Go toolchain stamped.
package version

import (
	_ "embed"
	"runtime/debug"
	"strings"
)

//go:embed version.txt
var stamped string

// String is the release, e.g. "0.1.0", or "dev+<commit>" for a local build.
func String() string {
	v := strings.TrimSpace(stamped)
	if v == "" {
		v = "dev"
	}
	if v != "dev" {
		return v
	}
	if rev, dirty := revision(); rev != "" {
		v += "+" + rev
		if dirty {
			v += "-dirty"
		}
	}
	return v
}

// revision is the VCS commit the toolchain stamped into the binary, if any.
func revision() (string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev, dirty
}

// Line is what `nexus version` prints: the release or "dev build", the
// commit it was built from, and the toolchain. A binary built without version
// control stamping (GOFLAGS=-buildvcs=false, or outside a git checkout) says
// so rather than leaving the commit out silently.
func Line() string {
	release := strings.TrimSpace(stamped)
	if release == "" || release == "dev" {
		release = "dev build"
	}
	commit := "commit unknown (built without version control stamping; make build stamps it)"
	if rev, dirty := revision(); rev != "" {
		commit = "commit " + rev
		if dirty {
			commit += " with uncommitted changes"
		}
	}
	return "nexus " + release + ", " + commit + " (" + GoVersion() + ")"
}

// GoVersion is the toolchain that built the binary.
func GoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.GoVersion
	}
	return "unknown"
}
