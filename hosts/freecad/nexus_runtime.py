"""Nexus host runtime for FreeCAD.

A deliberately small add-in: it serves three generic primitives on loopback
(GET /v1/info, POST /v1/execute, POST /v1/export-view) and knows nothing about
models, tools or verification. The wire format is the protojson form of
proto/nexus/host/v1/host.proto.

Scripts run on the main thread, one at a time, taken from a queue (as Revit's
external events do); the HTTP threads only parse requests and wait, and never
touch a document. Headless under freecadcmd the main thread blocks on the
queue; under the GUI a Qt timer drains it so the event loop keeps running.

Configuration comes from the environment:
  NEXUS_HOST_ADDR            loopback address to listen on (127.0.0.1:7723)
  NEXUS_HOST_TOKEN           pairing token; every request must carry
                             "Authorization: Bearer <token>"
  NEXUS_HOST_ALLOWED_ORIGIN  the one browser origin allowed by CORS
                             (http://127.0.0.1:8080)
  NEXUS_HOST_DOCUMENT        an .FCStd file to open; otherwise a new empty
                             document becomes the active one
  NEXUS_HOST_PARENT_PID      the launcher's process id (nexus sets it); the
                             runtime ends when that process is gone
  NEXUS_HOST_STATUS_FD       a pipe to the launcher (nexus sets it): the
                             runtime says when a script starts and by when it
                             must end, and where the last commit was saved,
                             so the launcher can restart a runtime that a
                             script wedged or killed
  NEXUS_HOST_CHECKPOINT_DIR  where the active document is saved after each
                             commit (nexus sets it with the status pipe)
  NEXUS_HOST_DOCUMENT_FILENAME  the file name a restored checkpoint takes
                             back, so saving it writes where it came from
  NEXUS_HOST_HEADER_TIMEOUT_MS  how long a request's headers may take (10000)
  NEXUS_HOST_BODY_TIMEOUT_MS    how long a request's body may take (60000)
"""

import base64
import contextlib
import ctypes
import hashlib
import hmac
import http.server
import io
import json
import _thread
import linecache
import math
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
import zlib

RUNTIME_VERSION = "0.1.0"
HOST_APP = "freecad"
SCRIPT_FILENAME = "<nexus-script>"
EPILOGUE_FILENAME = "<nexus-epilogue>"
DEFAULT_TIMEOUT_MS = 120000
MAX_TIMEOUT_MS = 3600000
MAX_BODY_BYTES = 16 << 20
DEFAULT_MAX_PX = 1024
MAX_PX_LIMIT = 4096
MIN_PX = 64
RUNTIME_FILE = os.path.abspath(__file__) if "__file__" in globals() else ""
READY_MARKER = "NEXUS_RUNTIME_READY"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_HEADER_TIMEOUT_MS = 10000
DEFAULT_BODY_TIMEOUT_MS = 60000
IDLE_TIMEOUT_S = 300
CONTENT_LENGTH = re.compile(r"^[0-9]{1,12}$")
PR_SET_CHILD_SUBREAPER = 36
MODES = ("MODE_READ_ONLY", "MODE_TRANSACTION", "MODE_PREVIEW")
# The epilogue prints its change report as data on its last line after this
# marker (services/capability/hosts/change_report.py defines the same); the
# runtime moves it to epilogue.report.
REPORT_MARKER = "NEXUS-REPORT-JSON "
CHANGE_KINDS = ("CHANGE_KIND_UNSPECIFIED", "CHANGE_KIND_ADDED", "CHANGE_KIND_MODIFIED", "CHANGE_KIND_DELETED")
INT32_MAX = 2147483647
# What a script prints is kept up to this many characters (the first three
# quarters and the last quarter); the middle is dropped with a note, so an
# answer stays whole and far below what a courier accepts.
MAX_OUTPUT_CHARS = 1000000
# An exception's message and traceback are kept up to this many characters each.
MAX_ERROR_CHARS = 65536
# How long the runtime keeps interrupting the threads a script left running.
THREAD_STOP_S = 5.0
# The call ledger keeps a call while it is one of the last LEDGER_KEEP_CALLS,
# or younger than LEDGER_KEEP_S while the ledger holds at most
# LEDGER_MAX_CALLS answers of LEDGER_MAX_BYTES in all (answers hold images).
LEDGER_KEEP_CALLS = 256
LEDGER_KEEP_S = 3600
LEDGER_MAX_CALLS = 4096
LEDGER_MAX_BYTES = 256 << 20
# Checkpoints kept besides the newest, for a launcher that restarts from the
# one before its last notice.
CHECKPOINTS_KEPT = 3


class ScriptTimeout(BaseException):
    """Raised inside a script that outlives its deadline.

    It derives from BaseException so that a script's own "except Exception"
    does not swallow it.
    """


class RequestError(Exception):
    """A request the runtime refuses; status is the HTTP status to answer."""

    def __init__(self, status, message, result=None):
        super().__init__(message)
        self.status = status
        self.message = message
        # The answer's body when it is a HostResult (a refused call id).
        self.result = result


# ---------------------------------------------------------------------------
# Change tracking


def _object_info(obj):
    info = {"label": "", "typeId": "", "ifcType": "", "proxyType": ""}
    for key, attr in (("label", "Label"), ("typeId", "TypeId"), ("ifcType", "IfcType")):
        try:
            info[key] = str(getattr(obj, attr, "") or "")
        except Exception:
            pass
    try:
        # Arch and Draft objects say what they are through their proxy; the
        # change report needs it to tell a wall from the line it was drawn on.
        info["proxyType"] = str(getattr(getattr(obj, "Proxy", None), "Type", "") or "")
    except Exception:
        pass
    return info


class RevisionTracker:
    """A document observer that keeps the documents' revisions.

    A revision is "<epoch>.<document name>.<count>": the count is bumped on
    every object created, deleted or changed and every document property
    changed, created, closed or undone, whoever did it (a script, the GUI,
    another macro, a reload). A counter kept by an observer costs nothing per
    read and sees every property, where a hash of a dump would cost a walk of
    the whole document per request and see only what the dump covers. The
    epoch is new with every runtime process, so a revision seen before a
    restart never matches after it. Runs that leave the document exactly as
    before (a preview, a rollback, a read-only run) put the count back.
    """

    def __init__(self):
        self.epoch = secrets.token_hex(4)
        self.counts = {}

    def _bump(self, doc):
        try:
            name = doc.Name
        except Exception:
            return
        self.counts[name] = self.counts.get(name, 0) + 1

    def _bump_object(self, obj):
        try:
            self._bump(obj.Document)
        except Exception:
            pass

    # Every slot only bumps the count of the document it concerns.
    slotCreatedObject = slotDeletedObject = _bump_object
    slotCreatedDocument = slotDeletedDocument = slotRelabelDocument = slotUndoDocument = slotRedoDocument = _bump

    def slotChangedObject(self, obj, _prop):
        self._bump_object(obj)

    def slotChangedDocument(self, doc, _prop):
        self._bump(doc)

    def revision(self, doc):
        if doc is None or not _alive(doc):
            return ""
        return "%s.%s.%d" % (self.epoch, doc.Name, self.counts.get(doc.Name, 0))

    def count(self, doc):
        return self.counts.get(doc.Name, 0)

    def restore(self, doc, count):
        """Puts doc's count back after a run that left it exactly as before."""
        self.counts[doc.Name] = count


class ChangeTracker:
    """A FreeCAD document observer that records what one script changed."""

    def __init__(self, doc_name):
        self.doc_name = doc_name
        self.added = []
        self.modified = []
        self.deleted = []
        self.deleted_info = {}
        # Set when the document changed with no transaction open (the script
        # closed the runtime's): FreeCAD's undo cannot take that back.
        self.untracked = False
        # Which properties changed, per object, and where deleted objects
        # were: the affected view frames geometric changes only.
        self.props = {}
        self.deleted_boxes = []
        # Transactions with changes the script committed itself.
        self.commits = 0

    def slotCommitTransaction(self, doc):
        try:
            if doc.Name == self.doc_name:
                self.commits += 1
        except Exception:
            pass

    def _mine(self, obj):
        try:
            if obj.Document.Name != self.doc_name:
                return False
            if not obj.Document.HasPendingTransaction:
                self.untracked = True
            return True
        except Exception:
            return False

    def slotCreatedObject(self, obj):
        if not self._mine(obj):
            return
        name = obj.Name
        if name in self.modified:
            # Construction sets properties before FreeCAD announces the object.
            self.modified.remove(name)
        if name not in self.added:
            self.added.append(name)

    def slotDeletedObject(self, obj):
        if not self._mine(obj):
            return
        name = obj.Name
        if name in self.added:
            # Created and removed by the same script: it never existed.
            self.added.remove(name)
            return
        if name in self.modified:
            self.modified.remove(name)
        if name not in self.deleted:
            self.deleted.append(name)
            self.deleted_info[name] = _object_info(obj)
            try:
                if _renderable(obj):
                    self.deleted_boxes.append(obj.Shape.BoundBox)
            except Exception:
                pass

    def slotChangedObject(self, obj, prop):
        if not self._mine(obj):
            return
        name = obj.Name
        self.props.setdefault(name, set()).add(str(prop))
        if name in self.added or name in self.deleted or name in self.modified:
            return
        self.modified.append(name)

    def snapshot(self):
        return {
            "added": list(self.added),
            "modified": list(self.modified),
            "deleted": list(self.deleted),
            "changed": list(self.added) + list(self.modified),
            "deleted_info": {k: dict(v) for k, v in self.deleted_info.items()},
            "properties": {k: sorted(self.props.get(k, ())) for k in self.modified},
        }

    def empty(self):
        return not (self.added or self.modified or self.deleted)


