"""The Nexus workbench: a toolbar and a menu with the add-on's commands.
The status bar indicator stays in every workbench once FreeCAD is up."""

import FreeCADGui
from PySide import QtCore

from nexus_addon import commands, paths


class NexusWorkbench(FreeCADGui.Workbench):
    MenuText = "Nexus"
    ToolTip = "Link FreeCAD to Nexus: describe the work, review the scripts its agent runs"
    Icon = paths.icon("Nexus")

    def Initialize(self):
        names = [name for name, _ in commands.COMMANDS]
        self.appendToolbar("Nexus", names[:3])
        self.appendMenu("Nexus", names)

    def GetClassName(self):
        return "Gui::PythonWorkbench"


def register():
    for name, command in commands.COMMANDS:
        FreeCADGui.addCommand(name, command())
    FreeCADGui.addWorkbench(NexusWorkbench())
    # The indicator waits for the main window's event loop.
    QtCore.QTimer.singleShot(0, commands.addon().start_indicator)
