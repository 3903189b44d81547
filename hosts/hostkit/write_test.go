package hostkit_test

import (
	"os"
	"path/filepath"
	"testing"

	"nexus.local/hosts/hostkit"
)

// TestWriteHoldsThePackage checks the embedded kit is a whole Python
// package: __init__.py (which a plain directory embed would leave out) and
// every module the runner imports, and no tests.
func TestWriteHoldsThePackage(t *testing.T) {
	dir := t.TempDir()
	if err := hostkit.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"__init__.py", "adapter.py", "auth.py", "checkpoints.py", "executor.py",
		"fileledger.py", "imagefit.py", "ledger.py", "limits.py", "png.py", "process.py", "runner.py", "saving.py", "server.py", "wire.py"} {
		if _, err := os.Stat(filepath.Join(dir, hostkit.PackageName, name)); err != nil {
			t.Errorf("written kit lacks %s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, hostkit.PackageName, "tests")); !os.IsNotExist(err) {
		t.Errorf("the kit's tests were written with it (%v)", err)
	}
}
