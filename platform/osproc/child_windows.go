package osproc

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// Own starts cmd's process in a process group of its own, so a console
// Ctrl-C meant for nexus does not reach it first. The runtime watches its
// launcher itself (NEXUS_HOST_PARENT_PID).
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}
