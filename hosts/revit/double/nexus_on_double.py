"""The add-in's runtime on the Revit API double, under plain CPython:
python3 -m nexus_on_double (nexus host revit --double runs it), with the
add-in's lib, the host kit and this folder on PYTHONPATH. The
double's Session plays Revit and its API thread; the runtime is the same
code the ribbon's Connect button starts inside Revit.

Configuration is the kit's (NEXUS_HOST_ADDR, NEXUS_HOST_TOKEN,
NEXUS_HOST_ALLOWED_ORIGIN, NEXUS_HOST_PARENT_PID, NEXUS_HOST_STATUS_FD,
NEXUS_HOST_*_TIMEOUT_MS, and for the host link NEXUS_HOST_CONNECT_URL,
NEXUS_HOST_LINK_TOKEN, NEXUS_HOST_LINK_TOKEN_FILE) and NEXUS_REVIT_VERSION, the Revit version the
double plays (2026; 2023 has IntegerValue only, 2024 and 2025 both);
NEXUS_REVIT_DOUBLE_ELEMENTS, a project of about that many elements instead of
the empty template (revitdouble.projects), and NEXUS_REVIT_DOUBLE_WORKSHARED=1,
a workshared one.
"""
import os
import signal
import sys
import threading

from hostkit import process


def main():
    from revitdouble import Session
    from nexus_revit.runtime import Runtime

    version = int(os.environ.get("NEXUS_REVIT_VERSION") or 2026)
    if version < 2023 or version > 2027:
        sys.stderr.write("NEXUS_REVIT_VERSION must be a Revit version from 2023 to 2027, got %d\n" % version)
        sys.exit(2)
    try:
        elements = int(os.environ.get("NEXUS_REVIT_DOUBLE_ELEMENTS") or 0)
    except ValueError:
        elements = -1
    if elements < 0 or elements > 500000:
        sys.stderr.write("NEXUS_REVIT_DOUBLE_ELEMENTS must be a number of elements from 0 to 500000, got %r\n"
                         % os.environ.get("NEXUS_REVIT_DOUBLE_ELEMENTS"))
        sys.exit(2)
    workshared = os.environ.get("NEXUS_REVIT_DOUBLE_WORKSHARED", "") in ("1", "true")
    process.Launcher.from_environ(os.environ).watch()
    signal.signal(signal.SIGTERM, lambda signum, frame: process.exit_now(0))
    session = Session(version=version, project=elements, workshared=workshared).start()
    try:
        runtime = Runtime(session.uiapp)
    except ValueError as exc:
        sys.stderr.write("nexus revit runtime: %s\n" % exc)
        sys.exit(2)

    def log(msg):
        sys.stdout.write("nexus link: %s\n" % msg)
        sys.stdout.flush()

    runtime.start_link(log)
    threading.Event().wait()


if __name__ == "__main__":
    main()
