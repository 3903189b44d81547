package codestyle

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CheckBoundaries walks root (a module's folder) and returns every import
// of a hand-written, non-test Go file that crosses a boundary of the tree:
// a service never imports another service (services/<a> importing
// services/<b>), and the gateway never imports a host (gateway/... importing
// hosts/...): the gateway knows nothing of hosts. Tests, and the packages
// that serve only tests (a folder named ...test, as orchestratortest), may:
// they start the real services and hosts they test against.
func CheckBoundaries(root string) ([]Finding, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	var out []Finding
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.Contains(","+skipDirs+",", ","+d.Name()+",") || (path != root && strings.HasSuffix(d.Name(), "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return fmt.Errorf("place %s: %w", path, err)
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				continue
			}
			if rule := crossing(filepath.ToSlash(rel), module, p); rule != "" {
				out = append(out, Finding{Pos: fset.Position(imp.Pos()), Rule: rule})
			}
		}
		return nil
	})
	return out, err
}

// crossing answers the boundary that file (a path from the module's root)
// crosses by importing path, or "".
func crossing(file, module, path string) string {
	inside, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	parts := strings.Split(file, "/")
	switch {
	case parts[0] == "services" && len(parts) > 2:
		if other, ok := strings.CutPrefix(inside, "services/"); ok {
			if name, _, _ := strings.Cut(other, "/"); name != parts[1] {
				return fmt.Sprintf("service %s imports service %s (%s): services meet only through their contracts", parts[1], name, path)
			}
		}
	case parts[0] == "gateway":
		if inside == "hosts" || strings.HasPrefix(inside, "hosts/") {
			return fmt.Sprintf("the gateway imports %s: the gateway knows nothing of hosts", path)
		}
	}
	return ""
}

// modulePath reads the module line of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("read module path: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("no module line in %s", gomod)
}
