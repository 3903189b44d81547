//go:build unix

package osproc

import (
	"errors"
	"syscall"
)

// Terminate asks the process group led by pid to end (SIGTERM).
func Terminate(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }

// KillGroup ends the process group led by pid at once (SIGKILL).
func KillGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// Kill ends the one process pid at once (SIGKILL).
func Kill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// Alive reports a process with this id; one of another user's counts.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
