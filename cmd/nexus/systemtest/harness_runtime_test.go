package systemtest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"nexus.local/gateway"
	agentv1 "nexus.local/gen/nexus/agent/v1"
	hostv1 "nexus.local/gen/nexus/host/v1"
	"nexus.local/hosts/freecad/launcher"
	"nexus.local/platform/config"
	"nexus.local/platform/proctest"
	ot "nexus.local/services/orchestrator/orchestratortest"
)

// linkUserKey is the API key of the one user startLinkGateway admits.
const linkUserKey = "key-link-user"

// startLinkGateway serves a gateway in front of stack for one user.
func startLinkGateway(t *testing.T, stack *ot.Stack) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- gateway.ServeOn(ctx, config.Map(map[string]string{
			"NEXUS_ORCHESTRATOR_ADDR": stack.Addr, "NEXUS_API_KEYS": linkUserKey + ":linker", "NEXUS_INTERNAL_KEY": ot.InternalKey,
			"NEXUS_RATE_LIMIT_RPS": "0", "NEXUS_LOG_LEVEL": "error",
		}), lis)
	}()
	t.Cleanup(func() { cancel(); <-errc })
	return "http://" + lis.Addr().String()
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// roomCensus counts what the demo room is made of in the runtime's document.
const roomCensus = `import Draft
for o in doc.Objects:
    print(Draft.getType(o), getattr(o, "IfcType", ""), sep="|")
`

// countRoom reads the document of nexus dev's runtime and counts walls,
// doors, windows and levels.
func countRoom(t *testing.T, env []string) map[string]int {
	t.Helper()
	res, failure := devHost(t, env).Carry(t.Context(), "", &agentv1.ToolCall{ToolCallId: "census", HostRequest: &agentv1.ToolCall_Execute{
		Execute: &hostv1.ExecuteRequest{ToolCallId: "census-" + time.Now().Format("150405.000000"), Mode: hostv1.Mode_MODE_READ_ONLY, Code: roomCensus}}})
	if failure != nil || res.GetError() != nil {
		t.Fatalf("read the document: %v %v", failure, res.GetError())
	}
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(res.GetStdout()), "\n") {
		typ, ifc, _ := strings.Cut(line, "|")
		switch {
		case typ == "Wall":
			n["wall"]++
		case strings.Contains(ifc, "Door") || typ == "Door":
			n["door"]++
		case typ == "Window":
			n["window"]++
		case typ == "Floor" || typ == "BuildingPart" || strings.Contains(ifc, "Storey"):
			n["level"]++
		}
	}
	t.Logf("document: %s", strings.ReplaceAll(strings.TrimSpace(res.GetStdout()), "\n", ", "))
	return n
}

// devObjects lists the names of the objects in the document of nexus dev's
// FreeCAD runtime, read through the runtime as any courier reaches it.
func devObjects(t *testing.T, env []string) []string {
	t.Helper()
	res, failure := devHost(t, env).Carry(t.Context(), "", &agentv1.ToolCall{ToolCallId: "check", HostRequest: &agentv1.ToolCall_Execute{
		Execute: &hostv1.ExecuteRequest{ToolCallId: "check", Mode: hostv1.Mode_MODE_READ_ONLY, Code: "for o in doc.Objects:\n    print(o.Name)\n"}}})
	if failure != nil || res.GetError() != nil {
		t.Fatalf("read the document: %v %v", failure, res.GetError())
	}
	return strings.Fields(res.GetStdout())
}

// pairCode is how the kit's link client names the code a person approves.
var pairCode = regexp.MustCompile(`approve code (\S+) at`)

// linkRevitDouble starts `nexus host revit --double --connect` against the
// nexus dev at base, pairs it (nexus hosts approve CODE) and waits until it
// is linked and online: its loopback address (token revit-pair) and the
// linked hosts.
func linkRevitDouble(t *testing.T, bin string, env []string, base string) (string, linkedHosts) {
	t.Helper()
	// Picked once nexus dev holds its own ports (see TestRevitRunThroughTheMesh).
	hostAddr := freeAddr(t)
	tokenFile := filepath.Join(t.TempDir(), "host-revit.token")
	host := proctest.Start(t, bin, "host revit --double --connect", []string{"NEXUS_HOST_TOKEN=revit-pair", "NEXUS_HOST_LINK_TOKEN=",
		"NEXUS_HOST_LINK_TOKEN_FILE=" + tokenFile}, "host", "revit", "--double", "--addr", hostAddr, "--connect", base)
	var code string
	waitFor(t, "the revit runtime to ask for a pairing", linkPatience, func() bool {
		if !host.Running() {
			t.Fatalf("the revit runtime ended:\n%s", host.Output())
		}
		if m := pairCode.FindStringSubmatch(host.Output()); m != nil {
			code = m[1]
		}
		return code != ""
	})
	approve := exec.Command(bin, "hosts", "approve", code)
	approve.Env = append(os.Environ(), append(env, "NEXUS_GATEWAY_URL="+base)...)
	if out, err := approve.CombinedOutput(); err != nil || !strings.Contains(string(out), "linked revit host") {
		t.Fatalf("nexus hosts approve %s: %v\n%s", code, err, out)
	}
	var hosts linkedHosts
	waitFor(t, "the revit runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", "", nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].HostApp == "revit" && hosts.LinkedHosts[0].Online
	})
	if b, err := os.ReadFile(tokenFile); err != nil || !strings.HasPrefix(string(b), "nxh_") {
		t.Errorf("the paired host token was not kept in %s: %q, %v", tokenFile, b, err)
	}
	return hostAddr, hosts
}

