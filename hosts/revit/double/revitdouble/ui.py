"""Autodesk.Revit.UI: the UI application and document, and ExternalEvent,
the one way a modeless add-in gets onto Revit's API thread: Raise() queues
the handler and Revit calls IExternalEventHandler.Execute(uiapp) on that
thread when it is idle. The double's Session plays that thread."""
import enum
import queue
import threading

from .ids import NetList


class ExternalEventRequest(enum.IntEnum):
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
    def __init__(self):
        self._ids = NetList()

    def GetElementIds(self):
        return NetList(self._ids)

    def SetElementIds(self, ids):
        self._ids = NetList(ids)


class UIDocument:
    def __init__(self, doc):
        self.Document = doc
        self.Selection = Selection()

    ActiveView = property(lambda self: self.Document.ActiveView)


class UIApplication:
    def __init__(self, app, uidoc):
        self.Application = app
        self.ActiveUIDocument = uidoc


class Session:
    """One running Revit: an Application, its open project and the API
    thread external events run on."""

    current = None

    def __init__(self, version=2026, title="Project1"):
        from .document import Application, Document
        from .seed import seed_project
        self.app = Application(version)
        self.doc = seed_project(Document(self.app, title))
        self.uidoc = UIDocument(self.doc)
        self.uiapp = UIApplication(self.app, self.uidoc)
        self._queue = queue.Queue()
        self._stopped = False
        self._thread = None
        self.errors = []
        Session.current = self

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="revit-api", daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while True:
            ev = self._queue.get()
            if ev is None:
                return
            try:
                ev._run(self.uiapp)
            except Exception as exc:  # Revit swallows a handler's exception; the double keeps it for tests.
                self.errors.append(exc)

    def stop(self):
        self._stopped = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(10)
