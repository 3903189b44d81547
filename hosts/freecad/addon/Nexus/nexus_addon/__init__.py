"""The Nexus add-on for FreeCAD: a Nexus workbench (toolbar and menu) with
Connect to Nexus, Disconnect and Status, and a status bar indicator.

Connect links this FreeCAD to Nexus over the host link of the host kit
(hostkit.link): it asks for the Nexus URL once and keeps it in FreeCAD's
parameters, shows the pairing code to approve, and then carries the calls
of the sessions bound to this FreeCAD. Scripts run on the GUI thread, on the
active document, through the same runner, ledger and FreeCAD adapter as the
runtime Nexus launches (hosts/freecad/nexus_freecad); the person saves the
document as usual.

  paths       finds the host kit and the FreeCAD adapter (installed beside
              the add-on, or in the repository it was cloned with)
  connection  the link, the runner on the GUI thread, the status
  commands    the FreeCAD commands and the status bar indicator
  workbench   the workbench and its registration
"""
