package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	hostv1 "nexus.local/gen/nexus/host/v1"
)

// token is the pairing token every runtime under test is started with.
const token = "conformance-pairing-token"

var client = &http.Client{Timeout: 3 * time.Minute}

// call sends body (nil for GET) with the pairing token and answers the
// status and raw answer.
func call(t *testing.T, h *host, method, path string, body any, headers map[string]string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, raw
}

// decode reads an answer as the contract's message, strictly: a field the
// contract does not have fails the suite.
func decode(t *testing.T, raw []byte, m proto.Message) {
	t.Helper()
	if err := protojson.Unmarshal(raw, m); err != nil {
		t.Fatalf("answer is not a %s: %v\n%s", m.ProtoReflect().Descriptor().Name(), err, raw)
	}
}

func execute(t *testing.T, h *host, body map[string]any) *hostv1.HostResult {
	t.Helper()
	status, raw := call(t, h, http.MethodPost, "/v1/execute", body, nil)
	if status != http.StatusOK {
		t.Fatalf("POST /v1/execute answered %d: %s", status, raw)
	}
	res := &hostv1.HostResult{}
	decode(t, raw, res)
	return res
}

func info(t *testing.T, h *host) *hostv1.InfoResponse {
	t.Helper()
	status, raw := call(t, h, http.MethodGet, "/v1/info", nil, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/info answered %d: %s", status, raw)
	}
	res := &hostv1.InfoResponse{}
	decode(t, raw, res)
	return res
}

// dump answers the whole document through a read-only run.
func dump(t *testing.T, h *host) string {
	t.Helper()
	res := execute(t, h, map[string]any{"mode": "MODE_READ_ONLY", "code": h.dump})
	if res.GetError() != nil || res.GetStdout() == "" {
		t.Fatalf("dump failed: %v %q", res.GetError(), res.GetStdout())
	}
	return res.GetStdout()
}

func count(t *testing.T, h *host) string {
	t.Helper()
	res := execute(t, h, map[string]any{"mode": "MODE_READ_ONLY", "code": h.count})
	if res.GetError() != nil {
		t.Fatalf("count failed: %v", res.GetError())
	}
	return strings.TrimSpace(res.GetStdout())
}

// rawStatus sends a request written by hand and answers its status line, for
// requests a client library would not send (a body larger than announced).
func rawStatus(t *testing.T, h *host, request string) string {
	t.Helper()
	u, err := url.Parse(h.url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := fmt.Fprint(conn, request); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return strings.TrimSpace(line)
}
