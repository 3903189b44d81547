"""Nexus host runtime for FreeCAD: the entry point freecadcmd (or the GUI)
runs. The runtime itself is the package nexus_freecad, an adapter on the host
kit (hostkit); both sit beside this file where nexus writes them, and in the
repository nexus_freecad sits here and hostkit one folder up."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for folder in (HERE, os.path.dirname(HERE)):
    if os.path.isdir(os.path.join(folder, "hostkit")) and folder not in sys.path:
        sys.path.insert(0, folder)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

if __name__ in ("__main__", "nexus_runtime"):
    from nexus_freecad.main import main

    main()
