"""The entry point: FreeCAD's runtime on the host kit.

Scripts run on the main thread, one at a time, taken from a queue (as
Revit's external events do); the HTTP threads only parse requests and wait,
and never touch a document. Headless under freecadcmd the main thread blocks
on the queue; under the GUI a Qt timer drains it so the event loop keeps
running.

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
  NEXUS_HOST_SAVE_TO         the person's file: every commit is saved to it
                             atomically, with FreeCAD's backups; the call
                             ledger is kept beside it
  NEXUS_HOST_TEST_HALT_SAVE_OF_CALL  for tests only: stop dead once the save
                             of this call id's commit is in the ledger,
                             before the file is replaced
  NEXUS_HOST_DOCUMENT_FILENAME  the file name a restored checkpoint takes
                             back, so saving it writes where it came from
  NEXUS_HOST_HEADER_TIMEOUT_MS  how long a request's headers may take (10000)
  NEXUS_HOST_BODY_TIMEOUT_MS    how long a request's body may take (60000)
  NEXUS_HOST_CONNECT_URL     gateway URL(s) to link to: the runtime then
                             carries its own calls over the host link
  NEXUS_HOST_LINK_TOKEN      the host token to link with; without one the
                             runtime pairs (it prints a code to approve)
  NEXUS_HOST_LINK_TOKEN_FILE where a paired host token is kept
"""

import os
import signal
import sys

from hostkit import linked, process, server
from hostkit.runner import Runner
from nexus_freecad.adapter import RUNTIME_VERSION, FreeCADAdapter


def main():
    import FreeCAD

    settings = server.load_settings(os.environ)
    process.Launcher.from_environ(os.environ).watch()
    gui = bool(getattr(FreeCAD, "GuiUp", 0))
    if not gui:
        # Headless, the runtime is its own program: it ends what scripts
        # started when it ends. Under the GUI, FreeCAD owns the process.
        process.become_subreaper()
        signal.signal(signal.SIGTERM, lambda signum, frame: process.exit_now(0))
    if settings["document"]:
        doc = FreeCAD.openDocument(settings["document"])
        if "NEXUS_HOST_DOCUMENT_FILENAME" in os.environ:
            # A checkpoint restored after a restart takes back its own name,
            # so saving it writes where the document came from.
            doc.FileName = os.environ["NEXUS_HOST_DOCUMENT_FILENAME"]
        FreeCAD.setActiveDocument(doc.Name)
    status_fd = int(os.environ.get("NEXUS_HOST_STATUS_FD") or -1)
    status = process.StatusPipe(status_fd if status_fd >= 0 else None)
    adapter = FreeCADAdapter(FreeCAD, gui)
    runner = Runner(adapter, status, os.environ.get("NEXUS_HOST_CHECKPOINT_DIR") or "", settings["document"],
                    settings["save_to"])
    adapter.serve()

    srv, jobs, url = server.listen(settings, "NexusFreeCAD/" + RUNTIME_VERSION)

    def log(msg):
        sys.__stdout__.write("nexus link: %s\n" % msg)
        sys.__stdout__.flush()
        if gui:
            FreeCAD.Console.PrintMessage("Nexus link: %s\n" % msg)

    link = linked.start(os.environ, runner, jobs, log)
    if gui:
        # Run as a macro, the terminal may be hidden: say it in the Report view too.
        FreeCAD.Console.PrintMessage("Nexus runtime serving on %s\n" % url)
        if settings["generated_token"]:
            FreeCAD.Console.PrintMessage("Nexus pairing token: %s\n" % settings["token"])
        from PySide import QtCore

        timer = QtCore.QTimer()
        timer.timeout.connect(lambda: server.drain(runner, jobs))
        timer.start(20)
        # Keep the timer and server alive for the life of the GUI session.
        FreeCAD.__nexus_runtime__ = (timer, srv, link)
        return
    server.serve_forever(runner, jobs)
