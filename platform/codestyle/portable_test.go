package codestyle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPortable holds the repository to calling system-specific code only
// through platform/osproc, so nexus builds for Windows and macOS.
func TestPortable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	findings, err := CheckPortable(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

// TestPortableFindsPlantedCalls copies real files that use syscall in the
// portable way, shows they pass, then plants the calls that once broke the
// Windows build (a process group, a signal to it, a file lock, a terminal
// ioctl) and shows each is found; the same calls in a file with a build
// constraint are the writer's choice.
func TestPortableFindsPlantedCalls(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	copyFile(t, repo, scratch, "go.mod")
	app := copyFile(t, repo, scratch, "platform/app/app.go")
	copyFile(t, repo, scratch, "services/orchestrator/state/sqlitestate/full.go")
	// platform/osproc itself calls them, and is not looked at.
	copyFile(t, repo, scratch, "platform/osproc/signal_unix.go")
	if got, err := CheckPortable(scratch); err != nil || len(got) != 0 {
		t.Fatalf("the copies as they are: findings %v, err %v", got, err)
	}
	planted := `
func plantedGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func plantedKill(pid int) error { return syscall.Kill(-pid, syscall.SIGTERM) }

func plantedLock(fd int) error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) }

func plantedTerm(fd int) bool { _, err := unix.IoctlGetTermios(fd, unix.TCGETS); return err == nil }
`
	src, err := os.ReadFile(app)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "import (", "import (\n\t\"golang.org/x/sys/unix\"", 1) + planted
	if err := os.WriteFile(app, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := CheckPortable(scratch)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`import "golang.org/x/sys/unix"`, "syscall.SysProcAttr", "syscall.Kill", "syscall.Flock", "syscall.LOCK_EX", "syscall.LOCK_NB"}
	var all []string
	for _, f := range got {
		all = append(all, f.Rule)
	}
	joined := strings.Join(all, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("planted %s was not found; findings:\n%s", w, joined)
		}
	}
	if strings.Contains(joined, "syscall.SIGTERM") {
		t.Errorf("syscall.SIGTERM is on every system, but was found:\n%s", joined)
	}
	if err := os.WriteFile(app, []byte("//go:build linux\n\n"+text), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := CheckPortable(scratch); err != nil || len(got) != 0 {
		t.Fatalf("a file built for linux alone: findings %v, err %v", got, err)
	}
}
