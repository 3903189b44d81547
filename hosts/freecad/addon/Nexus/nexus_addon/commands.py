"""The add-on's commands (Connect to Nexus, Disconnect, Status) and the
status bar indicator: linked or not, the session working on this document,
and the script running now."""

import html

import FreeCAD
import FreeCADGui
from PySide import QtCore, QtGui

from nexus_addon import connection, paths

# How often the indicator is brought up to date, milliseconds.
STATUS_MS = 500
# The URL Connect offers before the person gave one: where make run serves.
DEFAULT_URL = "http://127.0.0.1:8080"


class Addon:
    """The add-on's state in this FreeCAD: at most one connection, the
    indicator, and the pairing dialog while a code waits for approval."""

    def __init__(self):
        self.conn = None
        self.label = None
        self.dialog = None
        self.timer = None

    def start_indicator(self):
        if self.label is not None:
            return
        bar = FreeCADGui.getMainWindow().statusBar()
        self.label = QtGui.QLabel()
        self.label.setObjectName("NexusStatus")
        bar.addPermanentWidget(self.label)
        self.timer = QtCore.QTimer()
        self.timer.timeout.connect(self.update)
        self.timer.start(STATUS_MS)
        self.update()

    def text(self):
        """The indicator's text."""
        if self.conn is None:
            return "Nexus: not connected"
        phase, detail = self.conn.state()
        if phase == "pairing":
            return "Nexus: approve code %s" % detail
        if phase == "connecting":
            return "Nexus: connecting to %s" % detail
        parts = ["Nexus: linked as %s" % detail]
        session = self.conn.link.last_session
        if session:
            parts.append("session %s on %s" % (session, self.conn.document().Label))
        if self.conn.running:
            parts.append("running: %s" % self.conn.running)
        return " | ".join(parts)

    def update(self):
        if self.label is None:
            return
        self.label.setText(self.text())
        self.label.repaint()
        phase = self.conn.state()[0] if self.conn is not None else ""
        if phase == "pairing" and self.dialog is None:
            self._show_code(self.conn.link.pairing_code, self.conn.link.pairing_link)
        elif phase != "pairing" and self.dialog is not None:
            self.dialog.close()
            self.dialog = None

    def _show_code(self, code, link):
        """A dialog that does not block FreeCAD: the link waits for the
        approval on its own thread, and the dialog closes once it came. The
        link to approve it opens in the browser, and can be selected or
        copied to open elsewhere."""
        box = QtGui.QDialog(FreeCADGui.getMainWindow())
        box.setObjectName("NexusPairing")
        box.setWindowTitle("Connect to Nexus")
        text = QtGui.QLabel()
        text.setObjectName("NexusPairingText")
        text.setTextFormat(QtCore.Qt.RichText)
        text.setText("Approve this FreeCAD in Nexus: open<br><a href=\"%s\">%s</a><br>"
                     "and check that it shows this machine and document; or run<br>"
                     "<code>nexus hosts approve %s</code><br><br>Code: <b>%s</b>"
                     % (html.escape(link), html.escape(link), html.escape(code), html.escape(code)))
        text.setOpenExternalLinks(True)
        text.setTextInteractionFlags(QtCore.Qt.TextBrowserInteraction)
        copy = QtGui.QPushButton("Copy link")
        copy.setObjectName("NexusPairingCopy")
        copy.clicked.connect(lambda: QtGui.QApplication.clipboard().setText(link))
        close = QtGui.QPushButton("Close")
        close.clicked.connect(box.close)
        buttons = QtGui.QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(copy)
        buttons.addWidget(close)
        layout = QtGui.QVBoxLayout(box)
        layout.addWidget(text)
        layout.addLayout(buttons)
        box.setModal(False)
        box.show()
        self.dialog = box

    def connect(self, url):
        if self.conn is not None:
            self.conn.stop()
        connection.remember_url(url)
        self.conn = connection.Connection(url, self.update)
        self.update()

    def disconnect(self):
        if self.conn is not None:
            self.conn.stop()
            self.conn = None
        self.update()


def addon():
    """The one Addon of this FreeCAD (kept on the FreeCAD module, which
    lives as long as the GUI)."""
    if not hasattr(FreeCAD, "__nexus_addon__"):
        FreeCAD.__nexus_addon__ = Addon()
    return FreeCAD.__nexus_addon__


class Connect:
    def GetResources(self):
        return {"Pixmap": paths.icon("Connect"), "MenuText": "Connect to Nexus",
                "ToolTip": "Link this FreeCAD to Nexus: its agent's scripts run in the active document"}

    def IsActive(self):
        return addon().conn is None

    def Activated(self):
        # Filled with the URL given last (or where make run serves), so
        # connecting again is one click.
        url, ok = QtGui.QInputDialog.getText(FreeCADGui.getMainWindow(), "Connect to Nexus",
                                             "The Nexus URL (make run prints it):", QtGui.QLineEdit.Normal,
                                             connection.saved_url() or DEFAULT_URL)
        url = str(url).strip()
        if not ok or not url:
            return
        try:
            addon().connect(url)
        except (ImportError, ValueError) as exc:
            QtGui.QMessageBox.warning(FreeCADGui.getMainWindow(), "Connect to Nexus", str(exc))


class Disconnect:
    def GetResources(self):
        return {"Pixmap": paths.icon("Disconnect"), "MenuText": "Disconnect from Nexus",
                "ToolTip": "Cut the link to Nexus; calls not run yet wait for the next connection"}

    def IsActive(self):
        return addon().conn is not None

    def Activated(self):
        addon().disconnect()


class Status:
    def GetResources(self):
        return {"Pixmap": paths.icon("Status"), "MenuText": "Nexus status",
                "ToolTip": "Whether this FreeCAD is linked, the session working on it and the script running now"}

    def Activated(self):
        url = connection.saved_url() or "(none yet)"
        QtGui.QMessageBox.information(FreeCADGui.getMainWindow(), "Nexus status",
                                      "%s\n\nNexus URL: %s\n(Forget URL clears it: Connect asks again.)" % (addon().text(), url))


class ForgetURL:
    def GetResources(self):
        return {"MenuText": "Forget the Nexus URL", "ToolTip": "Connect to Nexus asks for the URL again"}

    def IsActive(self):
        return addon().conn is None

    def Activated(self):
        connection.params().RemString("URL")


COMMANDS = (("Nexus_Connect", Connect), ("Nexus_Disconnect", Disconnect), ("Nexus_Status", Status),
            ("Nexus_ForgetURL", ForgetURL))
