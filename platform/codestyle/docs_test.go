package codestyle

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines keeps the README an entry that leads; the reference lives
// in docs/.
const readmeMaxLines = 150

// mdLink matches a Markdown link or image target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// brokenLinks lists the relative links of the Markdown file at path whose
// target does not exist.
func brokenLinks(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
			broken = append(broken, m[1])
		}
	}
	return broken, nil
}

// TestDocs holds the README to its length and every link of the README and
// of docs/ to a file that exists.
func TestDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, over the limit of %d: move reference to docs/", n, readmeMaxLines)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("docs/ holds no pages")
	}
	for _, p := range append([]string{readme}, pages...) {
		broken, err := brokenLinks(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range broken {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s links to %s, which does not exist", rel, l)
		}
	}
}

// TestBrokenLinksFindsABrokenLink proves TestDocs can fail.
func TestBrokenLinksFindsABrokenLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "there.md"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "page.md")
	src := "[ok](there.md) [anchor](there.md#a) [web](https://example.org/x) [gone](docs/missing.md) ![img](missing.png)"
	if err := os.WriteFile(page, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := brokenLinks(page)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[docs/missing.md missing.png]" {
		t.Fatalf("broken links = %v, want [docs/missing.md missing.png]", got)
	}
}
