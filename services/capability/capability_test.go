package capability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	capabilityv1 "nexus.local/gen/nexus/capability/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher/launchertest"
	"nexus.local/platform/app"
	"nexus.local/platform/config"
	"nexus.local/platform/identity"
	"nexus.local/platform/rpc"
	"nexus.local/platform/serve"
	"nexus.local/platform/sqlstore"
	"nexus.local/platform/sqlstore/sqlstoretest"
)

var fixedNow = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// startGRPC serves a capability service with a fixed clock on loopback, on
// the given database, and answers a client over a real gRPC connection.
func startGRPC(t *testing.T, db *sqlstore.DB) capabilityv1.CapabilityServiceClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// The service checks callers as it does in production: by the
	// assertion the client signs with the shared internal key.
	env, err := app.NewEnv(ctx, ServiceName, config.Map(map[string]string{"NEXUS_LOG_LEVEL": "error",
		"NEXUS_INTERNAL_KEY": "capability-test-internal-key-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := newService(ctx, env, Config{}, db, func() time.Time { return fixedNow })
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
		_ = svc.Close()
	})
	return capabilityv1.NewCapabilityServiceClient(conn)
}

func TestHostsGuidanceAndEpilogues(t *testing.T) {
	c := startGRPC(t, sqlstoretest.Open(t, "sqlite"))
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
			epilogue: []string{"=== CHANGE REPORT ===", "NAMED_LIMIT = 15", "REPORT_MARKER = \"" + launchertest.ReportMarker + "\""}},
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
			if st.GetContentHash() != hex.EncodeToString(sum[:]) {
				t.Errorf("stamp %s is not the sha256 of the code", st.GetContentHash())
			}
			if st.GetHostApp() != tt.host || st.GetCapabilityVersion() != g.GetHost().GetCapabilityVersion() || st.GetCapabilityVersion() == "" {
				t.Errorf("stamp names %s %s, want %s %s", st.GetHostApp(), st.GetCapabilityVersion(), tt.host, g.GetHost().GetCapabilityVersion())
			}
		})
	}
}

// TestDispatchAuditLog runs on SQLite and on PostgreSQL: the log keeps the
// exact bytes of scripts and epilogues with their outcome.
func TestDispatchAuditLog(t *testing.T) {
	for _, kind := range sqlstoretest.Kinds() {
		t.Run(kind, func(t *testing.T) { auditLogOn(t, startGRPC(t, sqlstoretest.Open(t, kind))) })
	}
}

func stampOf(code string) *capabilityv1.StampedScript {
	sum := sha256.Sum256([]byte(code))
	return &capabilityv1.StampedScript{HostApp: "freecad", CapabilityVersion: "v", Code: code, ContentHash: hex.EncodeToString(sum[:])}
}