// revitWallCount reads, over the runtime's loopback contract, how many walls
// the document on the double holds.
func revitWallCount(t *testing.T, hostURL, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hostURL+"/v1/execute", strings.NewReader(
		`{"mode":"MODE_READ_ONLY","code":"from Autodesk.Revit.DB import *\nprint(FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Walls).WhereElementIsNotElementType().GetElementCount())\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Stdout string `json:"stdout"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(res.Stdout)
}

// startOneCallStack starts a scripted model that asks for one automation,
// code, as call id, and answers done once told its result; the services
// in-process around it; and a gateway for linkUserKey's user in front of
// them: the gateway's base URL.
func startOneCallStack(t *testing.T, id, description, code, done string) string {
	t.Helper()
	vendor := ot.NewAnthropicFunc(t, func(r ot.Request) ot.Turn {
		if len(r.ToolResults()) > 0 {
			return ot.Turn{Blocks: []ot.Block{ot.Text(done)}}
		}
		return ot.Turn{Blocks: []ot.Block{ot.ToolUse(id, "execute_task_automation", map[string]any{"description": description, "code": code})}}
	})
	stack := ot.Start(t, vendor.URL, map[string]string{"NEXUS_LOG_LEVEL": "error"})
	return startLinkGateway(t, stack)
}

// startLinkedFreeCAD starts a real FreeCAD runtime linked to the gateway at
// base with the host token token; onRestart, when given, hears each restart
// of its FreeCAD process. It stops when the test ends.
func startLinkedFreeCAD(t *testing.T, base, token string, onRestart func(reason string)) *launcher.Runtime {
	t.Helper()
	rt, err := launcher.Start(context.Background(), launcher.Options{Addr: "127.0.0.1:0", Connect: base, LinkToken: token, StartTimeout: 5 * time.Minute,
		OnRestart: onRestart})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop() })
	return rt
}

// waitLinked waits until key's user has one linked host and it is online,
// and answers the list.
func waitLinked(t *testing.T, base, key string) linkedHosts {
	t.Helper()
	var hosts linkedHosts
	waitFor(t, "the runtime to link", linkPatience, func() bool {
		apiJSON(t, http.MethodGet, base+"/v1/hosts", key, nil, http.StatusOK, &hosts)
		return len(hosts.LinkedHosts) == 1 && hosts.LinkedHosts[0].Online
	})
	return hosts
}

// countNamed reads, over the runtime's loopback contract, how many objects
// of its document have a name starting with prefix.
func countNamed(t *testing.T, rt *launcher.Runtime, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := rt.Client.Execute(ctx, &hostv1.ExecuteRequest{ToolCallId: "count-" + time.Now().Format("150405.000000"), Mode: hostv1.Mode_MODE_READ_ONLY,
		Code: "print(len([o for o in doc.Objects if o.Name.startswith(" + pyString(prefix) + ")]))\n"})
	if err != nil || res.GetError() != nil {
		t.Fatalf("count: %v %v", err, res.GetError())
	}
	return strings.TrimSpace(res.GetStdout())
}

// startRevitDouble starts `nexus host revit --double` on a free port with
// the loopback token token, and answers its address once it serves.
func startRevitDouble(t *testing.T, bin, token string) (string, *proctest.Process) {
	t.Helper()
	addr := freeAddr(t)
	p := start(t, bin, []string{"NEXUS_HOST_TOKEN=" + token}, "host", "revit", "--double", "--addr", addr)
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.Output(), "at http://"+addr) {
		if time.Now().After(deadline) || !p.Running() {
			t.Fatalf("the revit runtime did not start:\n%s", p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return addr, p
}
