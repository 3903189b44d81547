package codestyle

// This file follows one value through the calls that pass it on, and counts
// the files the trip enters: how far apart the code that handles one thing
// stands.

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// maxTripEntries bounds a trip, so a walk that branches without end stops.
const maxTripEntries = 1600

// TripEntry names where a trip starts: a function or method of a package,
// and the parameter (or receiver) followed.
type TripEntry struct {
	// Package is the import path, e.g. nexus.local/services/orchestrator/call.
	Package string
	// Func is Name for a function, Type.Name for a method.
	Func string
	// Follow is the name of the parameter or receiver the trip follows.
	Follow string
}

// Trip is what following a value found: every function entered, in order,
// and the stays, the runs of consecutive entries into one file.
type Trip struct {
	// Entries are the functions entered, each as file:function.
	Entries []string
	// Stays are the files of the trip's stays, in order.
	Stays []string
}

// Files is how many stays each file had.
func (t Trip) Files() map[string]int {
	out := map[string]int{}
	for _, f := range t.Stays {
		out[f]++
	}
	return out
}

// Returns is how often the trip came back to a file it had left.
func (t Trip) Returns() int { return len(t.Stays) - len(t.Files()) }

// String gives the figures and the stays, one a line.
func (t Trip) String() string {
	var b strings.Builder
	files := t.Files()
	fmt.Fprintf(&b, "%d files entered %d times, %d returns to a file left before\n", len(files), len(t.Stays), t.Returns())
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Slice(names, func(i, j int) bool {
		if files[names[i]] != files[names[j]] {
			return files[names[i]] > files[names[j]]
		}
		return names[i] < names[j]
	})
	for _, f := range names {
		fmt.Fprintf(&b, "  %2d  %s\n", files[f], f)
	}
	b.WriteString("functions entered, in order:\n")
	for i, e := range t.Entries {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, e)
	}
	return b.String()
}

// FollowValue walks from e through the functions of the packages under
// scope (an import path prefix) in the module at root, following one value:
// the parameter e.Follow and its parts. A part is a name bound to the value
// or to a part (x := p.GetToolCall()), a field, a getter with no arguments,
// an index, an address or a dereference of one. A call is followed when it
// receives a part as an argument or as its receiver and its function is
// declared, in a non-test file, under scope; the function's parameters (and
// receiver) that receive parts are followed in it. A value computed from a
// part (a call with it as argument, a copy, a closure) is a new value and is
// not followed. Calls through an interface are not followed (which function
// runs is chosen as the program runs), nor is a function already on the way
// (recursion). Every branch is walked, in the order the code is written.
func FollowValue(root, scope string, e TripEntry) (Trip, error) {
	idx, err := loadFuncs(root, scope)
	if err != nil {
		return Trip{}, err
	}
	start, ok := idx.funcs[e.Package+"."+e.Func]
	if !ok {
		return Trip{}, fmt.Errorf("no function %s in package %s", e.Func, e.Package)
	}
	var tracked []types.Object
	for _, obj := range start.params() {
		if obj != nil && obj.Name() == e.Follow {
			tracked = append(tracked, obj)
		}
	}
	if len(tracked) == 0 {
		return Trip{}, fmt.Errorf("%s has no parameter or receiver named %s", e.Func, e.Follow)
	}
	w := &walker{idx: idx, onWay: map[*funcDecl]bool{}}
	w.walk(start, tracked)
	if len(w.trip.Entries) >= maxTripEntries {
		return w.trip, fmt.Errorf("the trip from %s went past %d entries", e.Func, maxTripEntries)
	}
	return w.trip, nil
}

type walker struct {
	idx   *funcIndex
	onWay map[*funcDecl]bool
	trip  Trip
}

