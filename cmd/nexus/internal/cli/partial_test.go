package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPartialString(t *testing.T) {
	tests := []struct {
		name, raw, want string
		done            bool
	}{
		{"empty", ``, "", false},
		{"key not yet", `{"descr`, "", false},
		{"value starting", `{"code":"imp`, "imp", false},
		{"escaped newline", `{"code":"a\nb`, "a\nb", false},
		{"half an escape waits", `{"code":"a\`, "a", false},
		{"half a unicode escape waits", `{"code":"a\u00`, "a", false},
		{"unicode", `{"code":"\u00e9t\u00e9"`, "été", true},
		{"surrogate pair", `{"code":"\ud83d\ude00"}`, "😀", true},
		{"after other fields", `{"description":"adds \"x\"","mode":{"a":[1,"}"]},"n":3,"code":"box"}`, "box", true},
		{"other field open", `{"description":"adds a b`, "", false},
		{"not a string", `{"code":12}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, done := PartialString(tt.raw, "code")
			if got != tt.want || done != tt.done {
				t.Errorf("PartialString(%q) = %q, %v; want %q, %v", tt.raw, got, done, tt.want, tt.done)
			}
		})
	}
}

// TestPartialStringGrowsWithTheInput shows that every prefix of a real
// argument object yields a prefix of the final script, so the terminal
// never has to take back what it printed.
func TestPartialStringGrowsWithTheInput(t *testing.T) {
	code := "import FreeCAD\nbox = doc.addObject(\"Part::Box\", \"Box\")\nprint(f\"volume: {box.Shape.Volume} mm³ \\\\ done\") # 😀\n"
	b, err := json.Marshal(map[string]string{"description": "adds a box", "code": code})
	if err != nil {
		t.Fatal(err)
	}
	raw := strings.ReplaceAll(string(b), "³", `\u00b3`)
	prev := ""
	for i := 0; i <= len(raw); i++ {
		got, _ := PartialString(raw[:i], "code")
		if !strings.HasPrefix(got, prev) || !strings.HasPrefix(code, got) {
			t.Fatalf("prefix %d: %q after %q", i, got, prev)
		}
		prev = got
	}
	if prev != code {
		t.Fatalf("final %q, want %q", prev, code)
	}
}
