"""Running a script: what it prints (captured and bounded), its timeout,
the threads it starts, and its exceptions described for the person and the
model. Host-neutral: the runner calls it on the main thread with the globals
the host's adapter gives."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, TYPE_CHECKING, TextIO, Tuple, cast

import contextlib
import ctypes
import _thread
import io
import linecache
import os
import sys
import threading
import time
import traceback

from hostkit.deadline import Deadline, ScriptTimeout

if TYPE_CHECKING:
    from hostkit.process import StatusPipe

SCRIPT_FILENAME = "<nexus-script>"
EPILOGUE_FILENAME = "<nexus-epilogue>"
DEFAULT_TIMEOUT_MS = 120000
MAX_TIMEOUT_MS = 3600000
# What a script prints is kept up to this many characters (the first three
# quarters and the last quarter); the middle is dropped with a note, so an
# answer stays whole and far below what a courier accepts.
MAX_OUTPUT_CHARS = 1000000
# An exception's message and traceback are kept up to this many characters each.
MAX_ERROR_CHARS = 65536
# How long the runtime keeps interrupting the threads a script left running.
THREAD_STOP_S = 5.0
# The kit's own folder: its frames say nothing about the user's script.
KIT_DIR = os.path.dirname(os.path.abspath(__file__))


def _script_line(tb, filename):
    line = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _trim_traceback(tb, filename):
    # Frames of the runtime itself say nothing about the user's script.
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb


def _bounded(text, limit, what):
    """Answers text cut to limit characters, saying so at the cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + "\n[nexus: %s cut at %d of its %d characters]" % (what, limit, len(text))


def _runtime_frame(path, hidden):
    path = os.path.abspath(path)
    return any(path.startswith(d + os.sep) for d in hidden)


def describe_exception(exc: BaseException, filename: str, timeout_ms: int = 0,
                       hidden: Sequence[str] = (KIT_DIR,)) -> Dict[str, Any]:
    """Describes exc as a HostResult error: its type, message, the traceback
    of the script's own frames (none of the folders in hidden, the
    runtime's) and the failing line of the script."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        text = _bounded("".join(traceback.format_exception_only(type(exc), exc)), MAX_ERROR_CHARS, "traceback")
        return {"type": type(exc).__name__, "message": _bounded(str(exc.msg), MAX_ERROR_CHARS, "message"),
                "traceback": text, "line": int(exc.lineno or 0)}
    tb = exc.__traceback__
    line = _script_line(tb, filename)
    frames = [f for f in traceback.extract_tb(_trim_traceback(tb, filename))
              if not _runtime_frame(f.filename, hidden)]
    text = "".join(["Traceback (most recent call last):\n"] + traceback.format_list(frames) +
                   traceback.format_exception_only(type(exc), exc))
    message = _bounded(str(exc), MAX_ERROR_CHARS, "message")
    text = _bounded(text, MAX_ERROR_CHARS, "traceback")
    if isinstance(exc, ScriptTimeout):
        message = "script exceeded its timeout of %d ms and was aborted" % timeout_ms
    elif isinstance(exc, SystemExit):
        message = "script called sys.exit(%r)" % (exc.code,)
    return {"type": type(exc).__name__, "message": message, "traceback": text, "line": line}


class BoundedOutput(io.TextIOBase):
    """What a script prints, kept up to limit characters: the first three
    quarters of the limit and the last quarter; what lies between is dropped
    and counted, so a script printing gigabytes costs no memory and its
    answer stays whole."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        super().__init__()
        self.limit = limit
        self.head_limit = limit * 3 // 4
        self.tail_limit = limit - self.head_limit
        self.head: List[str] = []
        self.tail: List[str] = []
        self.head_len = self.tail_len = 0
        self.total = 0
        self.lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        n = len(s)
        with self.lock:
            self.total += n
            room = self.head_limit - self.head_len
            if room > 0:
                self.head.append(s[:room])
                self.head_len += min(room, len(s))
                s = s[room:]
            if s:
                self.tail.append(s)
                self.tail_len += len(s)
                if self.tail_len > 2 * self.tail_limit:
                    kept = "".join(self.tail)[-self.tail_limit:]
                    self.tail, self.tail_len = [kept], len(kept)
        return n

    def getvalue(self) -> str:
        with self.lock:
            head = "".join(self.head)
            tail = "".join(self.tail)
            if self.total <= self.limit:
                return head + tail
            tail = tail[-self.tail_limit:]
            dropped = self.total - len(head) - len(tail)
            return (head + "\n[nexus: output cut here: the script printed %d characters, more than the runtime's limit of "
                    "%d characters; the first %d and the last %d are kept and the %d between them were dropped]\n"
                    % (self.total, self.limit, len(head), len(tail), dropped) + tail)


