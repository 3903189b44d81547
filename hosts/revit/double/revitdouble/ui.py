"""Autodesk.Revit.UI: the UI application and document, and ExternalEvent,
the one way a modeless add-in gets onto Revit's API thread: Raise() queues
the handler and Revit calls IExternalEventHandler.Execute(uiapp) on that
thread when it is idle. The double's Session plays that thread."""
import gc
import queue
import threading
import time

from .ids import NetList
from .netenum import NetEnum

# How often an idle API thread looks for a new Idling handler, in seconds.
IDLE_POLL = 0.05


class ExternalEventRequest(NetEnum):
    Accepted = 0
    Pending = 1
    Denied = 2
    TimedOut = 3


class IExternalEventHandler:
    def Execute(self, uiapp):
        raise NotImplementedError

    def GetName(self):
        return type(self).__name__


class ExternalEvent:
    def __init__(self, handler, session):
        self._handler, self._session = handler, session
        self._pending = False
        self._lock = threading.Lock()

    @staticmethod
    def Create(handler):
        session = Session.current
        if session is None:
            raise RuntimeError("ExternalEvent.Create: no Revit session (the double's Session) is running")
        return ExternalEvent(handler, session)

    IsPending = property(lambda self: self._pending)

    def Raise(self):
        """Pending while an earlier raise has not run yet; Accepted once queued."""
        with self._lock:
            if self._pending:
                return ExternalEventRequest.Pending
            if self._session._stopped:
                return ExternalEventRequest.Denied
            self._pending = True
        self._session._queue.put(self)
        return ExternalEventRequest.Accepted

    def _run(self, uiapp):
        with self._lock:
            self._pending = False
        self._handler.Execute(uiapp)

    def Dispose(self):
        pass


class Selection:
    """Autodesk.Revit.UI.Selection.Selection: the ids selected in the UI."""

    def __init__(self):
        self._ids = NetList()

    def GetElementIds(self):
        return NetList(self._ids)

    def SetElementIds(self, ids):
        self._ids = NetList(ids)


class UIDocument:
    """Document and Selection are read-only (api/revit2017.json)."""

    def __init__(self, doc):
        self._doc = doc
        self._selection = Selection()

    Document = property(lambda self: self._doc)
    Selection = property(lambda self: self._selection)
    Application = property(lambda self: UIApplication(self._doc.Application))

    ActiveView = property(lambda self: self._doc.ActiveView)


class IdlingEventArgs:
    """The Idling event's argument: SetRaiseWithoutDelay "sets the next
    invocation of the idling event to be called promptly, rather than
    relying on the default recurrence of idling"
    (https://apidocs.co/apps/revit/2026/6ead2453-9221-9044-0d93-84cc7db00b0d.htm)."""

    def __init__(self):
        self._again = False

    Cancellable = property(lambda self: False)
    IsValidObject = property(lambda self: True)

    def SetRaiseWithoutDelay(self):
        self._again = True

    def Dispose(self):
        pass


class UIApplication:
    """Idling "is raised when it is safe for the API application to access
    the active document between user interactions"; "in the default mode, a
    single raise of the event will be made each time Revit begins an idle
    session", and a handler that needs more asks with SetRaiseWithoutDelay
    (https://www.revitapidocs.com/2024/56145d84-e948-730a-dc72-2a7b88a50a99.htm).
    DialogBoxShowing: see dialogs.py. UIApplication(Application) is Revit's
    one constructor taking an argument; every UIApplication of one
    Application shares its events; ActiveUIDocument is the open project's
    (read-only)."""

    def __init__(self, app):
        from .document import Event
        self._app = app
        events = app.__dict__.setdefault("_ui_events", {})
        self.Idling = events.setdefault("Idling", Event())
        self.DialogBoxShowing = events.setdefault("DialogBoxShowing", Event())

    Application = property(lambda self: self._app)

    @property
    def ActiveUIDocument(self):
        return self._app._active_uidoc


class Session:
    """One running Revit: an Application, its open project and the API
    thread external events run on."""

    current = None

    def __init__(self, version=2026, title="Project1", project=0, workshared=False):
        """project: the number of elements of a generated project
        (projects.generate) on top of the template's; 0 for the template."""
        from . import apicalls
        from .document import Application, Document
        from .seed import seed_project
        self.app = Application(version)
        self.doc = seed_project(Document(self.app, title))
        if project or workshared:
            from .projects import generate
            generate(self.doc, project, workshared=workshared)
            # The project as opened is not garbage: Python's collector need
            # not walk it again (Revit's elements are not Python objects).
            gc.collect()
            gc.freeze()
        self.uidoc = UIDocument(self.doc)
        self.app._active_uidoc = self.uidoc
        self.uiapp = UIApplication(self.app)
        self._queue = queue.Queue()
        self._stopped = False
        self._thread = None
        self.errors = []
        # The double's own records: API calls by caller, each Idling raise's
        # duration in seconds (wall, and the API thread's CPU), and the
        # dialogs nobody answered.
        self._api_calls = apicalls.Counter()
        self._idling = []
        self._unanswered = []
        apicalls.instrument(apicalls.api_classes())
        Session.current = self

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="revit-api", daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        # An idle session begins at start and after each external event;
        # Idling is raised once then, and again at once while a handler
        # asked for it with SetRaiseWithoutDelay.
        # An add-in that subscribes while Revit idles (the double's tests
        # connect from outside the API thread) gets its first raise within
        # IDLE_POLL seconds.
        idle = True
        while True:
            if idle and self.uiapp.Idling._handlers:
                try:
                    ev = self._queue.get_nowait()
                except queue.Empty:
                    idle = self._idle()
                    continue
            else:
                try:
                    ev = self._queue.get(timeout=IDLE_POLL)
                except queue.Empty:
                    continue
            if ev is None:
                return
            try:
                ev._run(self.uiapp)
            except Exception as exc:  # Revit swallows a handler's exception; the double keeps it for tests.
                self.errors.append(exc)
            idle = True

    def _idle(self):
        """Raises Idling once; answers whether a handler asked for another."""
        args = IdlingEventArgs()
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            self.uiapp.Idling.fire(self.uiapp, args)
        except Exception as exc:
            self.errors.append(exc)
        self._idling.append((time.perf_counter() - started, time.thread_time() - cpu))
        return args._again

    def stop(self):
        self._stopped = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(10)
