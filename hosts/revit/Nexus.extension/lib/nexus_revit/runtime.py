"""The runtime's start and stop, shared by the ribbon buttons (in Revit) and
the double's entry point: the kit's loopback server, the runner on the
Revit adapter, and the pump onto the API thread."""
import os

from hostkit import process, server
from hostkit.runner import Runner
from nexus_revit.adapter import RUNTIME_VERSION, RevitAdapter
from nexus_revit.apithread import ApiThread


class Runtime:
    def __init__(self, uiapp, environ=None):
        environ = dict(os.environ if environ is None else environ)
        self.settings = server.load_settings(environ)
        fd = environ.get("NEXUS_HOST_STATUS_FD")
        self.status = process.StatusPipe(int(fd) if fd else None)
        self.adapter = RevitAdapter(uiapp)
        self.runner = Runner(self.adapter, self.status, environ.get("NEXUS_HOST_CHECKPOINT_DIR") or "")
        self.httpd, self.jobs, self.url = server.listen(self.settings, "nexus-revit/" + RUNTIME_VERSION)
        self.api = ApiThread(self.runner, self.jobs).start()

    @property
    def token(self):
        return self.settings["token"]

    def stop(self):
        self.api.stop()
        self.httpd.shutdown()
        self.httpd.server_close()