# ---------------------------------------------------------------------------
# Running code


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

    def __init__(self, timeout_ms, filename):
        self.timeout_s = timeout_ms / 1000.0
        self.deadline = time.monotonic() + self.timeout_s
        self.filename = filename
        self.lock = threading.Lock()
        self.running = False
        self.thread_id = threading.get_ident()
        self.stop = threading.Event()

    def _expired(self):
        return time.monotonic() > self.deadline

    def _local(self, frame, event, arg):
        if self._expired():
            raise ScriptTimeout("script exceeded its timeout of %d ms" % int(self.timeout_s * 1000))
        return self._local

    def _global(self, frame, event, arg):
        if self._expired():
            raise ScriptTimeout("script exceeded its timeout of %d ms" % int(self.timeout_s * 1000))
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
        raise ScriptTimeout("script exceeded its timeout of %d ms" % int(self.timeout_s * 1000))

    @contextlib.contextmanager
    def armed(self):
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
        finally:
            sys.settrace(previous)
            if main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous_alarm or signal.SIG_DFL)
            with self.lock:
                self.running = False
            self.stop.set()


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


def describe_exception(exc, filename, timeout_ms=0):
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        text = _bounded("".join(traceback.format_exception_only(type(exc), exc)), MAX_ERROR_CHARS, "traceback")
        return {"type": type(exc).__name__, "message": _bounded(str(exc.msg), MAX_ERROR_CHARS, "message"),
                "traceback": text, "line": int(exc.lineno or 0)}
    tb = exc.__traceback__
    line = _script_line(tb, filename)
    frames = [f for f in traceback.extract_tb(_trim_traceback(tb, filename))
              if os.path.abspath(f.filename) != RUNTIME_FILE]
    text = "".join(["Traceback (most recent call last):\n"] + traceback.format_list(frames) +
                   traceback.format_exception_only(type(exc), exc))
    message = _bounded(str(exc), MAX_ERROR_CHARS, "message")
    text = _bounded(text, MAX_ERROR_CHARS, "traceback")
    if isinstance(exc, ScriptTimeout):
        message = "script exceeded its timeout of %d ms and was aborted" % timeout_ms
    elif isinstance(exc, SystemExit):
        message = "script called sys.exit(%r)" % (exc.code,)
    return {"type": type(exc).__name__, "message": message, "traceback": text, "line": line}


class StatusPipe:
    """Tells the launcher what the runtime is doing, one line at a time.

    "busy <deadline unix ms> <timeout ms>" when a script starts, "idle" when
    it ended, "checkpoint <path>\t<file name>" after a commit was saved.
    Without a pipe (the runtime run by hand or as a macro) it says nothing.
    """

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()

    def say(self, line):
        if self.fd is None:
            return
        with self.lock:
            try:
                os.write(self.fd, (line + "\n").encode("utf-8"))
            except OSError:
                self.fd = None

    def busy(self, timeout_ms):
        self.say("busy %d %d" % (int(time.time() * 1000) + timeout_ms, timeout_ms))

    def idle(self):
        self.say("idle")


class BoundedOutput(io.TextIOBase):
    """What a script prints, kept up to limit characters: the first three
    quarters of the limit and the last quarter; what lies between is dropped
    and counted, so a script printing gigabytes costs no memory and its
    answer stays whole."""

    def __init__(self, limit=MAX_OUTPUT_CHARS):
        super().__init__()
        self.limit = limit
        self.head_limit = limit * 3 // 4
        self.tail_limit = limit - self.head_limit
        self.head, self.head_len = [], 0
        self.tail, self.tail_len = [], 0
        self.total = 0
        self.lock = threading.Lock()

    def writable(self):
        return True

    def write(self, s):
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

    def getvalue(self):
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

    def __init__(self):
        self.lock = threading.Lock()
        self.collecting = False
        self.owners = set()
        self.threads = []
        self.raw = set()
        tracker = self
        start = threading.Thread.start

        def start_tracked(thread, *args, **kwargs):
            start(thread, *args, **kwargs)
            tracker._started(threading.get_ident(), thread)

        threading.Thread.start = start_tracked
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

    def begin(self):
        with self.lock:
            self.collecting = True
            self.owners = {threading.get_ident()}
            self.threads, self.raw = [], set()

    def end(self):
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


def run_code(code, filename, namespace, timeout_ms, status=None, threads=None):
    """Runs code in namespace; answers (stdout, error or None)."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        compiled = compile(code, filename, "exec")
    except SyntaxError as exc:
        return "", describe_exception(exc, filename)
    out = BoundedOutput()
    error = None
    deadline = Deadline(timeout_ms, filename)
    if status is not None:
        status.busy(timeout_ms)
    stopped, left = [], []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
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
                    error = describe_exception(exc, filename)
            except ScriptTimeout as exc:
                error = describe_exception(exc, filename, timeout_ms)
            except BaseException as exc:  # noqa: B902 - a script may raise anything
                error = describe_exception(exc, filename)
    except ScriptTimeout as exc:
        # The watchdog's asynchronous exception can land just after the script
        # returned; the script still ran out of time.
        error = describe_exception(exc, filename, timeout_ms)
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


# ---------------------------------------------------------------------------
# PNG encoding and headless rendering


def encode_png(width, height, rows):
    """Encodes RGB rows (bytes of width*3 each) as a PNG."""
    raw = b"".join(b"\x00" + bytes(r) for r in rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


CATEGORY_COLOURS = {
    "Wall": (205, 190, 170),
    "Door": (150, 95, 50),
    "Window": (120, 180, 230),
    "Structure": (160, 160, 170),
    "Floor": (190, 200, 180),
    "Roof": (180, 90, 80),
}
DEFAULT_COLOUR = (170, 175, 200)
BACKGROUND = (255, 255, 255)
EDGE_COLOUR = (40, 40, 40)


def category_of(obj):
    ifc = str(getattr(obj, "IfcType", "") or "")
    if ifc in ("Wall", "Wall Standard Case"):
        return "Wall"
    if ifc == "Door":
        return "Door"
    if ifc == "Window":
        return "Window"
    if ifc in ("Column", "Beam", "Footing", "Member", "Plate", "Pile"):
        return "Structure"
    if ifc == "Slab":
        return "Floor"
    if ifc == "Roof":
        return "Roof"
    return ""


def _renderable(obj):
    shape = getattr(obj, "Shape", None)
    if shape is None or not hasattr(shape, "Faces"):
        return False
    try:
        if shape.isNull() or not shape.Faces:
            return False
    except Exception:
        return False
    if hasattr(obj, "Group"):
        return False
    try:
        if not obj.Visibility:
            return False
    except Exception:
        pass
    for parent in getattr(obj, "InList", []):
        # Objects consumed by another (a wall's base, a window's sketch, a
        # boolean's operands) are drawn through their consumer.
        if getattr(parent, "Base", None) == obj:
            return False
        for attr in ("Additions", "Subtractions", "Shapes", "Objects"):
            if obj in (getattr(parent, attr, None) or []):
                return False
        if obj in (getattr(parent, "OutList", None) or []) and parent.TypeId.startswith("Part::"):
            if parent.TypeId in ("Part::Cut", "Part::Fuse", "Part::Common", "Part::MultiFuse",
                                 "Part::MultiCommon", "Part::Extrusion", "Part::Revolution"):
                return False
    return True


def _camera(view):
    if view == "plan":
        return (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, -1.0)
    if view == "front":
        return (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0)
    # Isometric, looking from (1, -1, 1) towards the origin as FreeCAD does.
    d = (-1.0, 1.0, -1.0)
    n = math.sqrt(3.0)
    d = (d[0] / n, d[1] / n, d[2] / n)
    right = (1.0 / math.sqrt(2.0), 1.0 / math.sqrt(2.0), 0.0)
    up = (right[1] * d[2] - right[2] * d[1], right[2] * d[0] - right[0] * d[2], right[0] * d[1] - right[1] * d[0])
    return right, up, d


class ImageRule(object):
    """The largest image the model sees without its vendor scaling it again:
    longest side, shortest side, area and patch budget (0 leaves one
    unbounded). services/modelrouter/imagefit.go applies the same rule to the
    images the model router sends, so a view rendered here is never scaled
    twice."""

    def __init__(self, max_px, max_short_px=0, max_pixels=0, patch_px=0, max_patches=0):
        self.max_px, self.max_short_px, self.max_pixels = max_px, max_short_px, max_pixels
        self.patch_px, self.max_patches = patch_px, max_patches

    def patches(self, width, height):
        p = self.patch_px
        return ((width + p - 1) // p) * ((height + p - 1) // p)


def _round_px(x):
    return max(1, int(math.floor(x + 0.5)))


def fit_image(width, height, rule):
    """Scales width x height to fit rule, keeping the aspect: the sides, the
    short side and the area scale it once; a patch budget then scales it to
    the budget's area and down to a whole number of patches across."""
    f = min(1.0, float(rule.max_px) / max(width, height))
    if rule.max_short_px:
        f = min(f, float(rule.max_short_px) / min(width, height))
    if rule.max_pixels:
        f = min(f, math.sqrt(float(rule.max_pixels) / (width * height)))
    if f < 1:
        width, height = _round_px(width * f), _round_px(height * f)
        while width > 1 and height > 1:
            if rule.max_short_px and min(width, height) > rule.max_short_px:
                width, height = (width, height - 1) if width >= height else (width - 1, height)
            elif max(width, height) > rule.max_px or (rule.max_pixels and width * height > rule.max_pixels):
                width, height = (width - 1, height) if width >= height else (width, height - 1)
            else:
                break
    if rule.patch_px and rule.max_patches and rule.patches(width, height) > rule.max_patches:
        p = float(rule.patch_px)
        s = math.sqrt(rule.max_patches * p * p / (width * height))
        across = width * s / p
        s *= math.floor(across) / across
        width, height = _round_px(width * s), _round_px(height * s)
        while rule.patches(width, height) > rule.max_patches and width > 1 and height > 1:
            width, height = (width - 1, height) if width >= height else (width, height - 1)
    return width, height