func auditLogOn(t *testing.T, c capabilityv1.CapabilityServiceClient) {
	ctx := identity.Outgoing(context.Background(), "ada@example.com")
	script := "import FreeCAD\r\nprint('\u00e9')\n"
	_, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{
		{SessionId: "s1", RunId: "run-1", ToolCallId: "call-a", Kind: capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION, Stamp: stampOf(script)},
		{SessionId: "s1", RunId: "run-1", ToolCallId: "call-a", Kind: capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE, Stamp: stampOf("print('report')")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	list := func(session string, code bool) []*capabilityv1.Dispatch {
		t.Helper()
		r, err := c.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: session, IncludeCode: code})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetDispatches()
	}
	t.Run("keeps the bytes and gives them on request", func(t *testing.T) {
		got := list("s1", false)
		if len(got) != 2 || got[0].GetStamp().GetCode() != "" || got[0].GetKind() != capabilityv1.ScriptKind_SCRIPT_KIND_TASK_AUTOMATION ||
			got[1].GetKind() != capabilityv1.ScriptKind_SCRIPT_KIND_EPILOGUE {
			t.Fatalf("want two rows without code, got %v", got)
		}
		d := got[0]
		if d.GetUser() != "ada@example.com" || !d.GetDispatchTime().AsTime().Equal(fixedNow) || d.GetOutcome() != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_UNSPECIFIED {
			t.Errorf("want caller, injected time and no outcome yet, got %v", d)
		}
		got = list("s1", true)
		for _, d := range got {
			sum := sha256.Sum256([]byte(d.GetStamp().GetCode()))
			if hex.EncodeToString(sum[:]) != d.GetStamp().GetContentHash() {
				t.Errorf("stored bytes do not hash to the stamp: %v", d.GetStamp())
			}
		}
		if got[0].GetStamp().GetCode() != script {
			t.Errorf("want the exact script back, got %q", got[0].GetStamp().GetCode())
		}
	})
	t.Run("records how the call ended", func(t *testing.T) {
		req := &capabilityv1.RecordOutcomeRequest{SessionId: "s1", RunId: "run-1", ToolCallId: "call-a",
			Outcome: capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK, ErrorType: "NameError"}
		if _, err := c.RecordOutcome(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RecordOutcome(ctx, req); err != nil {
			t.Fatalf("the same outcome twice is answered the same, got %v", err)
		}
		req.Outcome = capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_COMMITTED
		if _, err := c.RecordOutcome(ctx, req); status.Code(err) != codes.AlreadyExists {
			t.Fatalf("a different outcome must be refused, got %v", err)
		}
		for _, d := range list("s1", false) {
			if d.GetOutcome() != capabilityv1.DispatchOutcome_DISPATCH_OUTCOME_ROLLED_BACK || d.GetErrorType() != "NameError" {
				t.Fatalf("want rolled back with NameError on every row of the call, got %v", d)
			}
		}
	})
	t.Run("keeps an explicit time", func(t *testing.T) {
		at := fixedNow.Add(-time.Hour)
		_, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{
			SessionId: "s2", User: "grace", Stamp: stampOf("x = 1"), DispatchTime: timestamppb.New(at)}}})
		if err != nil {
			t.Fatal(err)
		}
		got := list("s2", false)
		if len(got) != 1 || got[0].GetUser() != "grace" || !got[0].GetDispatchTime().AsTime().Equal(at) {
			t.Fatalf("got %v", got)
		}
	})
	bad := []struct {
		name string
		req  *capabilityv1.RecordDispatchRequest
		want string
	}{
		{"empty", &capabilityv1.RecordDispatchRequest{}, "dispatches is empty"},
		{"no session", &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{Stamp: stampOf("x")}}}, "dispatches[0].session_id is empty"},
		{"no hash", &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{SessionId: "s"}}}, "dispatches[0].stamp.content_hash is empty"},
		{"no code", &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{SessionId: "s", Stamp: &capabilityv1.StampedScript{ContentHash: "abc"}}}}, "dispatches[0].stamp.code is empty"},
		{"wrong hash", &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{SessionId: "s3", Stamp: &capabilityv1.StampedScript{ContentHash: "abc", Code: "x"}}}}, "is not the sha256 of its code"},
		{"too many", &capabilityv1.RecordDispatchRequest{Dispatches: make([]*capabilityv1.Dispatch, MaxDispatchesPerRequest+1)}, "exceed the limit of 100"},
	}
	for _, tt := range bad {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			_, err := c.RecordDispatch(ctx, tt.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want InvalidArgument naming %q, got %v", tt.want, err)
			}
			if got := list("s3", false); len(got) != 0 {
				t.Fatalf("a refused dispatch must change nothing, got %v", got)
			}
		})
	}
}

func TestLoadConfigRefusesBadSettings(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"NEXUS_AUDIT_RETENTION": "-1h"}, "NEXUS_AUDIT_RETENTION must not be negative"},
		{map[string]string{"NEXUS_DATABASE_URL": "mysql://db/x"}, "NEXUS_DATABASE_URL must be a postgres:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if _, err := LoadConfig(ctx, config.Map(tt.env)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error naming %q, got %v", tt.want, err)
			}
		})
	}
	cfg, err := LoadConfig(ctx, config.Map(nil))
	if err != nil || cfg.AuditRetention != 365*24*time.Hour || cfg.Database.Timeout != 10*time.Second {
		t.Fatalf("want the defaults, got %+v %v", cfg, err)
	}
}

