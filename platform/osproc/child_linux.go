package osproc

import (
	"os/exec"
	"syscall"
)

// Own makes cmd's process lead a process group of its own, so ending it ends
// what it started, and asks the kernel to send it SIGTERM the moment this
// process dies, however it dies: a runtime left behind by a launcher killed
// with SIGKILL would otherwise link again to the next launcher with the
// same host token.
//
// The kernel ties the signal to the thread that starts the child; the Go
// runtime does not end its threads unless a goroutine locked to one exits,
// which nothing in Nexus does.
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