def render_headless(doc, view, rule, window=None):
    """Rasterises the document's solids with flat shading and a z-buffer.

    window, a world bounding box, frames that region (everything is drawn,
    what lies outside is cut off); otherwise the whole document is framed.
    """
    import numpy as np

    right, up, depth_dir = _camera(view)
    basis = np.array([right, up, depth_dir], dtype=float)
    light = np.array([0.3, -0.5, 0.8])
    light = light / np.linalg.norm(light)
    meshes = []
    edges = []
    for obj in doc.Objects:
        if not _renderable(obj):
            continue
        try:
            shape = obj.Shape.copy()
            try:
                glob = obj.getGlobalPlacement()
                if not glob.isSame(obj.Placement):
                    shape.Placement = glob.multiply(obj.Placement.inverse()).multiply(shape.Placement)
            except Exception:
                pass
            bb = shape.BoundBox
            tol = max(bb.DiagonalLength / 100.0, 0.01)
            points, triangles = shape.tessellate(tol)
        except Exception:
            continue
        if not triangles:
            continue
        pts = np.array([(p.x, p.y, p.z) for p in points], dtype=float)
        tris = np.array(triangles, dtype=np.int64)
        colour = np.array(CATEGORY_COLOURS.get(category_of(obj), DEFAULT_COLOUR), dtype=float)
        meshes.append((pts, tris, colour))
        for edge in shape.Edges:
            try:
                edges.append(np.array([(p.x, p.y, p.z) for p in edge.discretize(Deflection=tol)], dtype=float))
            except Exception:
                continue
    max_px = rule.max_px
    if not meshes:
        width, height = fit_image(max_px, max(MIN_PX, int(max_px * 0.75)), rule)
        rows = [bytes(BACKGROUND) * width for _ in range(height)]
        return encode_png(width, height, rows), width, height

    projected = [(pts @ basis.T, tris, colour, pts) for pts, tris, colour in meshes]
    if window is not None:
        corners = np.array([(x, y, z) for x in (window.XMin, window.XMax) for y in (window.YMin, window.YMax)
                            for z in (window.ZMin, window.ZMax)], dtype=float) @ basis.T
        allxy = corners[:, :2]
    else:
        allxy = np.vstack([p[0][:, :2] for p in projected])
    lo = allxy.min(axis=0)
    hi = allxy.max(axis=0)
    span = np.maximum(hi - lo, 1e-6)
    margin = 0.05
    scale = (max_px * (1 - 2 * margin)) / max(span[0], span[1])
    # The epsilon keeps float error from adding a pixel to a side that
    # lands exactly on a whole number.
    width = max(MIN_PX, int(math.ceil(span[0] * scale / (1 - 2 * margin) - 1e-6)))
    height = max(MIN_PX, int(math.ceil(span[1] * scale / (1 - 2 * margin) - 1e-6)))
    width = min(width, max_px)
    height = min(height, max_px)
    fitted_w, fitted_h = fit_image(width, height, rule)
    if (fitted_w, fitted_h) != (width, height):
        scale *= float(fitted_w) / width
        width, height = fitted_w, fitted_h
    offset = np.array([(width - span[0] * scale) / 2.0, (height - span[1] * scale) / 2.0])

    def to_screen(p):
        s = np.empty_like(p)
        s[:, 0] = (p[:, 0] - lo[0]) * scale + offset[0]
        s[:, 1] = height - ((p[:, 1] - lo[1]) * scale + offset[1])
        s[:, 2] = p[:, 2]
        return s

    zbuf = np.full((height, width), np.inf)
    img = np.empty((height, width, 3), dtype=float)
    img[:, :] = BACKGROUND
    for proj, tris, colour, world in projected:
        scr = to_screen(proj)
        for tri in tris:
            a, b, c = scr[tri[0]], scr[tri[1]], scr[tri[2]]
            wa, wb, wc = world[tri[0]], world[tri[1]], world[tri[2]]
            normal = np.cross(wb - wa, wc - wa)
            nlen = np.linalg.norm(normal)
            if nlen == 0:
                continue
            shade = 0.45 + 0.55 * abs(float(np.dot(normal / nlen, light)))
            x0 = max(int(math.floor(min(a[0], b[0], c[0]))), 0)
            x1 = min(int(math.ceil(max(a[0], b[0], c[0]))), width - 1)
            y0 = max(int(math.floor(min(a[1], b[1], c[1]))), 0)
            y1 = min(int(math.ceil(max(a[1], b[1], c[1]))), height - 1)
            if x0 > x1 or y0 > y1:
                continue
            area = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
            if abs(area) < 1e-12:
                continue
            xs, ys = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
            w0 = ((b[0] - xs) * (c[1] - ys) - (b[1] - ys) * (c[0] - xs)) / area
            w1 = ((c[0] - xs) * (a[1] - ys) - (c[1] - ys) * (a[0] - xs)) / area
            w2 = 1.0 - w0 - w1
            inside = (w0 >= -1e-9) & (w1 >= -1e-9) & (w2 >= -1e-9)
            if not inside.any():
                continue
            z = w0 * a[2] + w1 * b[2] + w2 * c[2]
            region = zbuf[y0:y1 + 1, x0:x1 + 1]
            closer = inside & (z < region)
            region[closer] = z[closer]
            img[y0:y1 + 1, x0:x1 + 1][closer] = colour * shade
    # Outlines: shape edges drawn where they are not hidden behind a face.
    bias = max(span[0], span[1]) / 200.0
    for pts in edges:
        scr = to_screen(pts @ basis.T)
        for i in range(len(scr) - 1):
            p, q = scr[i], scr[i + 1]
            steps = int(max(abs(q[0] - p[0]), abs(q[1] - p[1]))) + 1
            t = np.linspace(0.0, 1.0, steps + 1)
            xs = (p[0] + (q[0] - p[0]) * t).astype(int)
            ys = (p[1] + (q[1] - p[1]) * t).astype(int)
            zs = p[2] + (q[2] - p[2]) * t
            ok = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
            xs, ys, zs = xs[ok], ys[ok], zs[ok]
            visible = zs <= zbuf[ys, xs] + bias
            img[ys[visible], xs[visible]] = EDGE_COLOUR
    data = np.clip(img, 0, 255).astype(np.uint8)
    rows = [data[y].tobytes() for y in range(height)]
    return encode_png(width, height, rows), width, height


def render_gui(doc, view, rule, names=None):
    import FreeCADGui

    gdoc = FreeCADGui.getDocument(doc.Name)
    av = gdoc.activeView() if hasattr(gdoc, "activeView") else FreeCADGui.ActiveDocument.ActiveView
    if view == "plan":
        av.viewTop()
    elif view == "front":
        av.viewFront()
    else:
        av.viewIsometric()
    av.fitAll()
    if names:
        # Frame what changed: FreeCAD fits the view to the selection.
        FreeCADGui.Selection.clearSelection()
        for name in names:
            obj = doc.getObject(name)
            if obj is not None:
                FreeCADGui.Selection.addSelection(obj)
        FreeCADGui.SendMsgToActiveView("ViewSelection")
        FreeCADGui.Selection.clearSelection()
    width, height = fit_image(rule.max_px, max(MIN_PX, int(rule.max_px * 0.75)), rule)
    fd, path = tempfile.mkstemp(suffix=".png", prefix="nexus-view-")
    os.close(fd)
    try:
        av.saveImage(path, width, height, "White")
        with open(path, "rb") as f:
            data = f.read()
    finally:
        os.unlink(path)
    return data, width, height


