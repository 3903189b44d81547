"""A script's deadline: the tracer, the alarm and the watchdog that raise
ScriptTimeout inside a script that outlives its timeout, and the taking down
of all three when it ends."""

from __future__ import annotations

from types import FrameType
from typing import Any, Iterator, Optional

import contextlib
import ctypes
import signal
import sys
import threading
import time


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
