"""The runtime as a process: what it tells its launcher, the processes its
scripts start, and the launcher it outlives by no more than a second."""

from __future__ import annotations

from typing import Dict, List, NoReturn, Optional

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


def watch_parent(pid: int) -> None:
    """Ends the runtime once the program that launched it is gone, so a
    launcher that was killed without cleaning up leaves no runtime behind."""
    while True:
        time.sleep(1)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            exit_now(0)
        except PermissionError:
            pass
