"""The runtime as a process: what it tells its launcher, the processes its
scripts start, and the launcher it does not outlive."""

from __future__ import annotations

from typing import Dict, List, Mapping, NoReturn, Optional

import ctypes
import os
import signal
import threading
import time

PR_SET_CHILD_SUBREAPER = 36


class StatusPipe:
    """Tells the launcher what the runtime is doing, one line at a time.

    "busy <deadline unix ms> <timeout ms>" when a script starts, "idle" when
    it ended, "checkpoint <path>\t<file name>" after a commit was saved.
    Without a pipe (the runtime run by hand or as a macro) it says nothing.
    """

    def __init__(self, fd: Optional[int]) -> None:
        self.fd = fd
        self.lock = threading.Lock()

    def say(self, line: str) -> None:
        if self.fd is None:
            return
        with self.lock:
            try:
                os.write(self.fd, (line + "\n").encode("utf-8"))
            except OSError:
                self.fd = None

    def busy(self, timeout_ms: int) -> None:
        self.say("busy %d %d" % (int(time.time() * 1000) + timeout_ms, timeout_ms))

    def idle(self) -> None:
        self.say("idle")


def descendants(root: int) -> List[int]:
    """Answers the process ids below root, found through /proc."""
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    out = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def end_children() -> None:
    """Kills every process a script started, detached or not. The runtime is
    a child subreaper, so even a double-forked daemon is still below it."""
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def exit_now(code: int = 0) -> NoReturn:
    end_children()
    os._exit(code)


def become_subreaper() -> None:
    """Keeps orphaned descendants of scripts under the runtime (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Launcher:
    """The program that started the runtime (NEXUS_HOST_PARENT_PID).

    Started by it directly, the runtime knows it is gone the moment the
    kernel hands the runtime to another parent; started through a wrapper
    (xvfb-run), it asks whether the process still exists. A runtime whose
    launcher is gone must not link again: a new launcher on the same data
    folder links its own runtime with the same host token, and the orphan's
    link would take that host over and then die with it.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.direct = pid > 0 and os.getppid() == pid

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> "Launcher":
        try:
            return cls(int(environ.get("NEXUS_HOST_PARENT_PID") or 0))
        except ValueError:
            return cls(0)

    def alive(self) -> bool:
        """Answers whether the launcher still runs; True when there is none."""
        if self.pid <= 0:
            return True
        if self.direct:
            return os.getppid() == self.pid
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def watch(self) -> None:
        """Ends the runtime once its launcher is gone, so a launcher that was
        killed without cleaning up leaves no runtime behind. On Linux the
        launcher also asks the kernel for SIGTERM at its death (Pdeathsig);
        this is the fallback for a wrapper in between and other systems."""
        if self.pid <= 0:
            return
        threading.Thread(target=self._watch, name="nexus-parent", daemon=True).start()

    def _watch(self) -> None:
        while self.alive():
            time.sleep(0.2)
        exit_now(0)
