package codestyle

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"strings"
)

// osPackage is the one package that calls what differs between operating
// systems; everything else builds for every target make release names.
const osPackage = "platform/osproc"

// portableSyscall names what package syscall has on Linux, macOS and
// Windows alike: the signals Go's os/signal and os.Process understand
// everywhere, and the errno a full disk reads as.
const portableSyscall = "Signal,SIGINT,SIGTERM,SIGKILL,ENOSPC"

// CheckPortable walks root and returns every use, in a hand-written,
// non-test Go file without a //go:build line outside platform/osproc, of a
// golang.org/x/sys package or of a name of syscall that not every system
// has: such a file breaks the Windows or macOS build of nexus.
func CheckPortable(root string) ([]Finding, error) {
	var out []Finding
	skip := func(rel string) bool { return rel == osPackage || rel == rootGenerated }
	err := eachSourceFile(root, skip, func(fset *token.FileSet, f *ast.File) {
		out = append(out, unportable(fset, f)...)
	})
	return out, err
}

// unportable returns the system-specific uses f makes.
func unportable(fset *token.FileSet, f *ast.File) []Finding {
	if constrained(f) {
		return nil
	}
	var out []Finding
	syscallName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case strings.HasPrefix(path, "golang.org/x/sys/"):
			out = append(out, Finding{Pos: fset.Position(imp.Pos()),
				Rule: fmt.Sprintf("import %q: what differs by system lives in nexus.local/%s", path, osPackage)})
		case path == "syscall":
			syscallName = "syscall"
			if imp.Name != nil {
				syscallName = imp.Name.Name
			}
		}
	}
	if syscallName == "" {
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == syscallName && !strings.Contains(","+portableSyscall+",", ","+sel.Sel.Name+",") {
			out = append(out, Finding{Pos: fset.Position(sel.Pos()),
				Rule: fmt.Sprintf("syscall.%s is not on every system nexus is built for: call it through nexus.local/%s", sel.Sel.Name, osPackage)})
		}
		return true
	})
	return out
}

// constrained reports a file built for some systems only: its //go:build
// line says which, and its writer chose them.
func constrained(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				return true
			}
		}
	}
	return false
}
