package revit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPython runs the Python tests with python3: the double's own
// (double/tests: each Revit behaviour it models, as the Revit API reference
// states it) and the add-in's on the double (tests: the ribbon's buttons).
func TestPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is required: ", err)
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	double := filepath.Join(here, "double")
	for _, c := range []struct {
		name, dir string
		path      []string
	}{
		{"double", double, []string{double, filepath.Join(double, "tests")}},
		{"add-in", here, []string{filepath.Join(here, "Nexus.extension", "lib"), double, filepath.Dir(here)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "tests", "-v")
			cmd.Dir = c.dir
			cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.Join(c.path, string(os.PathListSeparator)),
				"PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python tests failed: %v\n%s", err, out)
			}
			t.Logf("%s", out)
		})
	}
}
