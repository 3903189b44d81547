package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestFreePortReserves holds FreePort to its promise: ports below the
// kernel's ephemeral range, none handed out twice while a test holds it,
// each reserved until the test that took it ends.
func TestFreePortReserves(t *testing.T) {
	dir := filepath.Join(os.TempDir(), "nexus-test-ports")
	var marks []string
	t.Run("take", func(t *testing.T) {
		seen := map[int]bool{}
		for range 50 {
			p := FreePort(t)
			if p < firstTestPort || p >= lastTestPort {
				t.Fatalf("port %d lies outside %d to %d", p, firstTestPort, lastTestPort)
			}
			if seen[p] {
				t.Fatalf("port %d was handed out twice", p)
			}
			seen[p] = true
			mark := filepath.Join(dir, strconv.Itoa(p))
			if _, err := os.Stat(mark); err != nil {
				t.Fatalf("port %d is not reserved: %v", p, err)
			}
			marks = append(marks, mark)
		}
	})
	for _, m := range marks {
		if _, err := os.Stat(m); !os.IsNotExist(err) {
			t.Errorf("%s still reserved after its test ended: %v", m, err)
		}
	}
}