class ScriptThreads:
    """Tells the threads a script starts from the runtime's own, and stops
    them when the script ends.

    A thread left running would change the document after the transaction
    committed or rolled back, in no report. While a script runs, a thread
    started from the script's thread (or from one of its threads) is the
    script's; when the script ends each is interrupted with SystemExit until
    it ends, so what it did until then belongs to the run.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.collecting = False
        self.owners: Set[int] = set()
        self.threads: List[threading.Thread] = []
        self.raw: Set[int] = set()
        tracker = self
        start = threading.Thread.start

        def start_tracked(thread, *args, **kwargs):
            start(thread, *args, **kwargs)
            tracker._started(threading.get_ident(), thread)

        # The one way to see every thread a script starts: replace the method.
        threading.Thread.start = start_tracked  # type: ignore[assignment]
        raw_start = _thread.start_new_thread

        def start_new_thread(function, args, kwargs=None):
            if not tracker._owned(threading.get_ident()):
                return raw_start(function, args, kwargs or {})

            def run(*a, **kw):
                tracker._adopt(threading.get_ident())
                return function(*a, **kw)
            return raw_start(run, args, kwargs or {})

        _thread.start_new_thread = start_new_thread

    def _owned(self, ident):
        with self.lock:
            return self.collecting and ident in self.owners

    def _started(self, creator, thread):
        with self.lock:
            if self.collecting and creator in self.owners and thread.ident is not None:
                self.owners.add(thread.ident)
                self.threads.append(thread)

    def _adopt(self, ident):
        with self.lock:
            if self.collecting:
                self.owners.add(ident)
                self.raw.add(ident)

    def begin(self) -> None:
        with self.lock:
            self.collecting = True
            self.owners = {threading.get_ident()}
            self.threads, self.raw = [], set()

    def end(self) -> Tuple[List[str], List[str]]:
        """Stops the script's threads; answers (names stopped, names still running)."""
        with self.lock:
            self.collecting = False
            me = threading.get_ident()
            idents = {t.ident: t.name for t in self.threads}
            idents.update({i: "thread %d" % i for i in self.raw if i not in idents})

        def alive():
            # Every live thread, threading's or a bare _thread one, has a frame.
            live = sys._current_frames()
            return {i: n for i, n in idents.items() if i != me and i in live}
        running = alive()
        names = sorted(running.values())
        stop_by = time.monotonic() + THREAD_STOP_S
        while running and time.monotonic() < stop_by:
            for ident in running:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(SystemExit))
            time.sleep(0.02)
            running = alive()
        return names, sorted(running.values())


def run_code(code: str, filename: str, namespace: Dict[str, Any], timeout_ms: int, status: Optional[StatusPipe] = None,
             threads: Optional[ScriptThreads] = None, hidden: Sequence[str] = (KIT_DIR,)) -> Tuple[str, Optional[Dict[str, Any]]]:
    """Runs code in namespace; answers (stdout, error or None). status, a
    process.StatusPipe, tells the launcher the deadline; threads, a
    ScriptThreads, stops the threads the script starts; hidden are the
    runtime's folders, whose frames tracebacks leave out."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        compiled = compile(code, filename, "exec")
    except SyntaxError as exc:
        return "", describe_exception(exc, filename, hidden=hidden)
    out = BoundedOutput()
    error = None
    deadline = Deadline(timeout_ms, filename)
    if status is not None:
        status.busy(timeout_ms)
    stopped: List[str] = []
    left: List[str] = []
    try:
        text = cast(TextIO, out)
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
            try:
                with deadline.armed():
                    if threads is not None:
                        threads.begin()
                    try:
                        exec(compiled, namespace)
                    finally:
                        if threads is not None:
                            # Inside the redirect, so what the threads print
                            # until they stop is the script's output.
                            stopped, left = threads.end()
            except SystemExit as exc:
                # Ending a script early with sys.exit() or sys.exit(0) is a
                # normal end; any other code is a failure. The runtime lives on.
                if exc.code not in (None, 0):
                    error = describe_exception(exc, filename, hidden=hidden)
            except ScriptTimeout as exc:
                error = describe_exception(exc, filename, timeout_ms, hidden)
            except BaseException as exc:  # noqa: B902 - a script may raise anything
                error = describe_exception(exc, filename, hidden=hidden)
    except ScriptTimeout as exc:
        # The watchdog's asynchronous exception can land just after the script
        # returned; the script still ran out of time.
        error = describe_exception(exc, filename, timeout_ms, hidden)
    finally:
        if status is not None:
            status.idle()
    stdout = out.getvalue()
    if stopped:
        stdout += ("[nexus: stopped %d thread(s) the script started (%s) when it ended; what they did until then "
                   "is part of this run]\n" % (len(stopped), ", ".join(stopped)))
    if left and error is None:
        error = {"type": "ThreadLeftRunning", "traceback": "", "line": 0,
                 "message": "the script started thread(s) that would not stop when it ended (%s, interrupted for %d s); "
                            "a thread must not outlive its script, so the run is refused" % (", ".join(left), THREAD_STOP_S)}
    return stdout, error
