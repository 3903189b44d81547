"""Onto Revit's API thread. The kit's HTTP threads queue each request; a
pump thread takes them one at a time and raises an ExternalEvent, and Revit
calls the handler's Execute on its API thread, where the request runs. One
request is in flight at a time, in arrival order, so the kit's ledger and
timeouts hold as on FreeCAD's main thread."""
import threading

from hostkit import server


def _handler_class():
    from Autodesk.Revit.UI import IExternalEventHandler

    class RunRequest(IExternalEventHandler):
        __namespace__ = "Nexus"

        def __init__(self, runner):
            super().__init__()
            self.runner = runner
            self.job = None
            self.ran = threading.Event()

        def Execute(self, uiapp):
            job, self.job = self.job, None
            try:
                if job is not None:
                    server.run_job(self.runner, job)
            finally:
                # Whatever the request did, dialogs after it are the person's.
                self.runner.adapter.dialogs.end()
                self.ran.set()

        def GetName(self):
            return "Nexus: run a request"

    return RunRequest


class ApiThread:
    """Create on the API thread (a command's context, as ExternalEvent.Create
    requires in Revit); start() begins pumping jobs."""

    def __init__(self, runner, jobs):
        from Autodesk.Revit.UI import ExternalEvent
        self.jobs = jobs
        self.handler = _handler_class()(runner)
        self.event = ExternalEvent.Create(self.handler)
        self.stopped = threading.Event()
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self._pump, name="nexus-revit-pump", daemon=True)
        self.thread.start()
        return self

    def _pump(self):
        from Autodesk.Revit.UI import ExternalEventRequest
        while not self.stopped.is_set():
            job = self.jobs.get()
            if job is None:
                return
            self.handler.ran.clear()
            self.handler.job = job
            answer = self.event.Raise()
            if answer != ExternalEventRequest.Accepted:
                job.status, job.result = 503, {"error": "Revit refused to run the request now (%s); try again" % answer}
                job.done.set()
                continue
            # Revit runs it when idle; a modal dialog open in Revit holds it.
            self.handler.ran.wait()

    def stop(self):
        self.stopped.set()
        self.jobs.put(None)
        self.event.Dispose()
