# FreeCAD runs this file (not imported: no __file__) when its GUI starts:
# the add-on's folder is on sys.path, so its package does the work.
import nexus_addon.workbench

nexus_addon.workbench.register()
