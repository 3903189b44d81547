"""Drives the FreeCAD GUI for the add-on's test, as a person would: it picks
the Nexus workbench, remembers the Nexus URL (what Connect offers) and
runs Connect to Nexus, taking the URL its dialog offers. Then, every few hundred milliseconds, it writes what
the window shows to NEXUS_DRIVER_DIR/state.json, and takes a screenshot of
the main window for each NEXUS_DRIVER_DIR/shot-NAME it finds (into
NEXUS_DRIVER_ARTIFACTS/NAME.png, then NEXUS_DRIVER_DIR/shot-NAME.done)."""

import json
import os
import time
import traceback

import FreeCAD
import FreeCADGui
from PySide import QtCore, QtGui

DIR = os.environ["NEXUS_DRIVER_DIR"]
ARTIFACTS = os.environ["NEXUS_DRIVER_ARTIFACTS"]


def write_state(**state):
    tmp = os.path.join(DIR, "state.json.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, os.path.join(DIR, "state.json"))


def census(doc):
    import Draft
    return ["%s|%s" % (Draft.getType(o), getattr(o, "IfcType", "")) for o in doc.Objects]


def tick():
    try:
        mw = FreeCADGui.getMainWindow()
        bars = [b.windowTitle() for b in mw.findChildren(QtGui.QToolBar) if b.isVisible()]
        label = mw.findChild(QtGui.QLabel, "NexusStatus")
        addon = getattr(FreeCAD, "__nexus_addon__", None)
        conn = addon.conn if addon is not None else None
        doc = FreeCAD.ActiveDocument
        gui_doc = FreeCADGui.ActiveDocument
        # Connect asks for the URL, filled in: note what it offered and
        # take it, as a person clicking OK does.
        for w in QtGui.QApplication.topLevelWidgets():
            if isinstance(w, QtGui.QInputDialog) and w.isVisible():
                FreeCAD.__nexus_driver_asked__ = w.textValue()
                w.accept()
        pairing = mw.findChild(QtGui.QLabel, "NexusPairingText")
        for name in os.listdir(DIR):
            if name.startswith("shot-") and not name.endswith(".done"):
                shot = name[len("shot-"):]
                if gui_doc is not None:
                    view = gui_doc.ActiveView
                    view.viewIsometric()
                    view.fitAll()
                    QtGui.QApplication.processEvents()
                # The screen's pixels, not mw.grab(): the 3D view is OpenGL,
                # which a widget grab leaves blank.
                screen = QtGui.QGuiApplication.primaryScreen()
                screen.grabWindow(mw.winId()).save(os.path.join(ARTIFACTS, shot + ".png"))
                os.remove(os.path.join(DIR, name))
                open(os.path.join(DIR, name + ".done"), "w").close()
        write_state(
            toolbars=bars, workbench=FreeCADGui.activeWorkbench().name(),
            status=label.text() if label is not None else "",
            pairingCode=conn.link.pairing_code if conn is not None else "",
            connectOffered=getattr(FreeCAD, "__nexus_driver_asked__", ""),
            pairingText=pairing.text() if pairing is not None and pairing.isVisible() else "",
            pairingLinkOpens=bool(pairing is not None and pairing.openExternalLinks()),
            linked=bool(conn is not None and conn.link.linked.is_set()),
            document=doc.Name if doc is not None else "", objects=census(doc) if doc is not None else [],
            modified=bool(gui_doc is not None and gui_doc.Modified),
            # A script's own calls into the GUI may let this timer run while
            # it is half done: running says so, written when this was read.
            running=bool(conn is not None and conn.running), written=time.time(), error="")
    except Exception:
        write_state(error=traceback.format_exc())


def start():
    FreeCADGui.getMainWindow().resize(1600, 1000)
    FreeCADGui.activateWorkbench("NexusWorkbench")
    FreeCAD.ParamGet("User parameter:BaseApp/Preferences/Mod/Nexus").SetString("URL", os.environ["NEXUS_DRIVER_URL"])
    # The timer first: Connect's dialog is modal, and tick answers it.
    timer = QtCore.QTimer()
    timer.timeout.connect(tick)
    timer.start(300)
    FreeCAD.__nexus_driver__ = timer
    FreeCADGui.runCommand("Nexus_Connect")


QtCore.QTimer.singleShot(0, start)