# ---------------------------------------------------------------------------
# The affected view: which region a transaction changed, and how to show it.


def _union(boxes):
    import FreeCAD
    out = FreeCAD.BoundBox()
    for b in boxes:
        out.add(b)
    return out


def geometric_changes(doc, tracker, framing):
    """Names of live objects whose geometry the transaction changed."""
    geometric = set(framing.get("geometricProperties") or ["Shape", "Placement"])
    names = []
    for name in list(tracker.added) + list(tracker.modified):
        obj = doc.getObject(name)
        if obj is None or not _renderable(obj):
            continue
        if name in tracker.added or tracker.props.get(name, set()) & geometric:
            names.append(name)
    return names


def no_geometry_note(tracker, framing):
    changed = []
    for name in list(tracker.added) + list(tracker.modified):
        props = sorted(tracker.props.get(name, set()))
        changed.append("%s (%s)" % (name, ", ".join(props)) if props else name)
    what = "; it changed " + "; ".join(changed[:10]) if changed else "; it changed nothing"
    return ("no image: the transaction changed no geometry (no %s of a visible element)%s"
            % (" or ".join(framing.get("geometricProperties") or ["Shape", "Placement"]), what))


def affected_region(doc, tracker, framing):
    """Answers (window, names, view) framing the changed elements, with
    window None when the change spans most of the document; None when no
    geometry changed."""
    names = geometric_changes(doc, tracker, framing)
    boxes = [doc.getObject(n).Shape.BoundBox for n in names] + list(tracker.deleted_boxes)
    boxes = [b for b in boxes if b.isValid()]
    if not boxes:
        return None
    changed = _union(boxes)
    whole = _union([o.Shape.BoundBox for o in doc.Objects if _renderable(o)] + boxes)
    plan = max(changed.XLength, changed.YLength)
    ratio = float(framing.get("planMaxHeightRatio") or 0)
    view = "plan" if changed.ZLength <= ratio * max(plan, 1e-9) else "isometric"
    share = float(framing.get("wholeShare") or 1)
    whole_plan = max(whole.XLength, whole.YLength, 1e-9)
    if plan / whole_plan > share:
        return None, names, view
    margin = float(framing.get("margin") or 0)
    minimum = float(framing.get("minExtent") or 0)
    pad = max(margin * plan, (minimum - plan) / 2.0, 0.0)
    # Room above and below matters little: in plan it is not seen, and in
    # isometric it only stretches the frame upright.
    padz = 0.1 * changed.ZLength
    import FreeCAD
    window = FreeCAD.BoundBox(changed.XMin - pad, changed.YMin - pad, changed.ZMin - padz,
                              changed.XMax + pad, changed.YMax + pad, changed.ZMax + padz)
    return window, names or ["(deleted)"], view


# ---------------------------------------------------------------------------
# The change report as data: the epilogue's last line.


def _strings(value):
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _clean_entry(raw, fields):
    """Answers raw as an entry of the report with only the given fields
    (name -> check), or None when it holds anything else: the courier decodes
    the answer strictly, so one stray field would fail the whole call."""
    if not isinstance(raw, dict) or not set(raw) <= set(fields):
        return None
    for name, ok in fields.items():
        if name in raw and not ok(raw[name]):
            return None
    return dict(raw)


_ELEMENT_FIELDS = {
    "change": lambda v: v in CHANGE_KINDS,
    "category": lambda v: isinstance(v, str),
    "name": lambda v: isinstance(v, str),
    "label": lambda v: isinstance(v, str),
    "properties": _strings,
}
_HELPER_FIELDS = {
    "change": lambda v: v in CHANGE_KINDS,
    "kind": lambda v: isinstance(v, str),
    "count": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= INT32_MAX,
}


def clean_report(raw):
    """Answers the report as the ChangeReport message's JSON, or None when
    raw is not one."""
    if not isinstance(raw, dict) or not set(raw) <= {"elements", "helpers"}:
        return None
    out = {}
    for key, fields in (("elements", _ELEMENT_FIELDS), ("helpers", _HELPER_FIELDS)):
        items = raw.get(key, [])
        if not isinstance(items, list):
            return None
        cleaned = [_clean_entry(item, fields) for item in items]
        if any(c is None for c in cleaned):
            return None
        out[key] = cleaned
    return out


def extract_report(stdout):
    """Answers (stdout without the report line, report) when the epilogue's
    last line is the marker and a valid report; otherwise (stdout, None) with
    stdout untouched: a malformed report never fails the call."""
    body = stdout[:-1] if stdout.endswith("\n") else stdout
    head, sep, last = body.rpartition("\n")
    if not last.startswith(REPORT_MARKER):
        return stdout, None
    try:
        report = clean_report(json.loads(last[len(REPORT_MARKER):]))
    except ValueError:
        return stdout, None
    if report is None:
        return stdout, None
    return head + sep, report


# ---------------------------------------------------------------------------
# The call ledger: each tool call id runs once.


