// Package osproc holds what Nexus asks of the operating system about
// processes and files, where the systems differ: a child process that ends
// with the program that started it, ending a process with what it started,
// whether a process still runs, a lock on a file that the kernel lets go
// when its holder dies, and whether a file is a terminal. Everything else
// stays portable Go.
//
// Linux is where Nexus runs and is tested; macOS shares the Unix files; the
// Windows files build (make release) and follow the Win32 documentation,
// but none of them has been run on Windows.
package osproc

// Error is an error of this package, a constant so it can be compared.
type Error string

func (e Error) Error() string { return string(e) }

// ErrLocked is answered by TryLock when another process holds the lock.
const ErrLocked = Error("locked by another process")
