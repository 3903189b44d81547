package codestyle

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// wordMatchers are the functions that match text against words.
func wordMatchers() map[string]bool {
	return map[string]bool{
		"strings.Contains": true, "strings.HasPrefix": true, "strings.HasSuffix": true, "strings.EqualFold": true,
		"strings.Index": true, "strings.Count": true, "strings.CutPrefix": true, "strings.CutSuffix": true,
		"bytes.Contains": true, "regexp.MatchString": true,
	}
}

// wordsOf holds the names a function gave an error's words (msg :=
// st.Message()), which read the same words.
type wordsOf map[string]bool

// errorWords says whether e reads the words of an error: err.Error(),
// st.Message() (a gRPC status), a field named as an error's sentence
// (Message, Detail, message, detail) of a value whose name says it is an
// error, or a name given to one of those.
func (w wordsOf) errorWords(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return w[x.Name]
	case *ast.ParenExpr:
		return w.errorWords(x.X)
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) == 0 {
			return sel.Sel.Name == "Error" || sel.Sel.Name == "Message"
		}
		// strings.ToLower(err.Error()) and the like read the same words.
		if len(x.Args) == 1 {
			return w.errorWords(x.Args[0])
		}
	case *ast.SelectorExpr:
		switch x.Sel.Name {
		case "Message", "Detail", "message", "detail":
			return w.errorish(x.X)
		}
	}
	return false
}

// names collects the names fn gives an error's words.
func (w wordsOf) names(fn ast.Node) {
	ast.Inspect(fn, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
			for i, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && w.errorWords(as.Rhs[i]) {
					w[id.Name] = true
				}
			}
		}
		return true
	})
}

// errorish says whether e names an error value: err, e, st, apiErr,
// resp.Error, ....
func (w wordsOf) errorish(e ast.Expr) bool {
	var name string
	switch x := e.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	case *ast.CallExpr:
		return w.errorWords(x) || w.errorish(x.Fun)
	default:
		return false
	}
	n := strings.ToLower(name)
	return n == "e" || n == "st" || strings.Contains(n, "err") || strings.Contains(n, "status") || strings.Contains(n, "problem")
}

// stringLit says whether e is a string literal with words: comparing with
// "" asks whether there are any, not which.
func stringLit(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && lit.Value != `""` && lit.Value != "``"
}