def call_fingerprint(mode, code):
    """What makes two deliveries of a call id the same call: its mode and its
    code's exact bytes."""
    data = ("%s\n%s" % (mode, code)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def checkpoint_generation(checkpoint_dir, opened):
    """Answers the generation of the checkpoint the runtime was started on
    (<checkpoint_dir>/<generation>/<name>.FCStd), or 0 for any other start."""
    if not opened or not checkpoint_dir:
        return 0
    folder = os.path.dirname(os.path.abspath(opened))
    if os.path.dirname(folder) != os.path.abspath(checkpoint_dir) or not os.path.basename(folder).isdigit():
        return 0
    return int(os.path.basename(folder))


class CallLedger:
    """The tool call ids the runtime ran for its document, and its answers.

    Each answer is a file of its own in directory; index.json lists the calls
    oldest first, with the checkpoint generation that holds each call's
    effect. A committed call is recorded just before the checkpoint of its
    generation is saved, so a runtime restarted on checkpoint G keeps the
    calls up to G and forgets later ones, whose effect the document it opened
    does not hold either: ledger and document agree wherever a kill lands.
    A call stays while it is one of the last LEDGER_KEEP_CALLS, or younger
    than LEDGER_KEEP_S within LEDGER_MAX_CALLS and LEDGER_MAX_BYTES.
    """

    def __init__(self, directory, generation):
        self.dir = directory
        self.index = os.path.join(directory, "index.json")
        self.entries = {}
        os.makedirs(directory, exist_ok=True)
        try:
            with open(self.index, "r", encoding="utf-8") as f:
                listed = json.load(f)
        except (OSError, ValueError):
            listed = []
        for entry in listed if isinstance(listed, list) else []:
            if (isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("file"), str)
                    and isinstance(entry.get("generation"), int) and entry["generation"] <= generation):
                self.entries[entry["id"]] = entry
        self._prune()
        self._save_index()
        kept = {e["file"] for e in self.entries.values()} | {"index.json"}
        for name in os.listdir(directory):
            if name not in kept:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))

    def lookup(self, call_id):
        return self.entries.get(call_id)

    def answer(self, entry):
        """The stored answer of entry, or None when it cannot be read."""
        try:
            with open(os.path.join(self.dir, entry["file"]), "r", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def record(self, call_id, fingerprint, mode, result, generation):
        name = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest() + ".json"
        text = json.dumps(result)
        _write_atomically(os.path.join(self.dir, name), text)
        self.entries.pop(call_id, None)
        self.entries[call_id] = {"id": call_id, "fingerprint": fingerprint, "mode": str(mode), "file": name,
                                 "generation": generation, "time": time.time(), "bytes": len(text)}
        self._prune()
        self._save_index()

    def _prune(self):
        now = time.time()
        size = sum(int(e.get("bytes") or 0) for e in self.entries.values())
        while self.entries:
            oldest = next(iter(self.entries))
            entry = self.entries[oldest]
            if len(self.entries) <= LEDGER_KEEP_CALLS or (
                    len(self.entries) <= LEDGER_MAX_CALLS and size <= LEDGER_MAX_BYTES
                    and now - entry.get("time", 0) < LEDGER_KEEP_S):
                return
            size -= int(entry.get("bytes") or 0)
            del self.entries[oldest]
            with contextlib.suppress(OSError):
                os.remove(os.path.join(self.dir, entry["file"]))

    def _save_index(self):
        _write_atomically(self.index, json.dumps(list(self.entries.values())))


def _write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Valid Unicode on the wire.


SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(value):
    """Answers (value with every string valid Unicode, how many characters
    were replaced). Python holds what cannot be decoded (a file name that is
    not UTF-8, from os.listdir) as lone surrogates, which UTF-8 cannot carry
    and a strict JSON decoder refuses; each becomes U+FFFD, and a proper pair
    becomes its character."""
    if isinstance(value, str):
        if not SURROGATE.search(value):
            return value, 0
        fixed = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed, fixed.count("\ufffd") - value.count("\ufffd")
    if isinstance(value, dict):
        out, n = {}, 0
        for k, v in value.items():
            out[k], m = valid_unicode(v)
            n += m
        return out, n
    if isinstance(value, list):
        out, n = [], 0
        for v in value:
            fixed, m = valid_unicode(v)
            out.append(fixed)
            n += m
        return out, n
    return value, 0


# ---------------------------------------------------------------------------
# The executor: runs on the main thread only.


def rollback_exactness(problems):
    """The result's fields saying whether a rollback left the document
    exactly as before, and what still differs when it did not."""
    if problems:
        return {"rollback": "ROLLBACK_EXACTNESS_NOT_EXACT", "rollbackDifferences": list(problems)}
    return {"rollback": "ROLLBACK_EXACTNESS_EXACT"}


def _alive(doc):
    try:
        doc.Name
        return True
    except Exception:
        return False


def _doc_label(doc):
    if doc is None:
        return ""
    return doc.FileName or doc.Name


class Executor:
    def __init__(self, app, gui, status=None, checkpoint_dir="", opened=""):
        self.app = app
        self.gui = gui
        self.status = status or StatusPipe(None)
        # Without a launcher the checkpoints still serve exact rollback.
        self.checkpoint_dir = checkpoint_dir or tempfile.mkdtemp(prefix="nexus-checkpoint-")
        self.last_changes = ChangeTracker("").snapshot()
        self.revisions = RevisionTracker()
        self.app.addDocumentObserver(self.revisions)
        self.threads = ScriptThreads()
        # The document the runtime serves: the one it was started on.
        self.served = ""
        # A runtime restarted on checkpoint <dir>/<generation>/<name>.FCStd
        # goes on from that generation and keeps the calls it holds.
        self.generation = checkpoint_generation(self.checkpoint_dir, opened)
        self.ledger = CallLedger(os.path.join(self.checkpoint_dir, "ledger"), self.generation)
        # (call id, fingerprint, mode) of the call running, until recorded.
        self.recording = None

    def _served_doc(self):
        if self.served and self.served in self.app.listDocuments():
            return self.app.getDocument(self.served)
        return None

    def _current(self):
        return self._served_doc() or self.app.ActiveDocument

    def document(self):
        """The document the runtime serves. Scripts cannot close it or switch
        away from it; only when it is gone otherwise (a person closed it in
        the GUI) does the runtime serve the active document, or a new one."""
        doc = self._served_doc()
        if doc is None:
            doc = self.app.ActiveDocument
            if doc is None:
                doc = self.app.newDocument("Nexus")
                self.app.setActiveDocument(doc.Name)
            self.served = doc.Name
        # Rollback relies on FreeCAD's undo; headless documents start without it.
        if not doc.UndoMode:
            doc.UndoMode = 1
        return doc

    def info(self, _body):
        doc = self._current()
        return {
            "hostApp": HOST_APP,
            "hostVersion": ".".join(self.app.Version()[:3]),
            "runtimeVersion": RUNTIME_VERSION,
            "document": _doc_label(doc),
            "documentRevision": self.revisions.revision(doc),
        }

    def _namespace(self, doc, tracker=None, changes=None):
        committed = changes if changes is not None else self.last_changes

        def nexus_changes():
            """What changed: inside a script, its own changes so far; inside
            an epilogue, what the committed transaction changed."""
            snap = tracker.snapshot() if tracker is not None else committed
            return {k: (list(v) if isinstance(v, list) else dict(v)) for k, v in snap.items()}

        ns = {"__name__": "__nexus__", "App": self.app, "FreeCAD": self.app, "doc": doc,
              "nexus_changes": nexus_changes}
        if self.gui:
            import FreeCADGui
            ns["Gui"] = FreeCADGui
            ns["FreeCADGui"] = FreeCADGui
        return ns

    def _restore(self, doc, before):
        """Removes what FreeCAD's undo left behind; answers names it could not restore."""
        try:
            now = {o.Name for o in doc.Objects}
        except Exception:
            return []
        for name in sorted(now - before, reverse=True):
            try:
                doc.removeObject(name)
            except Exception:
                pass
        return sorted(before - {o.Name for o in doc.Objects})

    def _rollback(self, doc, undo_base, before, commits=0):
        """Undoes everything since the undo stack stood at undo_base.

        A script may commit or abort the runtime's transaction itself (or
        open and commit its own): FreeCAD then holds its changes as undo
        steps above undo_base, and undoing them all restores the document
        exactly, whatever transaction calls the script made. Answers what
        could not be restored.
        """
        problems = []
        try:
            if doc.HasPendingTransaction:
                doc.abortTransaction()
        except Exception as exc:
            problems.append("abort failed: %s" % exc)
        steps = 0
        while doc.UndoCount > undo_base and steps < 100000:
            doc.undo()
            steps += 1
        if doc.UndoCount < undo_base:
            problems.append("the script cleared or undid %d earlier undo steps" % (undo_base - doc.UndoCount))
        elif steps < commits:
            # FreeCAD keeps a bounded undo history: a commit of the script's
            # own into a full one pushes out the oldest step, so the count
            # above does not move and undo by count misses it.
            problems.append("the script committed %d transaction(s) of its own into a full undo history; undo "
                            "could take back only %d" % (commits, steps))
        lost = self._restore(doc, before)
        if lost:
            problems.append("could not restore %s" % lost)
        return problems

    def _checkpoint(self, committed=None):
        """Saves the served document before a script runs and after a commit:
        a restarted runtime starts from it, and a rollback that FreeCAD's undo
        cannot make exact reloads it. Answers its path, or "" when it failed.

        Each checkpoint is a new generation in a folder of its own, so a kill
        while saving never spoils the last good one. committed, the answer of
        a call that committed, goes into the ledger with this generation
        before the document is saved: a runtime restarted on an older
        checkpoint forgets the call together with its effect."""
        doc = self._served_doc()
        if doc is None:
            return ""
        self.generation += 1
        folder = os.path.join(self.checkpoint_dir, str(self.generation))
        path = os.path.join(folder, doc.Name + ".FCStd")
        if committed is not None and self.recording is not None:
            call_id, fingerprint, mode = self.recording
            self.recording = None
            self.ledger.record(call_id, fingerprint, mode, committed, self.generation)
        try:
            os.makedirs(folder, exist_ok=True)
            doc.saveCopy(path)
        except Exception as exc:
            sys.__stderr__.write("nexus runtime: save checkpoint %s: %s\n" % (path, exc))
            return ""
        self.status.say("checkpoint %s\t%s" % (path, doc.FileName or ""))
        for entry in os.listdir(self.checkpoint_dir):
            if entry.isdigit() and int(entry) <= self.generation - CHECKPOINTS_KEPT:
                shutil.rmtree(os.path.join(self.checkpoint_dir, entry), ignore_errors=True)
        return path

    def _reload(self, doc, path):
        """Replaces doc by its checkpoint; answers the reopened document."""
        return self._reopen(doc.Name, doc.FileName, path)

    def execute(self, body):
        started = time.monotonic()
        mode = body.get("mode")
        if mode not in MODES:
            raise RequestError(400, "mode must be MODE_READ_ONLY, MODE_TRANSACTION or MODE_PREVIEW, got %r" % (mode,))
        code = body.get("code")
        if not isinstance(code, str) or not code.strip():
            raise RequestError(400, "code must be a non-empty string")
        if "\x00" in code:
            # compile() refuses NUL with a ValueError, not a SyntaxError; a
            # script that cannot compile is answered like any other, before
            # anything opens a transaction.
            at = code.index("\x00")
            line = code.count("\n", 0, at) + 1
            message = "source code cannot contain null bytes: a NUL at line %d, column %d" % (
                line, at - (code.rfind("\n", 0, at) + 1) + 1)
            return {"committed": False, "stdout": "",
                    "error": {"type": "SyntaxError", "message": message, "line": line,
                              "traceback": '  File "%s", line %d\nSyntaxError: %s\n' % (SCRIPT_FILENAME, line, message)},
                    "durationMs": int((time.monotonic() - started) * 1000)}
        timeout_ms = _int_field(body, "timeoutMs", DEFAULT_TIMEOUT_MS, 1, MAX_TIMEOUT_MS)
        transaction_name = str(body.get("transactionName") or "Nexus automation")
        epilogue = body.get("epilogue") or None
        capture = body.get("capture") or None
        expect = str(body.get("expectRevision") or "")

        doc = self.document()
        revision = self.revisions.revision(doc)
        if expect and expect != revision:
            # The person approved a preview of another document state; what
            # the script would do now is not what they saw.
            return {"committed": False, "stdout": "", "documentRevision": revision,
                    "error": {"type": "RevisionChanged", "traceback": "", "line": 0,
                              "message": "the document changed since the preview: the preview saw revision %s, "
                                         "the document is now at revision %s; nothing was run, preview the script "
                                         "again" % (expect, revision)},
                    "durationMs": int((time.monotonic() - started) * 1000)}
        count = self.revisions.count(doc)
        doc_name, file_name = doc.Name, doc.FileName
        if self.app.ActiveDocument is None or self.app.ActiveDocument.Name != doc_name:
            # Scripts reach the document as App.ActiveDocument too.
            self.app.setActiveDocument(doc_name)
        documents = set(self.app.listDocuments())
        snapshot = self._checkpoint() if self.app.ActiveDocument == doc else ""
        before = {o.Name for o in doc.Objects}
        undo_base = doc.UndoCount
        tracker = ChangeTracker(doc.Name)
        doc.openTransaction(transaction_name)
        self.app.addDocumentObserver(tracker)
        try:
            stdout, error = run_code(code, SCRIPT_FILENAME, self._namespace(doc, tracker), timeout_ms, self.status,
                                     self.threads)
            refusal = self._kept_document(doc, doc_name, documents)
            if refusal is not None:
                if error is not None:
                    refusal["message"] += "; the script also raised %s: %s" % (error["type"], error["message"])
                error = refusal
            if error is None and mode in ("MODE_TRANSACTION", "MODE_PREVIEW"):
                # Recompute inside the transaction so the commit holds valid
                # shapes and a failing recompute rolls back like any error.
                try:
                    doc.recompute()
                except Exception as exc:
                    error = describe_exception(exc, SCRIPT_FILENAME)
        finally:
            self.app.removeDocumentObserver(tracker)

        committed = False
        previewed = False
        described = {}
        exactness = {}
        snap = tracker.snapshot()
        if mode == "MODE_TRANSACTION" and error is None:
            try:
                doc.commitTransaction()
                committed = True
            except Exception as exc:
                error = {"type": type(exc).__name__, "traceback": "", "line": 0,
                         "message": "commit failed: %s" % exc}
            if committed:
                self.last_changes = snap
                described = self._describe(doc, snap, epilogue, capture, tracker, pending=False)
        elif not _alive(doc):
            # The script closed the document: what it was before the script
            # is its checkpoint.
            try:
                if not snapshot:
                    raise RuntimeError("no checkpoint was saved before the script")
                doc = self._reopen(doc_name, file_name, snapshot)
                self.revisions.restore(doc, count)
                error["message"] += "; the document was reopened as it was before the script"
                exactness = rollback_exactness([])
            except Exception as exc:
                error["message"] += "; reopening the document as it was failed: %s" % exc
                exactness = rollback_exactness(["reopening the document as it was failed: %s" % exc])
        else:
            if mode == "MODE_PREVIEW" and error is None:
                # The transaction is still open: the report and the view see
                # what a commit would hold, and the rollback below takes it
                # all back, the epilogue's doings included.
                described = self._describe(doc, snap, epilogue, capture, tracker, pending=True)
            changed = doc.UndoCount > undo_base or not tracker.empty()
            problems = self._rollback(doc, undo_base, before, tracker.commits)
            if tracker.untracked and not snapshot:
                # Undo cannot take back a change made with no transaction
                # open, and there is no checkpoint to reload in its place.
                problems.append("the script changed the document outside any transaction and no checkpoint "
                                "was saved to reload")
            elif (problems or tracker.untracked) and snapshot:
                # The script changed the document outside any transaction or
                # rewrote the undo history: only the checkpoint is exact.
                try:
                    doc = self._reload(doc, snapshot)
                    problems = []
                except Exception as exc:
                    problems.append("reloading the checkpoint failed: %s" % exc)
            if not problems and _alive(doc) and doc.Name == doc_name:
                # The document is exactly as before, so is its revision.
                self.revisions.restore(doc, count)
            exactness = rollback_exactness(problems)
            if mode == "MODE_READ_ONLY" and error is None and changed:
                error = {"type": "ReadOnlyViolation",
                         "message": "a read-only script changed the document (added %s, modified %s, deleted %s); "
                                    "the changes were undone; run it as a transaction to change the document"
                                    % (snap["added"], snap["modified"], snap["deleted"]),
                         "traceback": "", "line": 0}
            if mode == "MODE_PREVIEW" and error is None:
                if problems:
                    described = {}
                    error = {"type": "RollbackFailed", "traceback": "", "line": 0,
                             "message": "the preview ran but could not be rolled back exactly: %s" % "; ".join(problems)}
                else:
                    previewed = True
            elif problems and error is not None:
                error["message"] += "; rollback was not exact: %s" % "; ".join(problems)

        result = {"committed": committed, "stdout": stdout}
        if error is not None:
            result["error"] = error
        if committed or previewed:
            result["changes"] = {"added": snap["added"], "modified": snap["modified"], "deleted": snap["deleted"]}
            result.update(described)
        elif capture and error is None:
            image, note = self._capture(doc, capture)
            if image is not None:
                result["images"] = [image]
            else:
                result["captureNote"] = note
        if previewed:
            result["previewed"] = True
        result.update(exactness)
        result["documentRevision"] = self.revisions.revision(self._current())
        result["durationMs"] = int((time.monotonic() - started) * 1000)
        if committed:
            # Saved once the answer is whole: the ledger entry of this call
            # is written with the checkpoint that holds its effect.
            self._checkpoint(result)
        return result

    def execute_call(self, body):
        """Runs an execute request at most once per tool call id.

        A repeat of an id (a courier that retried after a lost answer, two
        couriers that both saw the call) is answered from the ledger without
        running anything; one that arrives while the first still runs waits
        behind it on the main thread's queue and is answered the same. An id
        reused for another mode or other code bytes is refused (409) and
        changes nothing. A request without an id runs as it is.
        """
        call_id = body.get("toolCallId") or ""
        if not isinstance(call_id, str) or not call_id:
            return self.execute(body)
        fingerprint = call_fingerprint(body.get("mode"), body.get("code"))
        entry = self.ledger.lookup(call_id)
        if entry is not None:
            stored = self.ledger.answer(entry) if entry["fingerprint"] == fingerprint else None
            if stored is not None:
                return stored
            if entry["fingerprint"] == fingerprint:
                why = "its stored answer could not be read back"
            else:
                why = "it ran as a %s of other code (or in another mode)" % entry.get("mode", "call")
            raise RequestError(409, "tool call id %r was already used: %s" % (call_id, why), result={
                "committed": False, "stdout": "",
                "error": {"type": "CallIdReused", "traceback": "", "line": 0,
                          "message": "tool call id %r was already run by this runtime and %s; nothing was run and "
                                     "the document is unchanged; a new call needs an id of its own" % (call_id, why)},
                "documentRevision": self.revisions.revision(self._current()), "durationMs": 0})
        self.recording = (call_id, fingerprint, body.get("mode"))
        try:
            result = self.execute(body)
        finally:
            pending, self.recording = self.recording, None
        if pending is not None and result.get("error", {}).get("type") != "RevisionChanged":
            # Not committed: the document is as at the last checkpoint, so
            # the answer holds for that generation. A RevisionChanged run
            # ran nothing, and its id may run once the preview is renewed.
            self.ledger.record(call_id, fingerprint, pending[2], result, self.generation)
        return result

    def _kept_document(self, doc, name, documents):
        """Undoes a script's switch away from the served document, closes the
        documents it opened then, and answers the refusal, or None when the
        script left the served document active and open."""
        closed = not _alive(doc)
        active = self.app.ActiveDocument
        if not closed and active is not None and active.Name == name:
            return None
        switched_to = "" if closed or active is None else active.Name
        for other in sorted(set(self.app.listDocuments()) - documents):
            with contextlib.suppress(Exception):
                self.app.closeDocument(other)
        if closed:
            return {"type": "DocumentClosed", "traceback": "", "line": 0,
                    "message": "the script closed %s, the document this runtime serves; closing it is refused and "
                               "nothing the script did was kept" % name}
        self.app.setActiveDocument(name)
        return {"type": "DocumentSwitched", "traceback": "", "line": 0,
                "message": "the script made %s the active document instead of %s, the document this runtime serves; "
                           "switching documents is refused: %s is active again, the documents the script opened were "
                           "closed and nothing the script did was kept" % (switched_to or "no document", name, name)}

    def _reopen(self, name, file_name, path):
        """Opens the checkpoint at path in place of the closed document name
        (and of any document the script opened under that name)."""
        if name in self.app.listDocuments():
            self.app.closeDocument(name)
        fresh = self.app.openDocument(path)
        fresh.FileName = file_name
        self.app.setActiveDocument(fresh.Name)
        fresh.UndoMode = 1
        self.served = fresh.Name
        return fresh

    def _describe(self, doc, snap, epilogue, capture, tracker, pending):
        """Runs the epilogue and renders the framed view of a transaction that
        committed, or that is still open when pending (a preview); answers
        the result's epilogue, images and captureNote."""
        out = {}
        if epilogue:
            out["epilogue"] = self._epilogue(doc, epilogue, snap, isolated=not pending)
            problems = out["epilogue"].pop("rollbackProblems", None)
            if problems:
                # The epilogue's own rollback after a commit: the committed
                # document now holds what the epilogue left.
                out.update(rollback_exactness(problems))
        if capture:
            image, note = self._capture(doc, capture, capture.get("framing"), tracker)
            if image is not None:
                out["images"] = [image]
            else:
                out["captureNote"] = note
        return out

    def _epilogue(self, doc, epilogue, changes, isolated=True):
        """Runs the epilogue read-only. isolated, after a commit, wraps it in
        its own transaction rolled back at once; in a preview the caller's
        open transaction holds whatever it does, and the caller's rollback
        undoes it (opening another would commit the preview's)."""
        code = epilogue.get("code")
        if not isinstance(code, str) or not code:
            return {"error": {"type": "InvalidEpilogue", "message": "epilogue.code must be a non-empty string",
                              "traceback": "", "line": 0}}
        digest = hashlib.sha256(code.encode("utf-8")).hexdigest()
        want = str(epilogue.get("contentHash") or "").lower()
        if want and want != digest:
            return {"contentHash": digest,
                    "error": {"type": "ContentHashMismatch",
                              "message": "epilogue bytes hash to %s but were stamped %s; not run" % (digest, want),
                              "traceback": "", "line": 0}}
        namespace = self._namespace(doc, changes=changes)
        if not isolated:
            stdout, error = run_code(code, EPILOGUE_FILENAME, namespace, DEFAULT_TIMEOUT_MS, self.status)
        else:
            before = {o.Name for o in doc.Objects}
            undo_base = doc.UndoCount
            count = self.revisions.count(doc)
            doc.openTransaction("Nexus epilogue")
            try:
                stdout, error = run_code(code, EPILOGUE_FILENAME, namespace, DEFAULT_TIMEOUT_MS, self.status)
            finally:
                # The epilogue is read-only: whatever it did is undone.
                problems = self._rollback(doc, undo_base, before) if _alive(doc) else []
                if _alive(doc) and not problems:
                    self.revisions.restore(doc, count)
            if problems:
                # The committed document now holds what the epilogue left;
                # the answer must not read as a clean commit.
                error = error or {"type": "RollbackFailed", "traceback": "", "line": 0,
                                  "message": "the epilogue changed the document"}
                error["message"] += "; rollback was not exact: %s" % "; ".join(problems)
        stdout, report = extract_report(stdout)
        out = {"stdout": stdout, "contentHash": digest}
        if isolated and problems:
            out["rollbackProblems"] = problems
        if report is not None:
            out["report"] = report
        if error is not None:
            out["error"] = error
        return out

    def _capture(self, doc, request, framing=None, tracker=None):
        """Renders the view a capture or export-view request names, at its
        image rule (maxPx, maxShortPx, maxPixels, patchPx and maxPatches);
        answers (image, None) or (None, why no image).

        With framing rules and the tracker of a committed transaction, it
        frames what the transaction changed and picks plan or isometric from
        the change; a transaction that changed no geometry gets no image.
        """
        view = str(request.get("view") or "isometric")
        rule = ImageRule(
            _int_field(request, "maxPx", DEFAULT_MAX_PX, MIN_PX, MAX_PX_LIMIT),
            _int_field(request, "maxShortPx", 0, MIN_PX, MAX_PX_LIMIT),
            _int_field(request, "maxPixels", 0, MIN_PX * MIN_PX, MAX_PX_LIMIT * MAX_PX_LIMIT),
            _int_field(request, "patchPx", 0, 1, MAX_PX_LIMIT),
            _int_field(request, "maxPatches", 0, 1, MAX_PX_LIMIT * MAX_PX_LIMIT))
        if bool(rule.patch_px) != bool(rule.max_patches):
            raise RequestError(400, "patchPx and maxPatches go together: got patchPx %d, maxPatches %d" % (rule.patch_px, rule.max_patches))
        window, names, framed = None, None, "document"
        if framing and tracker is not None:
            affected = affected_region(doc, tracker, framing)
            if affected is None:
                return None, no_geometry_note(tracker, framing)
            window, names, view = affected
            if window is not None:
                framed = "changed: " + ", ".join(names)
            else:
                names = None
        if self.gui:
            data, width, height = render_gui(doc, view, rule, names)
        else:
            data, width, height = render_headless(doc, view, rule, window)
        return {"mimeType": "image/png", "data": base64.b64encode(data).decode("ascii"),
                "view": view, "width": width, "height": height, "framed": framed}, None

    def export_view(self, body):
        started = time.monotonic()
        doc = self.document()
        image, _ = self._capture(doc, body)
        return {"committed": False, "stdout": "", "images": [image],
                "documentRevision": self.revisions.revision(doc),
                "durationMs": int((time.monotonic() - started) * 1000)}


def _int_value(value, default, low, high, name):
    if value in (None, "", 0, "0"):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RequestError(400, "%s must be an integer, got %r" % (name, value))
    if number < low or number > high:
        raise RequestError(400, "%s must be between %d and %d, got %d" % (name, low, high, number))
    return number


def _int_field(body, name, default, low, high):
    return _int_value(body.get(name), default, low, high, name)


# ---------------------------------------------------------------------------
# HTTP: parses, authenticates and hands work to the main thread.


class ReadGuard:
    """Bounds how long reading one part of a request may take in all.

    A per-read socket timeout does not stop a client that sends one byte at a
    time; this timer answers 408 and shuts the connection down when the whole
    part is not in by its deadline.
    """

    def __init__(self, conn, seconds, what):
        self.conn = conn
        self.what = what
        self.seconds = seconds
        self.lock = threading.Lock()
        self.fired = False
        self.done = False
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def _expire(self):
        with self.lock:
            if self.done:
                return
            self.fired = True
        data = json.dumps({"error": "request %s not received within %d ms" % (self.what, int(self.seconds * 1000))}).encode("utf-8")
        try:
            self.conn.sendall(b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
                              b"Content-Length: " + str(len(data)).encode("ascii") + b"\r\n\r\n" + data)
        except OSError:
            pass
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self):
        """Stops the timer; answers whether it had already fired."""
        self.timer.cancel()
        with self.lock:
            self.done = True
            return self.fired


