#! python3
"""Connect this Revit to Nexus: serve the open project to Nexus's model."""
from nexus_revit import ribbon

for line in ribbon.connect(__revit__):  # noqa: F821 - pyRevit's UIApplication
    print(line)
