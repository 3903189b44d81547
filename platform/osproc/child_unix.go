//go:build unix && !linux

package osproc

import (
	"os/exec"
	"syscall"
)

// Own makes cmd's process lead a process group of its own, so ending it ends
// what it started. Without Linux's parent-death signal, the runtime watches
// its launcher itself (NEXUS_HOST_PARENT_PID).
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