def parse_content_length(headers):
    """Answers the body length, or raises RequestError for a length that is
    not a plain decimal number or a body sent in chunks."""
    if headers.get("Transfer-Encoding"):
        raise RequestError(411, "Transfer-Encoding is not accepted; send the body with a Content-Length")
    values = headers.get_all("Content-Length") or []
    if not values:
        return 0
    if len(set(v.strip() for v in values)) != 1 or not CONTENT_LENGTH.match(values[0].strip()):
        raise RequestError(400, "invalid Content-Length %r: it must be one decimal number of bytes" % ", ".join(values))
    return int(values[0].strip())


class Job:
    def __init__(self, kind, body):
        self.kind = kind
        self.body = body
        self.done = threading.Event()
        self.status = 200
        self.result = None


def make_handler(settings, jobs):
    routes = {("GET", "/v1/info"): "info", ("POST", "/v1/execute"): "execute_call",
              ("POST", "/v1/export-view"): "export_view"}

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "NexusFreeCAD/" + RUNTIME_VERSION
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Headers and body go out in two writes; without TCP_NODELAY the
            # second waits on the client's delayed ACK (about 40 ms).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.guard = None

        def handle_one_request(self):
            # An idle kept-alive connection may wait for its next request; once
            # a request's first byte is in, its headers have a deadline.
            self.connection.settimeout(IDLE_TIMEOUT_S)
            try:
                if not self.rfile.peek(1):
                    self.close_connection = True
                    return
            except OSError:
                self.close_connection = True
                return
            self.guard = ReadGuard(self.connection, settings["header_timeout_ms"] / 1000.0, "headers")
            try:
                super().handle_one_request()
            except OSError:
                self.close_connection = True
            finally:
                if self.guard is not None and self.guard.cancel():
                    self.close_connection = True
                self.guard = None

        def _headers_in(self):
            """Stops the header deadline; answers False when it already expired."""
            fired = self.guard is not None and self.guard.cancel()
            self.guard = None
            if fired:
                self.close_connection = True
                self._body_read = True
            return not fired

        def log_message(self, fmt, *args):
            pass

        def _cors(self):
            origin = self.headers.get("Origin")
            if origin and origin == settings["allowed_origin"]:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Vary", "Origin")

        def _drain(self):
            # A body left unread would be parsed as the next request on a
            # kept-alive connection; read it, or close when it is too large.
            if getattr(self, "_body_read", False):
                return
            self._body_read = True
            try:
                length = parse_content_length(self.headers)
            except RequestError:
                length = -1
            if 0 < length <= MAX_BODY_BYTES:
                guard = ReadGuard(self.connection, settings["body_timeout_ms"] / 1000.0, "body")
                try:
                    self.rfile.read(length)
                finally:
                    if guard.cancel():
                        self.close_connection = True
            elif length != 0:
                self.close_connection = True

        def _send(self, status, payload):
            self._drain()
            payload, replaced = valid_unicode(payload)
            if replaced and isinstance(payload.get("stdout"), str):
                payload["stdout"] += ("[nexus: replaced %d character(s) that are not valid Unicode (lone surrogates, "
                                      "as a file name that is not UTF-8 gives) with U+FFFD in this answer]\n" % replaced)
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="nexus-host"')
            self.end_headers()
            self.wfile.write(data)

        def _origin_ok(self):
            origin = self.headers.get("Origin")
            return origin is None or origin == settings["allowed_origin"]

        def do_OPTIONS(self):
            self._body_read = False
            if not self._headers_in():
                return
            if not self.headers.get("Origin") or not self._origin_ok():
                self._send(403, {"error": "origin not allowed; only %s may call this runtime" % settings["allowed_origin"]})
                return
            self._drain()
            self.send_response(204)
            self._cors()
            self.send_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Authorization, Content-Type")
            self.send_header("Access-Control-Max-Age", "600")
            if self.headers.get("Access-Control-Request-Private-Network"):
                self.send_header("Access-Control-Allow-Private-Network", "true")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _handle(self, method):
            self._body_read = method == "GET" and not self.headers.get("Content-Length")
            if not self._headers_in():
                return
            if not self._origin_ok():
                self._send(403, {"error": "origin not allowed; only %s may call this runtime" % settings["allowed_origin"]})
                return
            auth = self.headers.get("Authorization") or ""
            expected = "Bearer " + settings["token"]
            if not hmac.compare_digest(auth.encode("utf-8"), expected.encode("utf-8")):
                self._send(401, {"error": "missing or wrong pairing token; send Authorization: Bearer <token>"})
                return
            path = self.path.split("?", 1)[0]
            kind = routes.get((method, path))
            if kind is None:
                if any(p == path for (_, p) in routes):
                    self._send(405, {"error": "method %s not allowed on %s" % (method, path)})
                else:
                    self._send(404, {"error": "no such endpoint %s" % path})
                return
            body = {}
            if method == "POST":
                try:
                    length = parse_content_length(self.headers)
                except RequestError as exc:
                    # Nothing of a body with an unknown length is read.
                    self.close_connection = True
                    self._body_read = True
                    self._send(exc.status, {"error": exc.message})
                    return
                if length > MAX_BODY_BYTES:
                    self.close_connection = True
                    self._body_read = True
                    self._send(413, {"error": "request body of %d bytes exceeds the limit of %d bytes" % (length, MAX_BODY_BYTES)})
                    return
                self._body_read = True
                raw = b"{}"
                if length:
                    guard = ReadGuard(self.connection, settings["body_timeout_ms"] / 1000.0, "body")
                    try:
                        raw = self.rfile.read(length)
                    finally:
                        if guard.cancel():
                            self.close_connection = True
                            return
                    if len(raw) != length:
                        self.close_connection = True
                        return
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as exc:
                    self._send(400, {"error": "request body is not JSON: %s" % exc})
                    return
                if not isinstance(body, dict):
                    self._send(400, {"error": "request body must be a JSON object"})
                    return
            job = Job(kind, body)
            jobs.put(job)
            job.done.wait()
            self._send(job.status, job.result)

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

    return Handler


