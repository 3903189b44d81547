"""Running a script: what it prints (captured and bounded), its timeout,
the threads it starts, and its exceptions described for the person and the
model. Host-neutral: the runner calls it on the main thread with the globals
the host's adapter gives."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, TYPE_CHECKING, TextIO, Tuple, cast

import contextlib
import ctypes
import _thread
import io
import linecache
import os
import signal
import sys
import threading
import time
import traceback
from types import FrameType

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


class ScriptTimeout(BaseException):
    """Raised inside a script that outlives its deadline.

    It derives from BaseException so that a script's own "except Exception"
    does not swallow it.
    """



class Deadline:
    """Enforces a script's timeout.

    A trace function checks the clock on every call and on every line of the
    submitted script and raises ScriptTimeout inside it. On the main thread an
    interval timer (SIGALRM) raises it too, which also interrupts blocking
    calls such as time.sleep or a socket read. A watchdog thread is the
    backstop for a script that swallows the exception with a bare except
    (which also removes the trace function): it raises asynchronously in the
    main thread until the script ends. A script that survives all of that
    (an endless loop catching BaseException, a C call that never returns) is
    the launcher's to end: the status pipe told it the deadline.
    """

    def __init__(self, timeout_ms: int, filename: str) -> None:
        self.timeout_s = timeout_ms / 1000.0
        self.deadline = time.monotonic() + self.timeout_s
        self.filename = filename
        self.lock = threading.Lock()
        self.running = False
        self.thread_id = threading.get_ident()
        self.stop = threading.Event()

    def _expired(self):
        return time.monotonic() > self.deadline

    def _timeout(self) -> ScriptTimeout:
        return ScriptTimeout("script exceeded its timeout of %d ms" % int(self.timeout_s * 1000))

    def _in_script(self, frame: Optional[FrameType]) -> bool:
        """Whether frame is the script's or one it called. The tracer and the
        alarm raise only there: once the script has ended (a timeout already
        on its way out, or the deadline being taken down), a second
        ScriptTimeout would replace the first, which names the script's
        line, or cut the taking down short."""
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return True
            frame = frame.f_back
        return False

    def _local(self, frame, event, arg):
        if self._expired():
            raise self._timeout()
        return self._local

    def _global(self, frame, event, arg):
        if self._expired() and self._in_script(frame):
            raise self._timeout()
        if frame.f_code.co_filename == self.filename:
            return self._local
        return None

    def _watch(self):
        grace = 2.0
        while not self.stop.wait(max(0.05, self.deadline + grace - time.monotonic())):
            with self.lock:
                if not self.running:
                    return
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.thread_id), ctypes.py_object(ScriptTimeout))
            grace = 1.0
            self.deadline = time.monotonic()

    def _alarm(self, signum, frame):
        if self._in_script(frame):
            raise self._timeout()

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        previous = sys.gettrace()
        watcher = threading.Thread(target=self._watch, name="nexus-watchdog", daemon=True)
        main = threading.current_thread() is threading.main_thread()
        previous_alarm = None
        with self.lock:
            self.running = True
        watcher.start()
        if main:
            previous_alarm = signal.signal(signal.SIGALRM, self._alarm)
            signal.setitimer(signal.ITIMER_REAL, self.timeout_s, 0.5)
        sys.settrace(self._global)
        try:
            yield
        except BaseException:
            self._disarm(previous, main, previous_alarm)
            raise
        late = self._disarm(previous, main, previous_alarm)
        if late is not None:
            # The script returned, but only after the watchdog's exception
            # was on its way: it still ran out of time.
            raise late

    def _disarm(self, previous_trace: Any, main: bool, previous_alarm: Any) -> Optional[ScriptTimeout]:
        """Takes the tracer, the alarm and the watchdog down, every one of
        them, and answers the watchdog's exception if one landed meanwhile.

        The tracer and the alarm no longer raise here (no script frame is on
        the stack), but an exception the watchdog set just before can land
        at any call; the steps are taken again after it. Before, a
        ScriptTimeout landing here skipped the rest, and the interval timer
        went on raising it in whatever the host ran next.
        """
        late = None
        while True:
            try:
                sys.settrace(previous_trace)
                if main:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, previous_alarm or signal.SIG_DFL)
                with self.lock:
                    self.running = False
                # One the watchdog set before lands at the latest in this
                # call (a Python function: the interpreter checks for it
                # there), inside the try. Clearing it instead, with
                # PyThreadState_SetAsyncExc(id, NULL), leaves CPython 3.11's
                # eval breaker set and the next script crawling.
                self.stop.set()
                return late
            except ScriptTimeout as exc:
                late = exc


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
