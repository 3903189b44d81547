"""Revit as a host of the Nexus host kit: the adapter (adapter.py), one
script's run in a TransactionGroup (transaction.py), the document's state for
verifying rollbacks (state.py), views (views.py, framing.py), the way onto
Revit's API thread (apithread.py), the runtime's start and stop (runtime.py),
and the ribbon buttons' work (ribbon.py). The same code runs inside Revit and
on the Revit API double (hosts/revit/double)."""