def run_job(executor, job):
    try:
        job.result = getattr(executor, job.kind)(job.body)
    except RequestError as exc:
        job.status = exc.status
        job.result = exc.result if exc.result is not None else {"error": exc.message}
    except BaseException as exc:  # noqa: B902 - the runtime must outlive any failure
        job.status = 500
        job.result = {"error": "%s: %s" % (type(exc).__name__, exc)}
    finally:
        job.done.set()


def start_link(environ, executor, jobs, log):
    """Links the runtime to Nexus when NEXUS_HOST_CONNECT_URL is set: the
    link's calls go through the same job queue, executor and call ledger as
    the loopback server's, so no call runs twice whoever carries it."""
    url = environ.get("NEXUS_HOST_CONNECT_URL") or ""
    if not url:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import nexus_link

    routes = {"execute": "execute_call", "exportView": "export_view"}

    def execute(call):
        for field, kind in routes.items():
            if field in call:
                job = Job(kind, call[field])
                jobs.put(job)
                job.done.wait()
                result = job.result if isinstance(job.result, dict) else {}
                if job.status != 200 and not isinstance(result.get("error"), dict):
                    result = {"error": {"type": "HostRuntimeError", "message": str(result.get("error", "HTTP %d" % job.status))}}
                return result
        return {"error": {"type": "HostRuntimeError", "message": "the call carries no request this runtime knows"}}

    link = nexus_link.Link(url, execute, executor.info({}), token=environ.get("NEXUS_HOST_LINK_TOKEN") or "",
                           token_file=environ.get("NEXUS_HOST_LINK_TOKEN_FILE") or "", log=log)
    link.start()
    return link


