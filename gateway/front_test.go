package gateway

import (
	"bytes"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// TestRoutesTakeTheDecodedBody: the routes' decoder takes the message the
// front door decoded, never the bytes again (here bytes that are not JSON
// at all), and reads other bodies as JSON.
func TestRoutesTakeTheDecodedBody(t *testing.T) {
	m := decodedMarshaler{&runtime.JSONPb{UnmarshalOptions: requestDecoding()}}
	var got agentv1.CreateSessionRequest
	body := &decodedBody{Reader: bytes.NewReader([]byte("not json")), msg: &agentv1.CreateSessionRequest{HostApp: "freecad"}}
	if err := m.NewDecoder(body).Decode(&got); err != nil || got.GetHostApp() != "freecad" {
		t.Errorf("decoded %v, %v; want the front door's message", &got, err)
	}
	got.Reset()
	if err := m.NewDecoder(bytes.NewReader([]byte(`{"hostApp":"revit"}`))).Decode(&got); err != nil || got.GetHostApp() != "revit" {
		t.Errorf("decoded %v, %v; want the JSON", &got, err)
	}
}
