package corpus_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/corpus"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/sqlstore/sqlstoretest"
	"nexus.local/services/capability"
)

// host is the runtime under test with what the corpus sends it.
type host struct {
	rt       *launcher.Runtime
	epilogue *hostv1.Epilogue
	dump     string
}

func (h *host) execute(t *testing.T, req *hostv1.ExecuteRequest) *hostv1.HostResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := h.rt.Client.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// run sends code in mode with the real epilogue.
func (h *host) run(t *testing.T, mode hostv1.Mode, code string) *hostv1.HostResult {
	t.Helper()
	return h.execute(t, &hostv1.ExecuteRequest{Mode: mode, Code: code, TransactionName: "Corpus", Epilogue: h.epilogue})
}

// snapshot takes the independent dump of the whole document.
func (h *host) snapshot(t *testing.T) corpus.Dump {
	t.Helper()
	res := h.execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: h.dump})
	if res.GetError() != nil {
		t.Fatalf("dump: %s: %s", res.GetError().GetType(), res.GetError().GetMessage())
	}
	d, err := corpus.ParseDump(res.GetStdout())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// reset empties the document, as the suites' tearDown closes theirs.
func (h *host) reset(t *testing.T) {
	t.Helper()
	res := h.execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_TRANSACTION, Code: emptyDocument})
	if res.GetError() != nil {
		t.Fatalf("empty the document: %s: %s", res.GetError().GetType(), res.GetError().GetMessage())
	}
	if d := h.snapshot(t); len(d) != 0 {
		t.Fatalf("the document still holds %d objects", len(d))
	}
}

// emptyDocument removes every object (what one removal takes with it is
// skipped) and clears the undo history.
const emptyDocument = `for _ in range(10):
    for name in [o.Name for o in doc.Objects][::-1]:
        if doc.getObject(name) is not None:
            doc.removeObject(name)
    if not doc.Objects:
        break
doc.clearUndos()
`

func newHost(t *testing.T) *host {
	t.Helper()
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0",
		AllowedOrigin: "http://127.0.0.1:18080", StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	dump, err := os.ReadFile("dump.py")
	if err != nil {
		t.Fatal(err)
	}
	return &host{rt: rt, epilogue: stampedEpilogue(t), dump: string(dump)}
}

// stampedEpilogue is the FreeCAD epilogue as the capability service stamps it.
func stampedEpilogue(t *testing.T) *hostv1.Epilogue {
	t.Helper()
	ctx := context.Background()
	env, err := app.NewEnv(ctx, capability.ServiceName, config.Map(map[string]string{"NEXUS_LOG_LEVEL": "error"}))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := capability.New(ctx, env, capability.Config{Database: sqlstoretest.Config(t, "sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	e, err := svc.GetEpilogue(ctx, &capabilityv1.GetEpilogueRequest{HostApp: "freecad"})
	if err != nil {
		t.Fatal(err)
	}
	return &hostv1.Epilogue{Code: e.GetEpilogue().GetCode(), ContentHash: e.GetEpilogue().GetContentHash()}
}

// load converts the suites of the FreeCAD the runtime runs.
func load(t *testing.T, h *host) corpus.Corpus {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is required to convert FreeCAD's suites: ", err)
	}
	res := h.execute(t, &hostv1.ExecuteRequest{Mode: hostv1.Mode_MODE_READ_ONLY, Code: "print(App.getResourceDir())"})
	if res.GetError() != nil {
		t.Fatalf("ask FreeCAD for its resource folder: %v", res.GetError())
	}
	mod := filepath.Join(strings.TrimSpace(res.GetStdout()), "Mod")
	c, err := corpus.Convert(context.Background(), python, ".", mod)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Skipped {
		t.Logf("skipped %s: %s", s.Name, s.Why)
	}
	return c
}