def load_settings(environ):
    addr = environ.get("NEXUS_HOST_ADDR") or "127.0.0.1:7723"
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    if host not in LOOPBACK_HOSTS:
        raise ValueError("NEXUS_HOST_ADDR must be a loopback address (127.0.0.1, ::1, localhost), got %r" % addr)
    try:
        port = int(port)
    except ValueError:
        raise ValueError("NEXUS_HOST_ADDR must end with a port, got %r" % addr)
    token = environ.get("NEXUS_HOST_TOKEN") or secrets.token_urlsafe(32)
    timeouts = {}
    for key, name, default in (("header_timeout_ms", "NEXUS_HOST_HEADER_TIMEOUT_MS", DEFAULT_HEADER_TIMEOUT_MS),
                               ("body_timeout_ms", "NEXUS_HOST_BODY_TIMEOUT_MS", DEFAULT_BODY_TIMEOUT_MS)):
        raw = environ.get(name) or str(default)
        if not raw.isdigit() or not 100 <= int(raw) <= 600000:
            raise ValueError("%s must be a number of milliseconds between 100 and 600000, got %r" % (name, raw))
        timeouts[key] = int(raw)
    return {
        "header_timeout_ms": timeouts["header_timeout_ms"],
        "body_timeout_ms": timeouts["body_timeout_ms"],
        "host": host,
        "port": port,
        "token": token,
        "generated_token": not environ.get("NEXUS_HOST_TOKEN"),
        "allowed_origin": environ.get("NEXUS_HOST_ALLOWED_ORIGIN") or "http://127.0.0.1:8080",
        "document": environ.get("NEXUS_HOST_DOCUMENT") or "",
    }


def descendants(root):
    """Answers the process ids below root, found through /proc."""
    children = {}
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


def end_children():
    """Kills every process a script started, detached or not. The runtime is
    a child subreaper, so even a double-forked daemon is still below it."""
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def exit_now(code=0):
    end_children()
    os._exit(code)


def become_subreaper():
    """Keeps orphaned descendants of scripts under the runtime (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def watch_parent(pid):
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


def main():
    import FreeCAD

    settings = load_settings(os.environ)
    parent = int(os.environ.get("NEXUS_HOST_PARENT_PID") or 0)
    if parent > 0:
        threading.Thread(target=watch_parent, args=(parent,), name="nexus-parent", daemon=True).start()
    gui = bool(getattr(FreeCAD, "GuiUp", 0))
    if not gui:
        # Headless, the runtime is its own program: it ends what scripts
        # started when it ends. Under the GUI, FreeCAD owns the process.
        become_subreaper()
        signal.signal(signal.SIGTERM, lambda signum, frame: exit_now(0))
    if settings["document"]:
        doc = FreeCAD.openDocument(settings["document"])
        if "NEXUS_HOST_DOCUMENT_FILENAME" in os.environ:
            # A checkpoint restored after a restart takes back its own name,
            # so saving it writes where the document came from.
            doc.FileName = os.environ["NEXUS_HOST_DOCUMENT_FILENAME"]
        FreeCAD.setActiveDocument(doc.Name)
    status_fd = int(os.environ.get("NEXUS_HOST_STATUS_FD") or -1)
    status = StatusPipe(status_fd if status_fd >= 0 else None)
    executor = Executor(FreeCAD, gui, status, os.environ.get("NEXUS_HOST_CHECKPOINT_DIR") or "", settings["document"])
    executor.document()

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in settings["host"] else socket.AF_INET

    jobs = queue.Queue()
    server = Server((settings["host"], settings["port"]), make_handler(settings, jobs))
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, name="nexus-http", daemon=True).start()
    host = "[%s]" % settings["host"] if ":" in settings["host"] else settings["host"]
    sys.__stdout__.write("%s http://%s:%d\n" % (READY_MARKER, host, port))
    if settings["generated_token"]:
        sys.__stdout__.write("pairing token: %s\n" % settings["token"])
    sys.__stdout__.flush()
    if gui:
        # Run as a macro, the terminal may be hidden: say it in the Report view too.
        FreeCAD.Console.PrintMessage("Nexus runtime serving on http://%s:%d\n" % (host, port))
        if settings["generated_token"]:
            FreeCAD.Console.PrintMessage("Nexus pairing token: %s\n" % settings["token"])

    def log(msg):
        sys.__stdout__.write("nexus link: %s\n" % msg)
        sys.__stdout__.flush()

    link = start_link(os.environ, executor, jobs, log)
    if gui:
        from PySide import QtCore

        def drain():
            while True:
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    return
                run_job(executor, job)

        timer = QtCore.QTimer()
        timer.timeout.connect(drain)
        timer.start(20)
        # Keep the timer and server alive for the life of the GUI session.
        FreeCAD.__nexus_runtime__ = (timer, server, link)
        return
    while True:
        run_job(executor, jobs.get())


if __name__ in ("__main__", "nexus_runtime"):
    main()
