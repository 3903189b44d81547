"""The FreeCAD adapter of the Nexus host kit (hosts/hostkit).

What only FreeCAD knows: the document served and its revision (changes),
transactions and their exact rollback (transaction), checkpoints and reloads
(adapter), which elements a script changed (changes), the region a change
affected (framing), rendering (raster headless, views under the GUI), and the
entry point (main). Run it with nexus_runtime.py beside this package and the
kit.
"""
