package codestyle

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestRepository holds the whole repository to the house rules.
func TestRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	findings, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

// TestRules proves each rule fires on a small file, so TestRepository passing
// means something.
func TestRules(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{"init", "package p\nfunc init() {}\n", 1},
		{"global var", "package p\nvar cache = map[string]int{}\n", 1},
		{"interface assertion", "package p\nvar _ error = nil\n", 0},
		{"embed", "package p\nimport _ \"embed\"\n//go:embed x.txt\nvar X []byte\n", 0},
		{"constant", "package p\nconst limit = 3\n", 0},
		{"panic", "package p\nfunc f() { panic(1) }\n", 1},
		{"todo", "package p\nimport \"context\"\nfunc f() { _ = context.TODO() }\n", 1},
		{"failed to", "package p\nimport \"fmt\"\nfunc f() error { return fmt.Errorf(\"failed to read: %w\", nil) }\n", 1},
		{"wrapped well", "package p\nimport \"fmt\"\nfunc f() error { return fmt.Errorf(\"read config: %w\", nil) }\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if got := checkFile(fset, f); len(got) != tt.want {
				t.Fatalf("findings = %v, want %d", got, tt.want)
			}
		})
	}
}
