"""What the Nexus ribbon panel's buttons do inside Revit (pyRevit's CPython
engine): Connect starts the add-in's runtime on the open project, Disconnect
stops it, Status says what it serves.

pyRevit's CPython engine lives as long as Revit (pythonnet initialises once
per process), so the running runtime is kept on this module, which stays
imported between button presses: it is the one piece of state that must
outlive a command.

The host link (the runtime connecting out to Nexus with a pairing code the
person approves) is not part of the host kit yet: Connect serves the
loopback contract and shows its address and pairing token, for a courier on
this machine (the browser or `nexus`). When the kit has a link client,
_start_link is where it starts, on its own background thread.
"""
import os

_RUNNING = {}


def _start_link(runtime):
    """The seam for the host link; answers a line for the person."""
    return ("Nexus host link: not available in this add-in version; use the loopback address below "
            "from the Nexus web app or `nexus` on this machine.")


def connect(uiapp, environ=None):
    """Answers the lines to show the person."""
    from nexus_revit.runtime import Runtime
    if "runtime" in _RUNNING:
        rt = _RUNNING["runtime"]
        return ["Already connected: %s serves %s" % (rt.url, rt.adapter.document_label())]
    env = dict(os.environ if environ is None else environ)
    env.setdefault("NEXUS_HOST_ADDR", "127.0.0.1:7723")
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
            "Revit %s, add-in %s" % (a.host_version(), a.runtime_version)]
