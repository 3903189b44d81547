"""The double's public surface against the Revit API's member list
(fidelity.py says what is checked and where the list comes from)."""
import sys
import unittest

import fidelity
from Autodesk.Revit.DB import FilteredElementCollector, Element, Level, Line, Plane, Transaction, XYZ
from revitdouble import Session


def sample_instances():
    """Objects a script meets: the session's, every element of the seeded
    project with its location, category and parameters, a change's event
    arguments, geometry."""
    s = Session()
    doc = s.doc
    out = [s.app, s.uiapp, s.uidoc, s.uidoc.Selection, doc, doc.Create, XYZ(1, 2, 3),
           Line.CreateBound(XYZ(0, 0, 0), XYZ(1, 0, 0)), Transaction(doc, "t"),
           Plane.CreateByNormalAndOrigin(XYZ.BasisZ, XYZ.Zero)]
    seen = []
    s.app.DocumentChanged += lambda sender, args: seen.append(args)
    for el in FilteredElementCollector(doc).WhereElementIsNotElementType().ToElements():
        out.append(el)
        for attr in ("Location", "Category"):
            v = getattr(el, attr, None)
            if v is not None:
                out.append(v)
        out.extend(el.Parameters)
    out.extend(FilteredElementCollector(doc).WhereElementIsElementType().ToElements())
    t = Transaction(doc, "sample")
    t.Start()
    Level.Create(doc, 40.0)
    t.Commit()
    if not seen:
        raise AssertionError("a commit raised no DocumentChanged to sample")
    out.extend(seen)
    return out


class FidelityTest(unittest.TestCase):
    def test_source_named(self):
        src = fidelity.load("revit2017.json")["source"]
        for key in ("repository", "commit", "revit", "assemblies"):
            self.assertTrue(src.get(key), "the table names its %s" % key)
        self.assertEqual(len(src["commit"]), 40)

    def test_the_double_is_revits_api(self):
        api = fidelity.api()
        problems = fidelity.check(api, sample_instances())
        classes, members = fidelity.surface(api)
        print("fidelity: %d classes and %d members of the double held to %d classes of Revit %s (%s@%s)"
              % (classes, members, len(api.classes), api.source["revit"], api.source["repository"],
                 api.source["commit"][:12]), file=sys.stderr)
        self.assertEqual(problems, [], "the double differs from Revit's API:\n" + "\n".join(problems))

    def test_table_covers_the_namespaces(self):
        api = fidelity.api()
        for ns in fidelity.NAMESPACES:
            self.assertIn(ns, api.namespaces, "the table has no class of %s" % ns)


class PlantedFaultsTest(unittest.TestCase):
    """Each kind of difference fails the check: fixtures planted on a copy
    of the double's classes, taken away again after."""

    def planted(self, cls, name, value):
        old = cls.__dict__.get(name, fidelity)
        setattr(cls, name, value)
        self.addCleanup(lambda: delattr(cls, name) if old is fidelity else setattr(cls, name, old))
        return fidelity.check(fidelity.api())

    def test_a_member_revit_lacks(self):
        problems = self.planted(Element, "LookupParameterByGuess", lambda self, name: None)
        self.assertIn("Autodesk.Revit.DB.Element.LookupParameterByGuess: not in Revit 2017's API (nor in later.json)",
                      problems)

    def test_a_wrong_static_ness(self):
        # Revit's Line.CreateBound is static.
        problems = self.planted(Line, "CreateBound", lambda self, a, b: None)
        self.assertIn("Autodesk.Revit.DB.Line.CreateBound: an instance method where Revit's is a static method", problems)

    def test_a_wrong_arity(self):
        # Revit's XYZ.DistanceTo takes one point.
        problems = self.planted(XYZ, "DistanceTo", lambda self: 0.0)
        self.assertIn("Autodesk.Revit.DB.XYZ.DistanceTo: takes 0 argument; Revit's overloads take [1]", problems)

    def test_settable_where_read_only(self):
        problems = self.planted(XYZ, "X", property(lambda self: 0.0, lambda self, v: None))
        self.assertIn("Autodesk.Revit.DB.XYZ.X: a settable property where Revit has a read-only property", problems)

    def test_an_instance_attribute_where_read_only(self):
        api = fidelity.api()
        t = Transaction.__new__(Transaction)
        t.__dict__["IsValidObject"] = True
        self.assertIn("Autodesk.Revit.DB.Transaction.IsValidObject: settable (an instance attribute) where Revit's "
                      "is read-only", fidelity.check(api, [t]))

    def test_a_class_in_the_wrong_namespace(self):
        import Autodesk.Revit.DB as DB
        from Autodesk.Revit.DB.Events import DocumentChangedEventArgs
        DB.DocumentChangedEventArgs = DocumentChangedEventArgs
        self.addCleanup(lambda: delattr(DB, "DocumentChangedEventArgs"))
        problems = fidelity.check(fidelity.api())
        self.assertTrue(any(p.startswith("Autodesk.Revit.DB.DocumentChangedEventArgs: not in Revit 2017's API "
                                         "(Revit has Autodesk.Revit.DB.Events.DocumentChangedEventArgs)") for p in problems),
                        problems)

    def test_a_later_member_needs_its_release_and_page(self):
        table = fidelity.load("revit2017.json")
        with self.assertRaisesRegex(ValueError, "needs the release that added it and its reference page"):
            fidelity.Api(table, {"Autodesk.Revit.DB.Wall": {"members": {"Sweep": "m1"}}})



class ReadmeTest(unittest.TestCase):
    def test_readme_lists_the_members_the_double_models(self):
        import os
        readme = os.path.join(fidelity.HERE, "..", "..", "README.md")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        begin, end = fidelity.README_BEGIN, fidelity.README_END
        self.assertIn(begin, text)
        listed = text.split(begin, 1)[1].split(end, 1)[0]
        self.assertEqual(listed, fidelity.members_markdown(),
                         "hosts/revit/README.md's member list is not the double's: write it again with "
                         "PYTHONPATH=hosts/revit/double python3 hosts/revit/double/tests/fidelity.py")


if __name__ == "__main__":
    unittest.main()
