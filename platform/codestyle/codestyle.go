// Package codestyle checks the house rules that go vet does not: no package
// state but constants, no init functions, no panics, no context.TODO, and error
// messages that say what was being done rather than "failed to"; and the
// boundaries of the tree (boundaries.go): a service never imports another
// service, the gateway never imports a host; and portability (portable.go):
// what differs between operating systems is called through platform/osproc.
package codestyle

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Finding is one broken rule.
type Finding struct {
	Pos  token.Position
	Rule string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.Rule) }

// skipDirs are never Go source of ours.
const skipDirs = "node_modules,bin,testdata,.git"

// Check walks root and returns every finding in hand-written, non-test Go files.
func Check(root string) ([]Finding, error) {
	var out []Finding
	err := eachSourceFile(root, func(string) bool { return false }, func(fset *token.FileSet, f *ast.File) {
		out = append(out, checkFile(fset, f)...)
	})
	return out, err
}

// eachSourceFile parses every hand-written, non-test Go file below root,
// but in the folders skipDirs names and those skip says to leave (by their
// path from root, with slashes), and hands each to visit.
func eachSourceFile(root string, skip func(rel string) bool, visit func(*token.FileSet, *ast.File)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return fmt.Errorf("place %s: %w", path, err)
			}
			if strings.Contains(","+skipDirs+",", ","+d.Name()+",") || skip(filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		if !ast.IsGenerated(f) {
			visit(fset, f)
		}
		return nil
	})
}

func checkFile(fset *token.FileSet, f *ast.File) []Finding {
	var out []Finding
	add := func(n ast.Node, rule string) { out = append(out, Finding{Pos: fset.Position(n.Pos()), Rule: rule}) }

	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == "init" {
				add(d, "init function: construct state explicitly instead")
			}
		case *ast.GenDecl:
			if d.Tok != token.VAR || isEmbed(d) || isLinkStamp(d) {
				continue
			}
			for _, spec := range d.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, name := range vs.Names {
					if name.Name != "_" {
						add(name, "package-level variable "+name.Name+": only constants may be global")
					}
				}
			}
		}
	}

	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fun := call.Fun.(type) {
		case *ast.Ident:
			if fun.Name == "panic" {
				add(call, "panic: return an error")
			}
		case *ast.SelectorExpr:
			if x, ok := fun.X.(*ast.Ident); ok {
				if x.Name == "context" && fun.Sel.Name == "TODO" {
					add(call, "context.TODO: pass the caller's context")
				}
				if (x.Name == "fmt" && fun.Sel.Name == "Errorf") || (x.Name == "errors" && fun.Sel.Name == "New") {
					if len(call.Args) > 0 {
						if lit, ok := call.Args[0].(*ast.BasicLit); ok {
							if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(strings.ToLower(s), "failed to") {
								add(call, `error message starts with "failed to": say what was being done`)
							}
						}
					}
				}
			}
		}
		return true
	})
	return out
}

// isLinkStamp reports whether a var declaration is marked //nexus:linkstamp:
// a string the linker sets (go build -ldflags -X), which requires a
// package-level variable. It must have no value of its own.
func isLinkStamp(d *ast.GenDecl) bool {
	if d.Doc == nil || len(d.Specs) != 1 {
		return false
	}
	vs, ok := d.Specs[0].(*ast.ValueSpec)
	if !ok || len(vs.Values) > 0 || len(vs.Names) != 1 {
		return false
	}
	if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "string" {
		return false
	}
	for _, c := range d.Doc.List {
		if c.Text == "//nexus:linkstamp" {
			return true
		}
	}
	return false
}

// isEmbed reports whether a var declaration is filled by //go:embed, which
// requires a package-level variable.
func isEmbed(d *ast.GenDecl) bool {
	for _, g := range []*ast.CommentGroup{d.Doc} {
		if g == nil {
			continue
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:embed ") {
				return true
			}
		}
	}
	for _, spec := range d.Specs {
		if vs, ok := spec.(*ast.ValueSpec); ok && vs.Doc != nil {
			for _, c := range vs.Doc.List {
				if strings.HasPrefix(c.Text, "//go:embed ") {
					return true
				}
			}
		}
	}
	return false
}
