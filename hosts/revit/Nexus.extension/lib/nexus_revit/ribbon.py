"""What the Nexus ribbon panel's buttons do inside Revit (pyRevit's CPython
engine): Connect starts the add-in's runtime on the open project, Disconnect
stops it, Status says what it serves.

pyRevit's CPython engine lives as long as Revit (pythonnet initialises once
per process), so the running runtime is kept on this module, which stays
imported between button presses: it is the one piece of state that must
outlive a command.

Connect always serves the loopback contract and shows its address and
pairing token, for a courier on this machine (the browser or `nexus`). With
NEXUS_HOST_CONNECT_URL set (the gateway to link to) it also starts the host
link, the kit's link client on its own thread: the runtime connects out and
carries its own calls. Without a host token (NEXUS_HOST_LINK_TOKEN, or one
kept in NEXUS_HOST_LINK_TOKEN_FILE) it pairs first and shows the code to
approve; what the link says later goes to pyRevit's output window.
"""
import os
import sys

_RUNNING = {}


def _output_log(out):
    """Writes the link's lines to out: the stdout of the Connect command,
    which pyRevit shows in the command's output window."""
    def log(msg):
        try:
            out.write("Nexus host link: %s\n" % msg)
            out.flush()
        except (OSError, ValueError):
            # The window was closed: the line goes where Revit's own go.
            sys.__stdout__.write("nexus link: %s\n" % msg)
    return log


def _start_link(runtime):
    """Starts the host link when one is configured; answers a line for the
    person."""
    link = runtime.start_link(_output_log(sys.stdout))
    if link is None:
        return ("Nexus host link: off (set NEXUS_HOST_CONNECT_URL to the Nexus address to link this runtime); "
                "use the loopback address below from the Nexus web app or `nexus` on this machine.")
    if link.token:
        return "Nexus host link: connecting to %s with this machine's host token." % link.url
    return ("Nexus host link: pairing with %s; the code to approve (nexus hosts approve CODE) "
            "appears in the output window." % link.url)


def connect(uiapp, environ=None):
    """Answers the lines to show the person."""
    from hostkit.auth import DEFAULT_ADDR
    from nexus_revit.runtime import Runtime
    if "runtime" in _RUNNING:
        rt = _RUNNING["runtime"]
        return ["Already connected: %s serves %s" % (rt.url, rt.adapter.document_label())]
    env = dict(os.environ if environ is None else environ)
    env.setdefault("NEXUS_HOST_ADDR", DEFAULT_ADDR)
    rt = Runtime(uiapp, env)
    _RUNNING["runtime"] = rt
    return ["Nexus runtime for %s" % rt.adapter.document_label(),
            "address: %s" % rt.url, "pairing token: %s" % rt.token, _start_link(rt)]


def disconnect():
    rt = _RUNNING.pop("runtime", None)
    if rt is None:
        return ["Not connected."]
    rt.stop()
    return ["Disconnected; the runtime at %s has stopped." % rt.url]


def status():
    rt = _RUNNING.get("runtime")
    if rt is None:
        return ["Not connected. Press Connect to serve the open project to Nexus."]
    a = rt.adapter
    return ["Connected: %s" % rt.url, "document: %s (revision %s)" % (a.document_label(), a.revision()),
            "Revit %s, add-in %s" % (a.host_version(), a.runtime_version), a.mirror.progress()]
