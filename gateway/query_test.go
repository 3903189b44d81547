package gateway

import "testing"

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
