package codestyle

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The longest a hand-written file may grow, in lines: past these a file holds
// more than one job. Test files get half as much again, since most of their
// length is tables of cases and fixtures, flat data read one case at a time;
// a test file past that tests more than one room and is split with it.
const (
	MaxGoLines         = 400
	MaxTypeScriptLines = 300
	MaxPythonLines     = 400
	// testAllowance is the numerator over 2 of a test file's limit: 3/2.
	testAllowance = 3
)

// sizeSkipDirs hold no hand-written source: dependencies, build output
// (dist/ of the web build) and vendored packages. Generated files elsewhere
// are known by their header; rootGenerated is the root's folder of them.
const (
	sizeSkipDirs  = "node_modules,bin,dist,vendor,.git,test-artifacts,__pycache__"
	rootGenerated = "gen"
)

// generatedHeader is the marker Go's convention (and most generators for
// other languages) writes near the top of a generated file.
const generatedHeader = `^(//|#) Code generated .* DO NOT EDIT\.$|@generated`

// Oversized is one hand-written file over its limit.
type Oversized struct {
	Path  string // relative to the root that was checked
	Lines int
	Limit int
}

func (o Oversized) String() string {
	return fmt.Sprintf("%s: %d lines, over the %d a file of its kind may have: split it along its jobs", o.Path, o.Lines, o.Limit)
}

// sizeLimit is the line limit of a file by its name, and false for a file
// the size rule does not cover.
func sizeLimit(name string) (int, bool) {
	var limit int
	test := false
	switch {
	case strings.HasSuffix(name, ".d.ts"):
		return 0, false
	case strings.HasSuffix(name, ".go"):
		limit, test = MaxGoLines, strings.HasSuffix(name, "_test.go")
	case strings.HasSuffix(name, ".ts"), strings.HasSuffix(name, ".tsx"):
		limit = MaxTypeScriptLines
		test = strings.HasSuffix(name, ".test.ts") || strings.HasSuffix(name, ".test.tsx")
	case strings.HasSuffix(name, ".py"):
		limit = MaxPythonLines
		test = strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py")
	default:
		return 0, false
	}
	if test {
		limit = limit * testAllowance / 2
	}
	return limit, true
}

// CheckSizes walks root and returns every hand-written Go, TypeScript and
// Python file longer than its limit, sorted by path.
func CheckSizes(root string) ([]Oversized, error) {
	generated := regexp.MustCompile(generatedHeader)
	var out []Oversized
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.Contains(","+sizeSkipDirs+",", ","+d.Name()+",") || path == filepath.Join(root, rootGenerated)) {
				return filepath.SkipDir
			}
			return nil
		}
		limit, ok := sizeLimit(d.Name())
		if !ok || !d.Type().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		lines := bytes.Count(src, []byte("\n"))
		if len(src) > 0 && src[len(src)-1] != '\n' {
			lines++
		}
		if lines <= limit || isGenerated(src, generated) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return fmt.Errorf("relative path of %s: %w", path, err)
		}
		out = append(out, Oversized{Path: filepath.ToSlash(rel), Lines: lines, Limit: limit})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// isGenerated reports whether one of the file's first lines carries the
// generated-code marker.
func isGenerated(src []byte, marker *regexp.Regexp) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for i := 0; i < 10 && sc.Scan(); i++ {
		if marker.MatchString(strings.TrimSpace(sc.Text())) {
			return true
		}
	}
	return false
}
