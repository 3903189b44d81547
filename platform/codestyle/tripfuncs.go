package codestyle

// This file loads the functions a trip may enter: the packages under a
// scope, type-checked from their source.

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// funcDecl is a function a trip may enter, with its file and its
// package's type information.
type funcDecl struct {
	decl *ast.FuncDecl
	file string // relative to the module's root
	info *types.Info
}

// params are the receiver's and the parameters' objects, in order; nil for
// an unnamed one.
func (f *funcDecl) params() []types.Object {
	var out []types.Object
	add := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, field := range fl.List {
			if len(field.Names) == 0 {
				out = append(out, nil)
			}
			for _, n := range field.Names {
				out = append(out, f.info.Defs[n])
			}
		}
	}
	add(f.decl.Recv)
	add(f.decl.Type.Params)
	return out
}

// funcIndex is the functions a trip may enter, by package path and name.
type funcIndex struct {
	funcs map[string]*funcDecl
}

// loadFuncs type-checks the packages under scope from their source, with
// their dependencies read from the build's export data.
func loadFuncs(root, scope string) (*funcIndex, error) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Standard", scope+"/...")
	cmd.Dir = root
	// The module at root alone, whatever workspace the caller's GOWORK
	// names (make test exports the repository's, which a module made by a
	// test is not part of).
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", scope, err)
	}
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles                 []string
	}
	exports := map[string]string{}
	var mine []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("read go list: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if p.ImportPath == scope || strings.HasPrefix(p.ImportPath, scope+"/") {
			mine = append(mine, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	idx := &funcIndex{funcs: map[string]*funcDecl{}}
	for _, p := range mine {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", name, err)
			}
			files = append(files, f)
		}
		info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			return nil, fmt.Errorf("type-check %s: %w", p.ImportPath, err)
		}
		for _, f := range files {
			rel, err := filepath.Rel(root, fset.Position(f.Pos()).Filename)
			if err != nil {
				return nil, err
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				idx.funcs[p.ImportPath+"."+declName(fd)] = &funcDecl{decl: fd, file: filepath.ToSlash(rel), info: info}
			}
		}
	}
	return idx, nil
}

// declName is Name, or Type.Name for a method.
func declName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// funcKey is the index's key of fn, and false for a method of an interface.
func funcKey(fn *types.Func) (string, bool) {
	fn = fn.Origin()
	if fn.Pkg() == nil {
		return "", false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil || sig.Recv() == nil {
		return fn.Pkg().Path() + "." + fn.Name(), true
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := t.(*types.Named)
	if !ok || types.IsInterface(named) {
		return "", false
	}
	return fn.Pkg().Path() + "." + named.Obj().Name() + "." + fn.Name(), true
}
