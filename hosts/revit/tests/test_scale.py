"""The add-in on a project of a real kind: what it does around a script costs
by the change (the mirror built in Idling slices and kept current from
DocumentChanged, a rollback verified for what the transaction touched), a
workshared project's elements another person owns, and a dialog during a
script. Each test runs the runtime on the double in this process and posts
to /v1/execute as Nexus does."""
import hashlib
import json
import threading
import unittest
import urllib.request

from nexus_revit.runtime import Runtime
from revitdouble import Session

TOKEN = "scale-test-token"


class Handler:
    """An edit the person (or another add-in) makes on Revit's API thread
    between two scripts."""

    def __init__(self, fn):
        from Autodesk.Revit.UI import IExternalEventHandler
        outer = self

        class Run(IExternalEventHandler):
            def Execute(self, uiapp):
                try:
                    outer.fn(uiapp.ActiveUIDocument.Document)
                finally:
                    outer.done.set()

        self.fn = fn
        self.done = threading.Event()
        self.handler = Run()


def person_edits(fn):
    from Autodesk.Revit.UI import ExternalEvent
    h = Handler(fn)
    ExternalEvent.Create(h.handler).Raise()
    if not h.done.wait(60):
        raise AssertionError("the person's edit never ran")


class Served(unittest.TestCase):
    project = 0
    workshared = False

    def setUp(self):
        self.session = Session(project=self.project, workshared=self.workshared).start()
        self.addCleanup(self.session.stop)
        self.runtime = Runtime(self.session.uiapp, {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": TOKEN})
        self.addCleanup(self.runtime.stop)
        self.calls = 0

    def run_script(self, code, mode="MODE_TRANSACTION", epilogue=None):
        self.calls += 1
        body = {"toolCallId": "call-%d" % self.calls, "mode": mode, "code": code, "transactionName": "test"}
        if epilogue:
            body["epilogue"] = {"code": epilogue, "contentHash": hashlib.sha256(epilogue.encode()).hexdigest()}
        body = json.dumps(body).encode()
        req = urllib.request.Request(self.runtime.url + "/v1/execute", body,
                                     {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())

    def wall_state(self, wall_id):
        out = self.run_script(PRELUDE + "w = doc.GetElement(ElementId(%d))\nprint(w.LookupParameter('Comments').AsString(), "
                              "w.LookupParameter('Mark').AsString())" % wall_id, "MODE_READ_ONLY")
        self.assertNotIn("error", out, out)
        return out["stdout"].strip()


PRELUDE = "from Autodesk.Revit.DB import *\n"


def change_report():
    """The Revit epilogue as the capability service composes it (the
    benchmark composes it the same way)."""
    from bench.bench import epilogue
    return epilogue()["code"]


THREE_WALLS = PRELUDE + """level = FilteredElementCollector(doc).OfClass(Level).FirstElement()
for i in range(3):
    Wall.Create(doc, Line.CreateBound(XYZ(0, 40 + 5 * i, 0), XYZ(10, 40 + 5 * i, 0)), level.Id, False)
print("made 3")
"""


class CostByTheChange(Served):
    project = 1000

    def test_connect_reads_the_project_in_idling_slices(self):
        mirror = self.runtime.adapter.mirror
        self.assertTrue(mirror.done.wait(120), "the Idling slices never finished reading the project")
        # Each collector had a slice of its own, then the elements at least one.
        self.assertGreaterEqual(mirror.slices, 3)
        self.assertGreaterEqual(len(self.session._idling), mirror.slices)
        self.assertEqual(len(mirror.states), len(self.session.doc._elements))
        out = self.run_script("print(1)", "MODE_READ_ONLY")
        self.assertNotIn("hostNotes", out, out)

    def test_rollback_after_three_elements_verifies_those_three(self):
        out = self.run_script(THREE_WALLS + "raise RuntimeError('then it failed')")
        self.assertEqual(out["error"]["type"], "RuntimeError", out)
        self.assertFalse(out["committed"])
        self.assertEqual(out["rollback"], "ROLLBACK_EXACTNESS_EXACT", out)
        self.assertEqual(out["rollbackVerified"], "verified for the 3 elements the transaction touched", out)
        # ... and the elements are really gone.
        count = self.run_script(PRELUDE + "print(FilteredElementCollector(doc).OfClass(Wall).GetElementCount())",
                                "MODE_READ_ONLY")
        walls = sum(1 for e in self.session.doc._elements.values() if type(e).__name__ == "Wall")
        self.assertEqual(count["stdout"].strip(), str(walls))

    def test_a_preview_of_three_walls_is_verified_for_three(self):
        out = self.run_script(THREE_WALLS, "MODE_PREVIEW")
        self.assertTrue(out.get("previewed"), out)
        self.assertEqual(len(out["changes"]["added"]), 3)
        self.assertEqual(out["rollbackVerified"], "verified for the 3 elements the transaction touched", out)

    def test_a_rollback_that_is_not_exact_names_what_differs(self):
        # Revit's own rollback is what the double does; here the double is
        # made to keep one value after the group's rollback (as a broken
        # undo would) and the verification must notice.
        doc = self.session.doc
        wall = next(e for e in doc._elements.values() if type(e).__name__ == "Wall")
        original = doc._restore

        def leaky(snap):
            original(snap)
            dict.__setitem__(wall._data, "comments", "left behind")
        doc._restore = leaky
        out = self.run_script(PRELUDE + "w = doc.GetElement(ElementId(%d))\n"
                              "w.LookupParameter('Comments').Set('x')\nraise ValueError('no')" % wall._id)
        doc._restore = original
        self.assertEqual(out["rollback"], "ROLLBACK_EXACTNESS_NOT_EXACT", out)
        self.assertIn("Comments", " ".join(out["rollbackDifferences"]))
        self.assertEqual(out["rollbackVerified"], "verified for the 1 element the transaction touched", out)

    def test_the_persons_edit_between_two_scripts_is_in_the_next_before(self):
        doc = self.session.doc
        wall_id = next(i for i, e in doc._elements.items() if type(e).__name__ == "Wall")
        out = self.run_script(PRELUDE + "doc.GetElement(ElementId(%d)).LookupParameter('Mark').Set('A-1')" % wall_id)
        self.assertTrue(out["committed"], out)

        def by_hand(d):
            from Autodesk.Revit.DB import ElementId, Transaction
            t = Transaction(d, "the person's edit")
            t.Start()
            d.GetElement(ElementId(wall_id)).LookupParameter("Comments").Set("checked by hand")
            t.Commit()
        person_edits(by_hand)
        # The next script changes the Mark again, then fails: the rollback
        # must hold the wall to the person's comment (the mirror saw it),
        # not to the state after the first script.
        out = self.run_script(PRELUDE + "doc.GetElement(ElementId(%d)).LookupParameter('Mark').Set('A-2')\n"
                              "raise ValueError('stop')" % wall_id)
        self.assertEqual(out["rollback"], "ROLLBACK_EXACTNESS_EXACT", out)
        self.assertEqual(self.wall_state(wall_id), "checked by hand A-1")
        # And a commit reports only what the script changed: the Mark, not
        # the person's Comments.
        out = self.run_script(PRELUDE + "doc.GetElement(ElementId(%d)).LookupParameter('Mark').Set('A-3')" % wall_id)
        self.assertEqual(out["changes"]["modified"], [str(wall_id)], out)
        self.assertEqual(self.runtime.adapter.mirror.states[wall_id],
                         __import__("nexus_revit.state", fromlist=["element_state"]).element_state(
                             doc._elements[wall_id]))

    def test_read_only_costs_the_same_whatever_the_project(self):
        # The add-in's calls around print(1): none of them per element.
        self.run_script("print(1)", "MODE_READ_ONLY")
        calls = self.session._api_calls
        calls.reset()
        self.run_script("print(1)", "MODE_READ_ONLY")
        self.assertLess(calls.by_caller["add-in"], 60, dict(calls.by_member))


    def test_the_project_holds_rooms_and_sheets(self):
        out = self.run_script(PRELUDE + """rooms = FilteredElementCollector(doc).OfCategory(BuiltInCategory.OST_Rooms)
rooms = sorted(rooms.WhereElementIsNotElementType(), key=lambda r: r.Id.Value)
sheets = FilteredElementCollector(doc).OfClass(ViewSheet).ToElements()
placed = sum(len(s.GetAllPlacedViews()) for s in sheets)
print(len(rooms), len(sheets), placed, FilteredElementCollector(doc).OfClass(Viewport).GetElementCount())
for r in rooms[:3]:
    print(r.Number, r.get_Parameter(BuiltInParameter.ROOM_NAME).AsString(), r.Level.Name, "%.9f" % r.Area,
          "%.9f" % r.get_Parameter(BuiltInParameter.ROOM_AREA).AsDouble())
""", "MODE_READ_ONLY")
        self.assertNotIn("error", out, out)
        lines = out["stdout"].splitlines()
        # 75 rooms on the three generated levels; a sheet per level's plan
        # and one of 3D views, each view on it through a viewport.
        self.assertEqual(lines[0], "75 4 4 4")
        doc = self.session.doc
        rooms = sorted(i for i, e in doc._elements.items() if type(e).__name__ == "Room")
        for line, (number, name), i in zip(lines[1:], (("3001", "Office"), ("3002", "Office"), ("3003", "Meeting")),
                                           rooms):
            area = cell_area(doc, doc._elements[i])
            self.assertEqual(line, "%s %s Level 03 %.9f %.9f" % (number, name, area, area))


def cell_area(doc, room):
    """A generated room's area at the finish faces, from a scan of its
    level's walls: its grid cell less half of each wall on the cell's edges
    at the room's point."""
    from revitdouble.projects import CELL_X, CELL_Y
    p = room._data["point"]
    x0, y0 = CELL_X * (p.X // CELL_X), CELL_Y * (p.Y // CELL_Y)
    edges = {("x", x0): 1, ("x", x0 + CELL_X): -1, ("y", y0): 1, ("y", y0 + CELL_Y): -1}
    size = {"x": CELL_X, "y": CELL_Y}
    for w in doc._elements.values():
        if type(w).__name__ != "Wall" or w._data["level"] != room._data["level"]:
            continue
        a, b = w._data["curve"].GetEndPoint(0), w._data["curve"].GetEndPoint(1)
        if a.X == b.X and ("x", a.X) in edges and min(a.Y, b.Y) <= p.Y <= max(a.Y, b.Y):
            size["x"] -= w.Width / 2.0
        elif a.Y == b.Y and ("y", a.Y) in edges and min(a.X, b.X) <= p.X <= max(a.X, b.X):
            size["y"] -= w.Width / 2.0
    return size["x"] * size["y"]


class EarlyScript(Served):
    project = 1000

    def setUp(self):
        # Revit's API thread is busy (a handler waits) while the add-in
        # connects and a script is posted: the script runs before any Idling.
        self.session = Session(project=self.project).start()
        self.addCleanup(self.session.stop)
        release = threading.Event()
        person_busy = Handler(lambda d: release.wait(60))
        from Autodesk.Revit.UI import ExternalEvent
        ExternalEvent.Create(person_busy.handler).Raise()
        self.runtime = Runtime(self.session.uiapp, {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": TOKEN})
        self.addCleanup(self.runtime.stop)
        event, raised = self.runtime.api.event, threading.Event()
        raise_now = event.Raise

        def raise_and_tell():
            answer = raise_now()
            raised.set()
            return answer
        event.Raise = raise_and_tell
        self.calls = 0
        self.answer = {}
        poster = threading.Thread(target=lambda: self.answer.update(self.run_script("print(1)", "MODE_READ_ONLY")))
        poster.start()
        # The request is queued behind the busy handler once the pump raised it.
        self.assertTrue(raised.wait(60), "the request never reached Revit's queue")
        release.set()
        poster.join(120)

    def test_a_script_before_the_read_is_done_reads_the_rest_and_says_so(self):
        out = self.answer
        self.assertNotIn("error", out, out)
        mirror = self.runtime.adapter.mirror
        self.assertTrue(mirror.complete)
        self.assertEqual(mirror.slices, 0)
        self.assertEqual(len(mirror.states), len(self.session.doc._elements))
        self.assertEqual(out["hostNotes"], [
            "the add-in read the last %d element(s) of the project before this script (it had connected moments "
            "before and was still reading it between Revit's idle moments)" % len(self.session.doc._elements)])


class Unreadable(Served):
    project = 1000

    def setUp(self):
        # One wall whose Location the API fails to read, from the start.
        self.session = Session(project=self.project).start()
        self.addCleanup(self.session.stop)
        self.wall = next(e for e in self.session.doc._elements.values() if type(e).__name__ == "Wall")

        class Broken(type(self.wall)):
            @property
            def Location(self):
                from Autodesk.Revit.Exceptions import InvalidOperationException
                raise InvalidOperationException("the double's broken wall")
        self.wall.__class__ = Broken
        self.runtime = Runtime(self.session.uiapp, {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": TOKEN})
        self.addCleanup(self.runtime.stop)
        self.calls = 0

    def test_an_element_the_api_fails_to_describe_stops_nothing(self):
        self.assertTrue(self.runtime.adapter.mirror.done.wait(120))
        self.assertEqual(self.runtime.adapter.mirror.states[self.wall._id][6],
                         (("unreadable", "InvalidOperationException"),))
        out = self.run_script(THREE_WALLS + "raise RuntimeError('then it failed')")
        self.assertEqual(out["rollback"], "ROLLBACK_EXACTNESS_EXACT", out)
        self.assertEqual(out["rollbackVerified"], "verified for the 3 elements the transaction touched", out)


class Workshared(Served):
    project = 1000
    workshared = True

    def test_an_edit_of_an_element_another_user_owns_is_rolled_back_naming_the_owner(self):
        doc = self.session.doc
        from revitdouble.worksharing import _owner
        owned = next(i for i, e in doc._elements.items() if type(e).__name__ == "Wall" and _owner(doc, i) == "anna")
        before = self.wall_state(owned)
        out = self.run_script(PRELUDE + """owned = None
for w in FilteredElementCollector(doc).OfClass(Wall):
    status, owner = WorksharingUtils.GetCheckoutStatus(doc, w.Id, "")
    if status == CheckoutStatus.OwnedByOtherUser:
        owned = w
        break
print("editing", owned.Id.Value, "owned by", owner)
owned.LookupParameter("Mark").Set("mine now")
""")
        self.assertFalse(out["committed"], out)
        self.assertIn("editing %d owned by anna" % owned, out["stdout"])
        message = out["error"]["message"]
        self.assertIn("#%d Walls" % owned, message)
        self.assertIn("is owned by anna", message)
        self.assertIn("never synchronizes with central", message)
        self.assertEqual(out["rollback"], "ROLLBACK_EXACTNESS_EXACT", out)
        self.assertEqual(out["rollbackVerified"], "verified for the 1 element Revit's failure processing named "
                         "(Revit's failure processing rolled the transaction back before it committed, and Revit "
                         "names no elements for a transaction that did not commit)")
        self.assertEqual(self.wall_state(owned), before)

    def test_the_change_report_names_the_worksets_touched(self):
        out = self.run_script(PRELUDE + """for w in FilteredElementCollector(doc).OfClass(Wall):
    if WorksharingUtils.GetCheckoutStatus(doc, w.Id) == CheckoutStatus.OwnedByCurrentUser:
        w.LookupParameter("Comments").Set("mine")
        break
""", epilogue=change_report())
        self.assertTrue(out["committed"], out)
        self.assertIn("Worksets touched: Architecture (1) (the person synchronizes with central; Nexus never does)",
                      out["epilogue"]["stdout"])

    def test_worksets_are_what_the_api_reference_lists(self):
        out = self.run_script(PRELUDE + """print(doc.IsWorkshared)
for ws in FilteredWorksetCollector(doc).OfKind(WorksetKind.UserWorkset):
    print(ws.Name, ws.Owner or "-", ws.IsEditable)
w = FilteredElementCollector(doc).OfClass(Wall).FirstElement()
print(doc.GetWorksetTable().GetWorkset(w.WorksetId).Name)
print(WorksharingUtils.GetWorksharingTooltipInfo(doc, w.Id).Owner)
""", "MODE_READ_ONLY")
        self.assertNotIn("error", out, out)
        self.assertEqual(out["stdout"].splitlines(), [
            "True", "Shared Levels and Grids - False", "Architecture you True", "Structure anna False",
            "Interiors - False", "Structure", "anna"])


class Dialogs(Served):
    def test_a_dialog_during_a_script_is_answered_and_noted(self):
        self.run_script("print(1)", "MODE_READ_ONLY")  # the mirror complete, so its note is not in the way
        out = self.run_script("from Autodesk.Revit.UI import TaskDialog\n"
                              "print(TaskDialog.Show('Nexus', 'Delete the old sheets?'))", "MODE_READ_ONLY")
        self.assertNotIn("error", out, out)
        self.assertEqual(out["stdout"].strip(), "Cancel")
        self.assertEqual(out["hostNotes"], ['Revit showed a task dialog while the script ran: "Delete the old '
                                            'sheets?"; the add-in answered Cancel so Revit was not held waiting '
                                            'for a person'])
        self.assertEqual(self.session._unanswered, [])

    def test_the_change_report_names_a_dialog_answered_during_a_commit(self):
        self.run_script("print(1)", "MODE_READ_ONLY")
        out = self.run_script("from Autodesk.Revit.UI import TaskDialog\nTaskDialog.Show('Nexus', 'Keep going?')\n"
                              + THREE_WALLS, epilogue=change_report())
        self.assertTrue(out["committed"], out)
        self.assertIn('Revit showed a task dialog while the script ran: "Keep going?"; the add-in answered Cancel',
                      out["epilogue"]["stdout"])
        self.assertEqual(len(out["hostNotes"]), 1, out)

    def test_disconnect_leaves_revits_events(self):
        self.run_script("print(1)", "MODE_READ_ONLY")
        self.runtime.stop()
        uiapp = self.session.uiapp
        self.assertEqual((uiapp.Idling._handlers, uiapp.DialogBoxShowing._handlers,
                          uiapp.Application.DocumentChanged._handlers), ([], [], []))

    def test_dialogs_outside_a_script_are_the_persons(self):
        self.run_script("print(1)", "MODE_READ_ONLY")

        def shows(d):
            from Autodesk.Revit.UI import TaskDialog
            TaskDialog.Show("Revit", "A person's dialog")
        person_edits(shows)
        self.assertEqual(self.session._unanswered, [("Revit", "A person's dialog", "")])


if __name__ == "__main__":
    unittest.main()
