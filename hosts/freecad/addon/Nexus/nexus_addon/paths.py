"""Where the host kit and the FreeCAD adapter are: the add-on ships no copy
of them. `nexus host freecad --install-addon` writes the packages Nexus
embeds into lib/ beside the add-on; the Addon Manager, installing from the
repository, clones them with it (hosts/hostkit and hosts/freecad/
nexus_freecad, three folders up from the add-on)."""

import os
import sys

ADDON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def candidates():
    """The folders that may hold hostkit and nexus_freecad, first wins."""
    hosts = os.path.normpath(os.path.join(ADDON_DIR, "..", "..", ".."))
    return [os.path.join(ADDON_DIR, "lib"), hosts, os.path.join(hosts, "freecad")]


def ensure():
    """Puts the folders holding the two packages on sys.path; raises
    ImportError naming where it looked when one is missing."""
    for package in ("hostkit", "nexus_freecad"):
        for folder in candidates():
            if os.path.isfile(os.path.join(folder, package, "__init__.py")):
                if folder not in sys.path:
                    sys.path.insert(0, folder)
                break
        else:
            raise ImportError("the Nexus add-on cannot find the %s package in %s: install it with "
                              "`nexus host freecad --install-addon`, or through the Addon Manager from the "
                              "Nexus repository" % (package, ", ".join(candidates())))


def icon(name):
    """The path of one of the add-on's icons."""
    return os.path.join(ADDON_DIR, "icons", name + ".svg")
