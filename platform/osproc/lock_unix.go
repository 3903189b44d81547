//go:build unix

package osproc

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive lock on f without waiting: ErrLocked when
// another process holds it. The kernel lets it go when the holder ends,
// however it ends.
func TryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// Unlock lets the lock on f go.
func Unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
