package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"nexus.local/platform/osproc"
)

// A runtime's temporary folder (its script, checkpoints) is removed when the
// runtime stops; a process killed outright (SIGKILL, a crash) cannot, so the
// folder says whether its owner lives: the owner holds an exclusive lock on
// its lock file for as long as it runs, and the kernel releases the lock when
// the process dies however it dies. Each start removes the folders whose lock
// nobody holds.

const (
	dirPattern = "nexus-freecad-"
	lockName   = "owner.lock"
	// unlockedAge is how old a folder without a lock file must be before it
	// counts as stale: younger, its owner may be between creating it and
	// taking the lock; older, it is a leftover of a version without locks.
	unlockedAge = 10 * time.Minute
)

// makeRuntimeDir removes stale runtime folders, then makes a new one and
// locks it; closing the answered lock file releases it.
func makeRuntimeDir() (dir string, lock *os.File, err error) {
	removeStaleDirs()
	dir, err = os.MkdirTemp("", dirPattern)
	if err != nil {
		return "", nil, fmt.Errorf("create runtime dir: %w", err)
	}
	lock, err = os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = osproc.TryLock(lock)
	}
	if err != nil {
		if lock != nil {
			_ = lock.Close()
		}
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock runtime dir: %w", err)
	}
	return dir, lock, nil
}

// removeStaleDirs removes the runtime folders of processes that are gone.
// A folder it cannot judge is left alone.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPattern+"*"))
	for _, dir := range dirs {
		if stale(dir) {
			_ = os.RemoveAll(dir)
		}
	}
}

func stale(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		st, err := os.Stat(dir)
		return err == nil && st.IsDir() && time.Since(st.ModTime()) > unlockedAge
	}
	if err != nil {
		return false
	}
	defer f.Close()
	// Taking the lock succeeds only when no living process holds it; it is
	// released when f closes, right after the folder is judged.
	return osproc.TryLock(f) == nil
}