// TestRevitEpilogueAgainstAPIDouble runs the Revit change report with python3
// against the Revit API double (hosts/revit/double): the scenario is drawn
// through the API and the ids come from DocumentChanged, as in the add-in.
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
	// The Revit API double the add-in is tested against (hosts/revit).
	double, err := filepath.Abs("../../hosts/revit/double")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scenario string
		want     []string
		absent   []string
		// Building elements by change and category, and helpers by change and
		// kind, as the report's JSON line holds them.
		elements map[string]int
		helpers  map[string]int32
	}{
		{"few", []string{
			"=== CHANGE REPORT ===",
			"8 building element(s) changed: 5 added, 1 modified, 2 deleted",
			"+ #300002 Walls | Basic Wall: Generic - 200mm | Level: Level 1\n",
			"+ #300003 Walls | Basic Wall: Generic - 200mm | Level: Level 2\n",
			"+ #300004 Doors | Single-Flush: 0915 x 2134mm | Level: Level 1\n",
			"+ #300005 Windows | Fixed: 0915 x 1220mm | Level: Level 2\n",
			"+ #300006 Floors | Floor: Generic 150mm | Level: Level 1\n",
			"~ #9946 Levels | Level: 8mm Head\n",
			"Deleted: 2 element(s) no longer described: #300000, #300001",
			"\nConstruction helpers: 5 added (3 lines, 1 reference plane, 1 sketch plane); " +
				"2 modified (1 door type, 1 window type)\n",
		}, []string{"by category and type", "#300007", "#300008", "#300011", "#501 ", "#511 "},
			map[string]int{"ADDED Walls": 2, "ADDED Doors": 1, "ADDED Windows": 1, "ADDED Floors": 1, "MODIFIED Levels": 1, "DELETED Unknown": 2},
			map[string]int32{"ADDED line": 3, "ADDED sketch plane": 1, "ADDED reference plane": 1,
				"MODIFIED door type": 1, "MODIFIED window type": 1}},
		{"many", []string{
			"42 building element(s) changed: 40 added, 0 modified, 2 deleted",
			"Added by category and type:",
			"  Walls / Basic Wall: Generic - 200mm: 30 (e.g. #300002)",
			"  Doors / Single-Flush: 0915 x 2134mm: 10 (e.g. #300003)",
			"Deleted: 2 element(s)",
			"Levels touched: Level 1",
		}, []string{"+ #", "Walls |"},
			map[string]int{"ADDED Walls": 30, "ADDED Doors": 10, "DELETED Unknown": 2}, map[string]int32{"MODIFIED door type": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			cmd := exec.Command(python, "testdata/revit_harness.py", tt.scenario, script)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+double)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("epilogue failed: %v\n%s", err, out)
			}
			text, data, found := strings.Cut(strings.TrimRight(string(out), "\n"), "\n"+launchertest.ReportMarker)
			if !found || strings.Contains(data, "\n") {
				t.Fatalf("the report's last line is not %q and one JSON object:\n%s", launchertest.ReportMarker, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(text+"\n", w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(text, a) {
					t.Errorf("report should not contain %q:\n%s", a, text)
				}
			}
			report := &hostv1.ChangeReport{}
			if err := protojson.Unmarshal([]byte(data), report); err != nil {
				t.Fatalf("report line does not decode as a ChangeReport: %v\n%s", err, data)
			}
			elements, helpers := launchertest.ReportCounts(report)
			if fmt.Sprint(elements) != fmt.Sprint(tt.elements) || fmt.Sprint(helpers) != fmt.Sprint(tt.helpers) {
				t.Errorf("report data: elements %v helpers %v, want %v %v", elements, helpers, tt.elements, tt.helpers)
			}
		})
	}
}

// TestAuditRetention removes the rows older than the retention, measured on
// the service's clock, and keeps the rest.
func TestAuditRetention(t *testing.T) {
	ctx := context.Background()
	db := sqlstoretest.Open(t, "sqlite")
	env, err := app.NewEnv(ctx, ServiceName, config.Map(map[string]string{"NEXUS_LOG_LEVEL": "error"}))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := newService(ctx, env, Config{}, db, func() time.Time { return fixedNow })
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, age := range []time.Duration{48 * time.Hour, time.Hour} {
		if _, err := svc.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: []*capabilityv1.Dispatch{{
			SessionId: "s", RunId: "r", ToolCallId: age.String(), Stamp: stampOf("x = 1"), DispatchTime: timestamppb.New(fixedNow.Add(-age)),
		}}}); err != nil {
			t.Fatal(err)
		}
	}
	svc.expire(ctx, 24*time.Hour)
	got, err := svc.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetDispatches()) != 1 || got.GetDispatches()[0].GetToolCallId() != time.Hour.String() {
		t.Fatalf("want only the row of an hour ago, got %v", got.GetDispatches())
	}
}

// TestDispatchPages pages through a session's log and refuses page settings
// it cannot honour, naming the limit.
func TestDispatchPages(t *testing.T) {
	c := startGRPC(t, sqlstoretest.Open(t, "sqlite"))
	ctx := context.Background()
	var ds []*capabilityv1.Dispatch
	for i := range 5 {
		ds = append(ds, &capabilityv1.Dispatch{SessionId: "paged", RunId: "r", ToolCallId: fmt.Sprint(i), Stamp: stampOf(fmt.Sprint("x = ", i))})
	}
	if _, err := c.RecordDispatch(ctx, &capabilityv1.RecordDispatchRequest{Dispatches: ds}); err != nil {
		t.Fatal(err)
	}
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		r, err := c.ListDispatches(ctx, &capabilityv1.ListDispatchesRequest{SessionId: "paged", PageSize: 2, PageToken: token, IncludeCode: true})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range r.GetDispatches() {
			ids = append(ids, d.GetToolCallId())
		}
		got = append(got, strings.Join(ids, ""))
		if token = r.GetNextPageToken(); token == "" {
			break
		}
	}
	if strings.Join(got, " ") != "01 23 4" {
		t.Fatalf("want pages 01 23 4, got %v", got)
	}
	bad := []struct {
		req  *capabilityv1.ListDispatchesRequest
		want string
	}{
		{&capabilityv1.ListDispatchesRequest{SessionId: "paged", PageSize: MaxDispatchPageSize + 1}, "page_size must be between 1 and 1000"},
		{&capabilityv1.ListDispatchesRequest{SessionId: "paged", PageSize: -1}, "page_size must be between 1 and 1000"},
		{&capabilityv1.ListDispatchesRequest{SessionId: "paged", PageToken: "abc"}, `page_token "abc" is not one this service gave out`},
	}
	for _, tt := range bad {
		t.Run(tt.want, func(t *testing.T) {
			if _, err := c.ListDispatches(ctx, tt.req); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want InvalidArgument naming %q, got %v", tt.want, err)
			}
		})
	}
}
