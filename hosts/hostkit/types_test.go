package hostkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// typeCheck runs the two checks of the kit's types over the kit's modules
// in dir/hostkit: every public function has type hints
// (tests/public_hints.py), and mypy, from Debian's packages, finds the
// calls and bodies consistent with them. The kit runs on FreeCAD's Python
// and on pyRevit's CPython engine, so mypy checks it as Python 3.8.
func typeCheck(t *testing.T, dir string) (string, error) {
	t.Helper()
	mypy, err := exec.LookPath("mypy")
	if err != nil {
		t.Fatalf("the host kit's type check needs mypy (Debian's package, scripts/install-deps.sh installs it): %v", err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the host kit's type check needs python3: %v", err)
	}
	modules, err := filepath.Glob(filepath.Join(dir, "hostkit", "*.py"))
	if err != nil || len(modules) == 0 {
		t.Fatalf("no modules of the kit in %s: %v", dir, err)
	}
	for i, m := range modules {
		modules[i], _ = filepath.Rel(dir, m)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	hints := exec.Command(python, append([]string{filepath.Join(here, "tests", "public_hints.py")}, modules...)...)
	hints.Dir = dir
	if out, err := hints.CombinedOutput(); err != nil {
		return string(out), err
	}
	check := exec.Command(mypy, append([]string{"--python-version", "3.8", "--check-untyped-defs", "--disallow-incomplete-defs",
		"--no-incremental", "--cache-dir", os.DevNull, "--no-error-summary"}, modules...)...)
	check.Dir = dir
	check.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := check.CombinedOutput()
	return string(out), err
}

// TestKitTypes holds the kit to its type hints.
func TestKitTypes(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := typeCheck(t, filepath.Dir(here)); err != nil {
		t.Fatalf("the host kit's types: %v\n%s", err, out)
	}
}

// TestKitTypesFailOnPlantedFunctions copies the kit, shows the copy passes,
// then plants a public function without hints, and one whose hints its
// caller breaks, and shows each fails the check, naming it.
func TestKitTypesFailOnPlantedFunctions(t *testing.T) {
	for name, tc := range map[string]struct{ plant, want string }{
		"no hints":   {"\n\ndef planted(value):\n    return value\n", "planted has no type hint for value, return"},
		"bad call":   {"\n\ndef planted(value: int) -> str:\n    return str(value)\n\n\nplanted_text = planted(\"1\")\n", `Argument 1 to "planted" has incompatible type "str"; expected "int"`},
		"bad return": {"\n\ndef planted(value: int) -> str:\n    return value\n", "Incompatible return value type"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			kit := filepath.Join(dir, "hostkit")
			if err := os.Mkdir(kit, 0o700); err != nil {
				t.Fatal(err)
			}
			modules, err := filepath.Glob("*.py")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range modules {
				data, err := os.ReadFile(m)
				if err != nil {
					t.Fatal(err)
				}
				if m == "png.py" {
					data = append(data, tc.plant...)
				}
				if err := os.WriteFile(filepath.Join(kit, m), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := typeCheck(t, dir)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("the planted function passed, or failed for another reason (%v):\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
}
