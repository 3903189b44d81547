package gateway

import (
	"testing"

	"nexus.local/gateway/route"
)

// TestFieldPath shows a query parameter names the field grpc-gateway's own
// parser fills: a map entry's parameter names its map.
func TestFieldPath(t *testing.T) {
	for param, want := range map[string]string{
		"pageSize":          "pageSize",
		"filter.hostApp":    "filter.hostApp",
		"labels[env]":       "labels",
		"labels[a[b]]":      "labels[a",
		"meta.labels[team]": "meta.labels",
		"odd[":              "odd[",
		"odd]":              "odd]",
	} {
		if got := fieldPath(param); got != want {
			t.Errorf("fieldPath(%q) = %q, want %q", param, got, want)
		}
	}
}

// TestQueryRoutesFromTheHTTPRules shows the strict query check knows every
// route grpc-gateway fills from the query string, read from the protos'
// HTTP rules: a route of the table without a JSON body has its request
// message, and a route with one has none.
func TestQueryRoutesFromTheHTTPRules(t *testing.T) {
	q := newQueryRoutes(apiServices()...)
	for _, rt := range route.Table() {
		md, ok := q[queryKey(rt.Method, rt.Pattern)]
		switch {
		case rt.Operation == "devHostPairing":
			// Served by the gateway alone; no RPC has it.
			if ok {
				t.Errorf("%s %s has a request message %s", rt.Method, rt.Pattern, md.FullName())
			}
		case rt.TakesBody() && ok:
			t.Errorf("%s %s takes a body, yet is checked as a query route", rt.Method, rt.Pattern)
		case !rt.TakesBody() && !ok:
			t.Errorf("%s %s takes no body and has no request message to check its query against", rt.Method, rt.Pattern)
		}
	}
	if md := q[queryKey("GET", "/v1/sessions")]; md == nil || md.Name() != "ListSessionsRequest" {
		t.Errorf("GET /v1/sessions checks against %v, want ListSessionsRequest", md)
	}
}