// findGoWordMatches returns every place in the hand-written, non-test Go
// files under root where code decides by an error's words: a matcher of
// wordMatchers or a comparison with a string literal on err.Error(),
// st.Message() or an error body's message.
func findGoWordMatches(t *testing.T, root string, allowed map[string]string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.Contains(","+skipDirs+",", ","+d.Name()+",") || path == filepath.Join(root, "gen") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		report := func(n ast.Node, what string) {
			pos := fset.Position(n.Pos())
			if _, ok := allowed[rel+" "+what]; ok {
				return
			}
			out = append(out, rel+":"+strconv.Itoa(pos.Line)+": "+what+" decides by an error's words: decide by its RefusalReason (platform/refusal)")
		}
		w := wordsOf{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				w = wordsOf{}
				w.names(x)
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || !wordMatchers()[pkg.Name+"."+sel.Sel.Name] {
					return true
				}
				words, lit := false, false
				for _, a := range x.Args {
					words = words || w.errorWords(a)
					lit = lit || stringLit(a)
				}
				if words && lit {
					report(x, pkg.Name+"."+sel.Sel.Name)
				}
			case *ast.BinaryExpr:
				if x.Op != token.EQL && x.Op != token.NEQ {
					return true
				}
				if (w.errorWords(x.X) && stringLit(x.Y)) || (w.errorWords(x.Y) && stringLit(x.X)) {
					report(x, x.Op.String())
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tsWordMatch finds a TypeScript client deciding by an error's words: a
// message or detail matched with includes, startsWith, endsWith, indexOf,
// match, search or compared with ==, or a regular expression tested on one.
func tsWordMatch() *regexp.Regexp {
	return regexp.MustCompile(`\b(message|detail|msg)\s*(\.\s*(includes|startsWith|endsWith|indexOf|match|search)\s*\(|[!=]==?)|\.test\([^)]*\b(message|detail|msg)\b`)
}

// findTSWordMatches returns every line of the hand-written, non-test
// TypeScript and JavaScript of dir that decides by an error's words.
func findTSWordMatches(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	re := tsWordMatch()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.Contains(","+skipDirs+",dist,", ","+d.Name()+",") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if (ext != ".ts" && ext != ".mjs" && ext != ".js") || strings.Contains(filepath.Base(path), ".test.") || strings.HasSuffix(path, ".d.ts") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			if re.MatchString(sc.Text()) {
				out = append(out, path+":"+strconv.Itoa(line)+": "+strings.TrimSpace(sc.Text())+": decide by the problem's reason, never by its words")
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// errorWordsAllowed are matches of an error's words that are not a client
// deciding about a refusal of ours, each with its reason; path and what
// must both match.
func errorWordsAllowed() map[string]string {
	return map[string]string{
		// RESP puts a Redis error's kind as its first word (OOM,
		// EXECABORT); go-redis has no other way to read it.
		"services/orchestrator/state/redisstate/redisstate.go strings.HasPrefix": "Redis's error kind",
		// grpc-go says a message is over its size only in words.
		"platform/rpc/limits.go strings.Contains": "gRPC's own refusal",
		// protojson's sentence of a body it could not decode, reworded
		// for a person; nothing is decided by it.
		"gateway/errors.go strings.CutPrefix": "protojson's own sentence",
	}
}

// TestNoClientMatchesErrorWords: no client of Nexus (the CLI, the MCP
// server, the gateway, the web UI, the services calling each other) decides
// by the words of an error; refusals carry a RefusalReason for that.
func TestNoClientMatchesErrorWords(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findGoWordMatches(t, root, errorWordsAllowed()) {
		t.Error(f)
	}
	for _, f := range findTSWordMatches(t, filepath.Join(root, "gateway", "web", "src")) {
		t.Error(f)
	}
}

// TestPlantedWordMatchingClientFound proves the check above finds a client
// that matches an error's words, in Go and in TypeScript, and leaves a
// client that decides by the reason alone.
func TestPlantedWordMatchingClientFound(t *testing.T) {
	root := t.TempDir()
	planted := `package p

import (
	"strings"

	"google.golang.org/grpc/status"
)

func conflict(err error) bool { return strings.Contains(err.Error(), "already decided") }

func pending(err error) bool { return status.Convert(err).Message() == "no call is pending" }

func named(err error) bool {
	msg := err.Error()
	return msg != "" && strings.HasSuffix(msg, "not found")
}

type apiError struct{ Message string }

func gone(e *apiError) bool { return strings.HasPrefix(e.Message, "session") }

func byReason(reason string) bool { return reason == "REFUSAL_REASON_ALREADY_DECIDED" }
`
	if err := os.WriteFile(filepath.Join(root, "p.go"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "p_test.go"), []byte("package p\n\nimport \"strings\"\n\nfunc ok(err error) bool { return strings.Contains(err.Error(), \"x\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := findGoWordMatches(t, root, nil)
	if len(got) != 4 || !strings.HasPrefix(got[0], "p.go:9:") || !strings.HasPrefix(got[1], "p.go:11:") || !strings.HasPrefix(got[2], "p.go:15:") ||
		!strings.HasPrefix(got[3], "p.go:20:") {
		t.Errorf("found %q, want p.go lines 9, 11, 15 and 20", got)
	}
	web := filepath.Join(root, "web")
	if err := os.MkdirAll(web, 0o755); err != nil {
		t.Fatal(err)
	}
	ts := `export function conflict(e: Error): boolean {
  return e.message.includes("already decided");
}
export function gone(p: { detail: string }): boolean {
  return /not found/.test(p.detail);
}
export function byReason(p: { reason: string }): boolean {
  return p.reason === "REFUSAL_REASON_ALREADY_DECIDED";
}
`
	if err := os.WriteFile(filepath.Join(web, "client.ts"), []byte(ts), 0o644); err != nil {
		t.Fatal(err)
	}
	got = findTSWordMatches(t, web)
	if len(got) != 2 || !strings.Contains(got[0], "client.ts:2:") || !strings.Contains(got[1], "client.ts:5:") {
		t.Errorf("found %q, want client.ts lines 2 and 5", got)
	}
}