func (w *walker) walk(fd *funcDecl, tracked []types.Object) {
	if len(w.trip.Entries) >= maxTripEntries {
		return
	}
	w.trip.Entries = append(w.trip.Entries, fd.file+":"+declName(fd.decl))
	if n := len(w.trip.Stays); n == 0 || w.trip.Stays[n-1] != fd.file {
		w.trip.Stays = append(w.trip.Stays, fd.file)
	}
	w.onWay[fd] = true
	defer delete(w.onWay, fd)
	mine := map[types.Object]bool{}
	for _, o := range tracked {
		mine[o] = true
	}
	info := fd.info
	ast.Inspect(fd.decl.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if len(x.Lhs) == len(x.Rhs) {
				for i, rhs := range x.Rhs {
					if isPart(info, mine, rhs) {
						if id, ok := x.Lhs[i].(*ast.Ident); ok {
							if o := objectOf(info, id); o != nil {
								mine[o] = true
							}
						}
					}
				}
			}
		case *ast.CallExpr:
			callee, recv := w.callee(info, x)
			if callee == nil || w.onWay[callee] {
				return true
			}
			params := callee.params()
			var next []types.Object
			hasRecv := callee.decl.Recv != nil
			if hasRecv && recv != nil && isPart(info, mine, recv) && params[0] != nil {
				next = append(next, params[0])
			}
			args := params
			if hasRecv {
				args = params[1:]
			}
			variadic := callee.decl.Type.Params != nil && len(callee.decl.Type.Params.List) > 0 &&
				isEllipsis(callee.decl.Type.Params.List[len(callee.decl.Type.Params.List)-1].Type)
			for i, a := range x.Args {
				j := i
				if j >= len(args) {
					if !variadic || len(args) == 0 {
						break
					}
					j = len(args) - 1
				}
				if args[j] != nil && isPart(info, mine, a) {
					next = append(next, args[j])
				}
			}
			if len(next) > 0 {
				w.walk(callee, next)
			}
		}
		return true
	})
}

func isEllipsis(e ast.Expr) bool { _, ok := e.(*ast.Ellipsis); return ok }

func objectOf(info *types.Info, id *ast.Ident) types.Object {
	if o := info.Defs[id]; o != nil {
		return o
	}
	return info.Uses[id]
}

// callee is the function a call runs when it is one of the index's, and the
// receiver's expression for a method.
func (w *walker) callee(info *types.Info, call *ast.CallExpr) (*funcDecl, ast.Expr) {
	fun := ast.Unparen(call.Fun)
	switch x := fun.(type) {
	case *ast.IndexExpr:
		fun = x.X
	case *ast.IndexListExpr:
		fun = x.X
	}
	var fn *types.Func
	var recv ast.Expr
	switch x := fun.(type) {
	case *ast.Ident:
		fn, _ = info.Uses[x].(*types.Func)
	case *ast.SelectorExpr:
		if sel := info.Selections[x]; sel != nil {
			if sel.Kind() != types.MethodVal {
				return nil, nil
			}
			fn, _ = sel.Obj().(*types.Func)
			recv = x.X
		} else {
			fn, _ = info.Uses[x.Sel].(*types.Func)
		}
	}
	if fn == nil {
		return nil, nil
	}
	key, ok := funcKey(fn)
	if !ok {
		return nil, nil
	}
	return w.idx.funcs[key], recv
}

// isPart says whether e is one of the followed names or a part of one.
func isPart(info *types.Info, mine map[types.Object]bool, e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return mine[objectOf(info, x)]
	case *ast.ParenExpr:
		return isPart(info, mine, x.X)
	case *ast.SelectorExpr:
		if info.Selections[x] == nil {
			return false // a package's name
		}
		return isPart(info, mine, x.X)
	case *ast.StarExpr:
		return isPart(info, mine, x.X)
	case *ast.UnaryExpr:
		return x.Op == token.AND && isPart(info, mine, x.X)
	case *ast.IndexExpr:
		return isPart(info, mine, x.X)
	case *ast.CallExpr:
		sel, ok := ast.Unparen(x.Fun).(*ast.SelectorExpr)
		return ok && len(x.Args) == 0 && info.Selections[sel] != nil && isPart(info, mine, sel.X)
	}
	return false
}
