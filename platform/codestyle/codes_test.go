package codestyle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"google.golang.org/protobuf/reflect/protoreflect"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
	"nexus.local/platform/enumname"
)

// errorCodeNames are the spellings of every failure code outside its enum:
// the short names of the run's and the turn's error codes and of the
// refusals' reasons ("rate_limited", "host_unreachable", "no_pending_call"),
// and the execution conditions as the runtime names them in ExecError.type
// ("RevisionChanged").
func errorCodeNames() map[string]string {
	out := map[string]string{}
	for _, d := range []protoreflect.EnumDescriptor{agentv1.ErrorCode(0).Descriptor(), modelv1.TurnErrorCode(0).Descriptor(), agentv1.RefusalReason(0).Descriptor()} {
		for _, n := range enumname.Names(d) {
			out[n] = string(d.FullName())
		}
	}
	cond := hostv1.ExecCondition(0).Descriptor()
	for _, n := range enumname.Names(cond) {
		var camel strings.Builder
		for _, part := range strings.Split(n, "_") {
			r := []rune(part)
			r[0] = unicode.ToUpper(r[0])
			camel.WriteString(string(r))
		}
		out[camel.String()] = string(cond.FullName())
	}
	return out
}

// codeWords are literals that spell a code but say something else, each
// with its reason; path and literal must both match.
func codeWords() map[string]string {
	return map[string]string{
		// The vendors' own words in their error kinds, which this file maps
		// to TurnErrorCode: the enum's mapping.
		"services/modelrouter/vendorerror.go " + `"overloaded"`:  "a vendor's error kind",
		"services/modelrouter/vendorerror.go " + `"unavailable"`: "a vendor's error kind",
		"services/modelrouter/vendorerror.go " + `"internal"`:    "a vendor's error kind",
		// Anthropic's stop_reason on the wire.
		"services/modelrouter/anthropic.go " + `"max_tokens"`: "a vendor's stop reason",
		// The /readyz body's status word.
		"gateway/gateway.go " + `"unavailable"`: "readiness status",
		// A run's outcome label in metrics, beside its error_code label.
		"services/orchestrator/metrics/metrics.go " + `"cancelled"`: "outcome label",
		// A structured log's attribute key.
		"services/orchestrator/replica.go " + `"timeout"`: "log key",
	}
}

// findCodeLiterals returns every string literal in the hand-written,
// non-test Go files under root that spells a failure code: code compares
// and sets the enums, and the short names come from package enumname.
func findCodeLiterals(t *testing.T, root string, names map[string]string) []string {
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
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil {
				rel, _ := filepath.Rel(root, fset.Position(lit.Pos()).Filename)
				if _, word := codeWords()[filepath.ToSlash(rel)+" "+lit.Value]; word {
					return true
				}
				if enum, ok := names[s]; ok {
					out = append(out, rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value+" spells a value of "+enum+": use the enum")
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

// TestNoErrorCodeLiterals is the grep of the failure codes: none is written
// as a string in hand-written code.
func TestNoErrorCodeLiterals(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findCodeLiterals(t, root, errorCodeNames()) {
		t.Error(f)
	}
}

// TestCodeLiteralsFound proves the check above finds a code written as text
// and leaves the enum alone.
func TestCodeLiteralsFound(t *testing.T) {
	root := t.TempDir()
	src := "package p\n\nfunc f(code string) bool { return code == \"bad_tool_input\" || code == \"RevisionChanged\" }\n\nconst ok = \"thinking\"\n"
	if err := os.WriteFile(filepath.Join(root, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "p_test.go"), []byte("package p\n\nconst want = \"overloaded\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := findCodeLiterals(t, root, errorCodeNames())
	if len(got) != 2 || !strings.Contains(got[0], `"bad_tool_input"`) || !strings.Contains(got[1], `"RevisionChanged"`) {
		t.Fatalf("found %q, want bad_tool_input and RevisionChanged in p.go", got)
	}
}
