package codestyle

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// ssePackage is the one package that spells the fields of server-sent
// events; every other reader and writer goes through it.
const ssePackage = "platform/sse"

// sseFrame matches a string literal that writes or picks apart a frame of
// server-sent events by hand: a field with its colon alone ("data:") or
// with its value ("data: %s", "id: 7\n"), a field after a line break
// ("event: x\ndata: "), or a comment frame, a comment line and the blank
// line after it (": keepalive\n\n"; a sentence that starts with a colon is
// not one).
const sseFrame = `^(data|event|id|retry):($| |%)|\n(data|event|id|retry):|^:[^\n]*\n\n$`

// dataURL matches the one other use of the word: a data URL
// ("data:image/png;base64,...").
const dataURL = `^data:[a-z]+/`

// CheckSSEFrames walks root and returns every string literal of a
// hand-written, non-test Go file outside platform/sse that spells a frame
// of server-sent events. A data URL ("data:" + a media type + ";base64,")
// is not one.
func CheckSSEFrames(root string) ([]Finding, error) {
	var out []Finding
	skip := func(rel string) bool { return rel == ssePackage || rel == rootGenerated }
	err := eachSourceFile(root, skip, func(fset *token.FileSet, f *ast.File) {
		out = append(out, sseFrames(fset, f)...)
	})
	return out, err
}

// sseFrames returns the frames f spells by hand.
func sseFrames(fset *token.FileSet, f *ast.File) []Finding {
	frame, url := regexp.MustCompile(sseFrame), regexp.MustCompile(dataURL)
	// The literals of an expression that builds a data URL by parts.
	urlParts := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if b, ok := n.(*ast.BinaryExpr); ok && b.Op == token.ADD {
			lits := stringLits(b)
			for _, l := range lits {
				if v, _ := strconv.Unquote(l.Value); strings.Contains(v, ";base64,") {
					for _, l := range lits {
						urlParts[l] = true
					}
					return false
				}
			}
		}
		return true
	})
	var out []Finding
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || urlParts[lit] {
			return true
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil || url.MatchString(v) || !frame.MatchString(v) {
			return true
		}
		out = append(out, Finding{Pos: fset.Position(lit.Pos()),
			Rule: fmt.Sprintf("server-sent event field %q spelled by hand: read and write events with nexus.local/%s", v, ssePackage)})
		return true
	})
	return out
}

// stringLits are the string literals of a sum of strings.
func stringLits(e ast.Expr) []*ast.BasicLit {
	switch x := e.(type) {
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			return append(stringLits(x.X), stringLits(x.Y)...)
		}
	case *ast.ParenExpr:
		return stringLits(x.X)
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			return []*ast.BasicLit{x}
		}
	}
	return nil
}
