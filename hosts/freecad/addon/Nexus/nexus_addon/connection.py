"""One link of this FreeCAD to Nexus: the host kit's link client carries the
calls of the sessions bound to this FreeCAD, and a Qt timer runs each on the
GUI thread through the kit's runner (the ledger runs each call id once) on
the FreeCAD adapter, which serves the active document. Nothing is saved to
a file: after a commit the document is marked modified, and the person saves
it as usual."""

import os
import queue
import sys
import tempfile

import FreeCAD
import FreeCADGui
from PySide import QtCore

from nexus_addon import paths

# Where the add-on keeps its settings in FreeCAD's parameters.
PARAMS = "User parameter:BaseApp/Preferences/Mod/Nexus"
# How often the GUI thread looks for calls to run, milliseconds.
DRAIN_MS = 20


def params():
    return FreeCAD.ParamGet(PARAMS)


def saved_url():
    """The Nexus URL the person gave last, or ""."""
    return params().GetString("URL", "")


def remember_url(url):
    params().SetString("URL", url)


def token_file():
    """Where the host token of this FreeCAD is kept (mode 600), in FreeCAD's
    user data folder."""
    return os.path.join(FreeCAD.getUserAppDataDir(), "Nexus", "host-token")


def log(msg):
    FreeCAD.Console.PrintMessage("Nexus: %s\n" % msg)
    sys.__stdout__.write("nexus addon: %s\n" % msg)
    sys.__stdout__.flush()


class Connection:
    """The link to the Nexus at url, until stop(). on_change() is called on
    the GUI thread right before and after each call runs, so the status
    shows the script running now even while it blocks the event loop."""

    def __init__(self, url, on_change=lambda: None):
        paths.ensure()
        from hostkit import linked, process
        from hostkit.runner import Runner
        from nexus_freecad.adapter import FreeCADAdapter

        self.url = url
        self.on_change = on_change
        self.running = None
        self.adapter = FreeCADAdapter(FreeCAD, True)
        # Checkpoints serve exact rollback only; the person's file is theirs.
        self.runner = Runner(self.adapter, process.StatusPipe(None), tempfile.mkdtemp(prefix="nexus-addon-"))
        self.adapter.serve()
        self.jobs = queue.Queue()
        self.link = linked.start({"NEXUS_HOST_CONNECT_URL": url, "NEXUS_HOST_LINK_TOKEN_FILE": token_file()},
                                 self.runner, self.jobs, log)
        self.timer = QtCore.QTimer()
        self.timer.timeout.connect(self._drain)
        self.timer.start(DRAIN_MS)

    def _drain(self):
        from hostkit import server

        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                return
            call = self.link.carrying or {}
            self.running = call.get("toolCall", {}).get("description") or job.kind
            self.on_change()
            try:
                server.run_job(self.runner, job)
            finally:
                self.running = None
            if isinstance(job.result, dict) and job.result.get("committed"):
                self._mark_modified()
            self.on_change()

    def _mark_modified(self):
        """The commit is in the open document only: FreeCAD shows it unsaved,
        and asks to save it on closing, as after any change of the person's.
        FreeCAD marks it so itself when objects change; a document the
        runtime reloaded from a checkpoint for an exact rollback comes back
        unmarked, so the add-on marks it where FreeCAD lets it (Modified is
        read-only in FreeCAD 0.20, where touching the document does it)."""
        doc = self.adapter.document()
        gui_doc = FreeCADGui.getDocument(doc.Name)
        if gui_doc is None or gui_doc.Modified:
            return
        try:
            gui_doc.Modified = True
        except AttributeError:
            for obj in doc.Objects[:1]:
                obj.touch()
            doc.recompute()

    def document(self):
        """The document the link's scripts work on."""
        return self.adapter.document()

    def stop(self):
        """Cuts the link; calls not yet run are answered as not run, and
        Nexus offers them again when this FreeCAD links next."""
        self.timer.stop()
        self.link.stop()
        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                break
            job.status = 503
            job.result = {"error": {"type": "HostRuntimeError", "message": "FreeCAD disconnected from Nexus before the call ran"}}
            job.done.set()

    def state(self):
        """What the status shows: (phase, detail) with phase one of
        "pairing", "linked", "connecting"."""
        link = self.link
        if link.pairing_code:
            return "pairing", link.pairing_code
        if link.linked.is_set():
            return "linked", link.host_id
        return "connecting", self.url
