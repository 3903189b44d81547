"""The runtime's start and stop, shared by the ribbon buttons (in Revit) and
the double's entry point: the kit's loopback server, the runner on the
Revit adapter, the pump onto the API thread, and the host link when one is
asked for."""
import os

from hostkit import linked, process, server
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
        self.environ = environ
        self.link = None

    def start_link(self, log):
        """Links the runtime to Nexus when NEXUS_HOST_CONNECT_URL is set (the
        kit's link client, on its own thread): its calls then reach the same
        queue, pump and ledger as the loopback server's. Answers the link, or
        None when none was asked for."""
        if self.link is None:
            self.link = linked.start(self.environ, self.runner, self.jobs, log)
        return self.link

    @property
    def token(self):
        return self.settings["token"]

    def stop(self):
        if self.link is not None:
            self.link.stop()
        self.api.stop()
        self.adapter.close()
        self.httpd.shutdown()
        self.httpd.server_close()
