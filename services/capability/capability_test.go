package capability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
	"nexus.local/platform/serve"
)

var fixedNow = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// startGRPC serves a capability service with a fixed clock on loopback and
// answers a client over a real gRPC connection.
func startGRPC(t *testing.T, cfg Config) capabilityv1.CapabilityServiceClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// The service checks callers as it does in production: by the
	// assertion the client signs with the shared internal key.
	env, err := app.NewEnv(ctx, ServiceName, config.Map(map[string]string{"NEXUS_LOG_LEVEL": "error",
		"NEXUS_INTERNAL_KEY": "capability-test-internal-key-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := newService(env, cfg, func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := env.ServerOptions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer(env.Tel, env.Log, opts...)
	svc.Register(srv)
	srv.MarkServing()
	done := make(chan error, 1)
	go func() { done <- serve.GRPC(env.Context(ctx), lis, srv.Server) }()
	conn, err := env.Dial(lis.Addr().String(), "capability")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		<-done
	})
	return capabilityv1.NewCapabilityServiceClient(conn)
}

func TestHostsGuidanceAndEpilogues(t *testing.T) {
	c := startGRPC(t, Config{AuditPerSession: 1000, AuditSessions: 10})
	ctx := context.Background()
	hosts, err := c.ListHosts(ctx, &capabilityv1.ListHostsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts.GetHosts()) != 2 {
		t.Fatalf("want 2 hosts, got %v", hosts.GetHosts())
	}
	tests := []struct {
		host      string
		code      codes.Code
		guidance  []string
		epilogue  []string
		errSubstr string
	}{
		{host: "freecad", guidance: []string{"Building Storey", "nexus_changes()", "millimetres", "Arch.makeWall"},
			epilogue: []string{"=== CHANGE REPORT ===", "NAMED_LIMIT = 15"}},
		{host: "revit", guidance: []string{"OST_Walls", "nexus_changes()", "feet", "LevelId"},
			epilogue: []string{"=== CHANGE REPORT ===", "from Autodesk.Revit.DB import ElementId"}},
		{host: "archicad", code: codes.NotFound, errSubstr: "known hosts: freecad, revit"},
		{host: "", code: codes.InvalidArgument, errSubstr: "host_app is empty"},
	}
	for _, tt := range tests {
		t.Run("host="+tt.host, func(t *testing.T) {
			g, gerr := c.GetGuidance(ctx, &capabilityv1.GetGuidanceRequest{HostApp: tt.host})
			e, eerr := c.GetEpilogue(ctx, &capabilityv1.GetEpilogueRequest{HostApp: tt.host})
			if tt.code != codes.OK {
				for _, err := range []error{gerr, eerr} {
					if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.errSubstr) {
						t.Fatalf("want %v naming %q, got %v", tt.code, tt.errSubstr, err)
					}
				}
				return
			}
			if gerr != nil || eerr != nil {
				t.Fatal(gerr, eerr)
			}
			for _, s := range tt.guidance {
				if !strings.Contains(g.GetGuidance(), s) {
					t.Errorf("guidance lacks %q", s)
				}
			}
			st := e.GetEpilogue()
			for _, s := range tt.epilogue {
				if !strings.Contains(st.GetCode(), s) {
					t.Errorf("epilogue lacks %q", s)
				}
			}
			sum := sha256.Sum256([]byte(st.GetCode()))
			if st.GetSha256() != hex.EncodeToString(sum[:]) {
				t.Errorf("stamp %s is not the sha256 of the code", st.GetSha256())
			}
			if st.GetHostApp() != tt.host || st.GetCapabilityVersion() != g.GetHost().GetCapabilityVersion() || st.GetCapabilityVersion() == "" {
				t.Errorf("stamp names %s %s, want %s %s", st.GetHostApp(), st.GetCapabilityVersion(), tt.host, g.GetHost().GetCapabilityVersion())
			}
		})
	}
}

