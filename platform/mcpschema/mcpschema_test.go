package mcpschema

import (
	"encoding/json"
	"strings"
	"testing"
)

type inner struct {
	Line int32 `json:"line,omitempty"`
}

type sample struct {
	List   []string          `json:"list"`
	Nested []inner           `json:"nested"`
	Err    *inner            `json:"err,omitempty"`
	Tags   map[string]string `json:"tags"`
	Size   int32             `json:"size,omitempty"`
}

// TestForGivesOneType infers a schema with a slice, a slice of structs, a
// pointer and a map, which the inference writes as nullable type arrays, and
// finds one type on each; Bound writes an integer's limits.
func TestForGivesOneType(t *testing.T) {
	s, err := For[sample]()
	if err != nil {
		t.Fatal(err)
	}
	if err := Bound(s, "size", 64, 4096); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"null"`) || strings.Contains(string(b), `"type":[`) {
		t.Errorf("the schema keeps a type array: %s", b)
	}
	for name, want := range map[string]string{"list": "array", "nested": "array", "err": "object", "tags": "object", "size": "integer"} {
		if got := s.Properties[name].Type; got != want {
			t.Errorf("%s has type %q, want %q", name, got, want)
		}
	}
	if p := s.Properties["size"]; p.Minimum == nil || *p.Minimum != 64 || p.Maximum == nil || *p.Maximum != 4096 {
		t.Errorf("size is bounded %v to %v, want 64 to 4096", p.Minimum, p.Maximum)
	}
	if err := Bound(s, "missing", 1, 2); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("bounding a missing property answered %v, want an error naming it", err)
	}
}
