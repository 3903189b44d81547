#! python3
"""Show whether this Revit is connected to Nexus and what it serves."""
from nexus_revit import ribbon

for line in ribbon.status():
    print(line)