func TestDispatchAuditLog(t *testing.T) {
	c := startGRPC(t, Config{AuditPerSession: 3, AuditSessions: 2})
	ctx := identity.Outgoing(context.Background(), "ada@example.com")
	stamp := &capabilityv1.StampedScript{HostApp: "freecad", CapabilityVersion: "v", Sha256: "abc", Code: "print(1)"}
	record := func(session string, n int) {
		t.Helper()
		for i := range n {
			_, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{
				SessionId: session, RunId: "run-1", ToolCallId: "call-" + string(rune('a'+i)),
				Kind: capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, Stamp: stamp,
			}}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	list := func(session string) []*capabilityv1.Dispatch {
		t.Helper()
		r, err := c.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: session})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetDispatches()
	}

	t.Run("keeps the newest entries per session", func(t *testing.T) {
		record("s1", 5)
		got := list("s1")
		if len(got) != 3 || got[0].GetToolCallId() != "call-c" || got[2].GetToolCallId() != "call-e" {
			t.Fatalf("want call-c..call-e, got %v", got)
		}
		d := got[0]
		if d.GetUser() != "ada@example.com" || !d.GetDispatchTime().AsTime().Equal(fixedNow) {
			t.Errorf("want caller and injected time, got %s %v", d.GetUser(), d.GetDispatchTime().AsTime())
		}
		if d.GetStamp().GetCode() != "" || d.GetStamp().GetSha256() != "abc" {
			t.Errorf("log must keep the hash, not the code: %v", d.GetStamp())
		}
	})
	t.Run("keeps an explicit time", func(t *testing.T) {
		at := fixedNow.Add(-time.Hour)
		_, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{
			SessionId: "s2", User: "grace", Stamp: stamp, DispatchTime: timestamppb.New(at)}}})
		if err != nil {
			t.Fatal(err)
		}
		got := list("s2")
		if len(got) != 1 || got[0].GetUser() != "grace" || !got[0].GetDispatchTime().AsTime().Equal(at) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("drops the session written least recently", func(t *testing.T) {
		record("s3", 1)
		if got := list("s1"); len(got) != 0 {
			t.Fatalf("s1 should be evicted, got %d entries", len(got))
		}
		if len(list("s2")) != 1 || len(list("s3")) != 1 {
			t.Fatal("s2 and s3 must stay")
		}
	})
	bad := []struct {
		name string
		req  *capabilityv1.RecordDispatchRequest
		want string
	}{
		{"empty", &capabilityv1.RecordDispatchRequest{}, "dispatches is empty"},
		{"no session", &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{Stamp: stamp}}}, "dispatches[0].session_id is empty"},
		{"no hash", &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{SessionId: "s"}}}, "dispatches[0].stamp.sha256 is empty"},
		{"too many", &capabilityv1.RecordDispatchRequest{Dispatches: make([]*capabilityv1.Dispatch, MaxDispatchesPerRequest+1)}, "exceed the limit of 100"},
	}
	for _, tt := range bad {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			_, err := c.RecordDispatch(ctx, tt.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want InvalidArgument naming %q, got %v", tt.want, err)
			}
		})
	}
}

func TestLoadConfigRefusesBadBounds(t *testing.T) {
	ctx := context.Background()
	if _, err := LoadConfig(ctx, config.Map(map[string]string{"NEXUS_AUDIT_PER_SESSION": "0"})); err == nil ||
		!strings.Contains(err.Error(), "NEXUS_AUDIT_PER_SESSION must be at least 1") {
		t.Fatalf("want an error naming the limit, got %v", err)
	}
	cfg, err := LoadConfig(ctx, config.Map(nil))
	if err != nil || cfg.AuditPerSession != 1000 {
		t.Fatalf("want default 1000, got %v %v", cfg.AuditPerSession, err)
	}
}

// TestRevitEpilogueAgainstAPIDouble runs the Revit change report with python3
// against a double of the Revit API surface it uses.
func TestRevitEpilogueAgainstAPIDouble(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is required: ", err)
	}
	reg, err := newRegistry()
	if err != nil {
		t.Fatal(err)
	}
	p, err := reg.lookup("revit")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "epilogue.py")
	if err := os.WriteFile(script, []byte(p.epilogue), 0o600); err != nil {
		t.Fatal(err)
	}
	double, err := filepath.Abs("testdata/revitdouble")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scenario string
		want     []string
		absent   []string
	}{
		{"few", []string{
			"=== CHANGE REPORT ===",
			"7 element(s) changed: 4 added, 1 modified, 2 deleted",
			`+ #1001  Walls  Basic Wall: Generic - 200mm  "Basic Wall" on Level 1`,
			`+ #1002  Walls  Basic Wall: Generic - 200mm  "Basic Wall" on Level 2`,
			`+ #1003  Doors  Single-Flush: 0915 x 2134mm  "0915 x 2134mm" on Level 1`,
			`+ #1004  Windows  Fixed: 0915 x 1220mm  "0915 x 1220mm" on Level 2`,
			`~ #312  Levels    "Level 2"`,
			"Deleted: 2 element(s): #9001, #9002",
		}, []string{"by category and type"}},
		{"many", []string{
			"42 element(s) changed: 40 added, 0 modified, 2 deleted",
			"Added by category and type:",
			"  Walls / Basic Wall: Generic - 200mm: 30 (e.g. #2000)",
			"  Doors / Single-Flush: 0915 x 2134mm: 10 (e.g. #3000)",
			"Deleted: 2 element(s)",
			"Levels touched: Level 1",
		}, []string{"+ #"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			cmd := exec.Command(python, "testdata/revitdouble/harness.py", tt.scenario, script)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+double)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("epilogue failed: %v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(string(out), a) {
					t.Errorf("report should not contain %q:\n%s", a, out)
				}
			}
		})
	}
}
