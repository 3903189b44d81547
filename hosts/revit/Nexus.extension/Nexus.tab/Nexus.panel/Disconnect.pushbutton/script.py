#! python3
"""Disconnect from Nexus: stop serving the open project."""
from nexus_revit import ribbon

for line in ribbon.disconnect():
    print(line)
