package orchestrator_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentv1 "nexus.local/gen/nexus/agent/v1"
	"nexus.local/platform/proctest"
	"nexus.local/platform/telemetry/telemetrytest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// TestRunErrorsNameTheirCode reads the orchestrator's own source (the
// service, its call and its runner): every RunError
// is written with its code named, and never the unspecified one, so no
// failure reaches a client without the code it is.
func TestRunErrorsNameTheirCode(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "call", "runner"} {
		in, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, in...)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			switch typ := lit.Type.(type) {
			case *ast.Ident:
				if typ.Name != "RunError" {
					return true
				}
			case *ast.SelectorExpr:
				if typ.Sel.Name != "RunError" {
					return true
				}
			default:
				return true
			}
			seen++
			var code ast.Expr
			for _, el := range lit.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
						code = kv.Value
					}
				}
			}
			switch c := code.(type) {
			case nil:
				t.Errorf("%s: a RunError without its code", fset.Position(lit.Pos()))
			case *ast.SelectorExpr:
				if c.Sel.Name == agentv1.ErrorCode_ERROR_CODE_UNSPECIFIED.String() || !strings.HasPrefix(c.Sel.Name, "ErrorCode_ERROR_CODE_") {
					t.Errorf("%s: a RunError with code %s, want a named agentv1.ErrorCode", fset.Position(lit.Pos()), c.Sel.Name)
				}
			}
			return true
		})
	}
	if seen < 10 {
		t.Fatalf("found %d RunError literals; the source was not read", seen)
	}
}

// TestVendorFailureKeepsItsCode: a model vendor that refuses the request
// ends the run with ERROR_CODE_MODEL_ERROR and the router's name for the
// vendor's failure, on the wire and in the runs-ended metric.
func TestVendorFailureKeepsItsCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`))
	}))
	defer vendor.Close()
	metrics := proctest.FreeAddr(t)
	stack := ot.Start(t, vendor.URL, withEnv(map[string]string{"NEXUS_METRICS_ADDR": metrics}))
	sess := newSession(ctx, t, stack.Client)
	chunks, err := ot.RunAndServe(ctx, stack.Client, &agentv1.RunRequest{SessionId: sess.GetSessionId(), Prompt: "Do it"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := chunks[len(chunks)-1].GetError()
	if e.GetCode() != agentv1.ErrorCode_ERROR_CODE_MODEL_ERROR || e.GetVendorCode() != "invalid_request" || e.GetRetryable() {
		t.Fatalf("run ended with %v, want a model error with vendor code invalid_request, not retryable", chunks[len(chunks)-1])
	}
	// A client sees the last chunk a moment before the run is counted.
	labels := map[string]string{"outcome": "failed", "error_code": "invalid_request"}
	for telemetrytest.Value(telemetrytest.Scrape(t, metrics), "nexus_runs_ended_total", labels) != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("nexus_runs_ended_total%v never reached 1", labels)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
