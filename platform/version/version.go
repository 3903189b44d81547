// Package version says which build of nexus is running. The image build
// writes the release into version.txt before compiling (see deploy/Dockerfile);
// make build (and the image build) hand the linker the commit, and a build
// without that falls back to the commit the Go toolchain stamped, which it
// does only in a plain git clone (not in a git worktree, nor in workspace
// mode).
package version

import (
	_ "embed"
	"runtime/debug"
	"strings"
)

//go:embed version.txt
var stamped string

// commit is the commit the binary was built from, with "-dirty" when the tree
// had uncommitted changes, set by the linker: go build -ldflags
// "-X nexus.local/platform/version.commit=<sha>" (the Makefile's LDFLAGS).
//
//nexus:linkstamp
var commit string

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

// revision is the commit the linker or the toolchain stamped into the
// binary, if any, and whether its tree had uncommitted changes.
func revision() (string, bool) {
	if c := strings.TrimSpace(commit); c != "" {
		rev, dirty := strings.CutSuffix(c, "-dirty")
		return rev, dirty
	}
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
// commit it was built from, and the toolchain. A binary built without its
// commit (plain go build in a worktree, or outside a git checkout) says so
// rather than leaving the commit out silently.
func Line() string {
	release := strings.TrimSpace(stamped)
	if release == "" || release == "dev" {
		release = "dev build"
	}
	built := "commit unknown (built without its commit; make build stamps it)"
	if rev, dirty := revision(); rev != "" {
		built = "commit " + rev
		if dirty {
			built += " with uncommitted changes"
		}
	}
	return "nexus " + release + ", " + built + " (" + GoVersion() + ")"
}

// GoVersion is the toolchain that built the binary.
func GoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.GoVersion
	}
	return "unknown"
}
