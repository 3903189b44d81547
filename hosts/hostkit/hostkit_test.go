package hostkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKitUnderPlainPython runs the kit's own tests (tests/, unittest) under
// plain CPython, without any host application: ledger, limits, auth,
// timeouts, the wire format, and the three modes through the real server on
// a plain-Python host.
func TestKitUnderPlainPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the host kit's tests need python3: %v", err)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "hostkit/tests", "-t", ".")
	cmd.Dir = filepath.Dir(here)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\nOK") {
		t.Fatalf("unittest did not report OK:\n%s", out)
	}
	t.Logf("%s", out)
}
