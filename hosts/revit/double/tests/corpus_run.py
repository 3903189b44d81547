"""Runs one script of the corpus on the double, as pyRevit or
RevitPythonShell would run it in Revit: in a child process, with __revit__,
doc and uidoc bound, on a project holding a room of four walls on Level 1
with a door, a window, a floor and a room in it, the walls selected. run(code) answers {"status": "runs"}; {"status": "lacks", "lacks":
what it reached for}, a Revit API name the double lacks, a module, or
something only IronPython has; or {"status": "fails", "lacks": the error}
for an error the script meets on the double as it would in Revit (a Revit
exception the double raises as the reference says, an empty list indexed)."""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DOUBLE = os.path.dirname(HERE)

_PROJECT = '''
from Autodesk.Revit.DB import *
from Autodesk.Revit.DB.Structure import StructuralType
doc, uidoc = _s.doc, _s.uidoc
__revit__ = _s.uiapp
_t = Transaction(doc, "corpus project")
_t.Start()
_lv = sorted(FilteredElementCollector(doc).OfClass(Level), key=lambda l: l.Elevation)[0]
_f = lambda v: UnitUtils.ConvertToInternalUnits(v, UnitTypeId.Millimeters)
_pts = [XYZ(0, 0, 0), XYZ(_f(6000), 0, 0), XYZ(_f(6000), _f(4000), 0), XYZ(0, _f(4000), 0)]
_walls = [Wall.Create(doc, Line.CreateBound(_pts[i], _pts[(i + 1) % 4]), _lv.Id, False) for i in range(4)]
_sym = {}
for _bic in (BuiltInCategory.OST_Doors, BuiltInCategory.OST_Windows):
    _sym[_bic] = FilteredElementCollector(doc).OfClass(FamilySymbol).OfCategory(_bic).FirstElement()
    _sym[_bic].Activate()
_door = doc.Create.NewFamilyInstance(XYZ(_f(2000), 0, 0), _sym[BuiltInCategory.OST_Doors], _walls[0], _lv, StructuralType.NonStructural)
doc.Create.NewFamilyInstance(XYZ(_f(6000), _f(2000), 0), _sym[BuiltInCategory.OST_Windows], _walls[1], _lv, StructuralType.NonStructural)
Floor.Create(doc, [CurveLoop.Create([Line.CreateBound(_pts[i], _pts[(i + 1) % 4]) for i in range(4)])],
             FilteredElementCollector(doc).OfClass(FloorType).FirstElement().Id, _lv.Id)
doc.Create.NewRoom(_lv, UV(_f(3000), _f(2000)))
_t.Commit()
uidoc.Selection.SetElementIds([w.Id for w in _walls])
'''

_CHILD = '''
import json, sys, traceback
sys.path[:0] = [%(double)r]
from revitdouble import Session
_s = Session()
exec(compile(%(project)r, "<project>", "exec"))
_code = sys.stdin.read()
try:
    exec(compile(_code, "<script>", "exec"), {"__name__": "__main__", "__revit__": __revit__, "doc": doc, "uidoc": uidoc})
    out = {"status": "runs"}
except SystemExit as e:
    out = {"status": "runs"} if not e.code else {"status": "error", "error": "SystemExit: %%s" %% e.code}
except BaseException as e:
    out = {"status": "error", "error": "%%s: %%s" %% (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
sys.stdout = sys.__stdout__
print("\\nCORPUS RESULT " + json.dumps(out))
'''


def _revit_classes():
    with open(os.path.join(DOUBLE, "api", "revit2017.json"), encoding="utf-8") as f:
        classes = json.load(f)["classes"]
    return {full.rsplit(".", 1)[1]: full for full in sorted(classes, reverse=True)}


def classify(error):
    """(status, what) of a failing script's exception."""
    what = lacks(error)
    if what != error or error.startswith(("ModuleNotFoundError", "ImportError", "AttributeError", "NameError")):
        return "lacks", what
    return "fails", error


def lacks(error):
    """The API a failing script reached for, read from its exception."""
    if error.startswith("SyntaxError"):
        return "Python 3 syntax (the script is IronPython's: %s)" % error.split(": ", 1)[1].split(" (<script>")[0]
    m = re.match(r"AttributeError: '(str|list|dict|tuple|int|float)' object has no attribute '(\w+)'", error)
    if m:
        return "%s.%s (a .NET member IronPython gives Python's own types; CPython has none)" % m.groups()
    for pattern, fmt in (
            (r"ModuleNotFoundError: No module named '([\w.]+)'", "module {0}"),
            (r"ImportError: cannot import name '(\w+)' from '([\w.]+)'", "{1}.{0}"),
            (r"AttributeError: type object '(\w+)' has no attribute '(\w+)'", "{0}.{1}"),
            (r"AttributeError: '(\w+)' object has no attribute '(\w+)'", "{0}.{1}"),
            (r"AttributeError: module '([\w.]+)' has no attribute '(\w+)'", "{0}.{1}"),
            (r"NameError: name '(\w+)' is not defined", "{0} (a name the script never binds)")):
        m = re.match(pattern, error)
        if m:
            if error.startswith("NameError") and m.group(1) in _revit_classes():
                return _revit_classes()[m.group(1)]
            return fmt.format(*m.groups())
    return error


def run(code, timeout=60):
    child = _CHILD % {"double": DOUBLE, "project": _PROJECT}
    with tempfile.TemporaryDirectory() as cwd:
        p = subprocess.run([sys.executable, "-c", child], input=code, capture_output=True, text=True, cwd=cwd,
                           timeout=timeout, env=dict(os.environ, PYTHONPATH=DOUBLE, PYTHONDONTWRITEBYTECODE="1"))
    marker = [l for l in p.stdout.splitlines() if l.startswith("CORPUS RESULT ")]
    if not marker:
        err = (p.stderr.strip().splitlines() or ["no result"])[-1]
    else:
        out = json.loads(marker[-1][len("CORPUS RESULT "):])
        if out["status"] == "runs":
            return out
        err = out["error"]
    status, what = classify(err)
    return {"status": status, "lacks": what, "error": err}
