package revit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRevitAPIDouble runs the double's own tests (hosts/revit/double/tests)
// with python3: each Revit behaviour the double models, checked as the Revit
// API reference states it.
func TestRevitAPIDouble(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is required: ", err)
	}
	dir, err := filepath.Abs("double")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir+string(os.PathListSeparator)+filepath.Join(dir, "tests"),
		"PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the double's tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
