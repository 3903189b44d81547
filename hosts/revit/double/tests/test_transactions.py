"""The double's transaction rules, each as the Revit API reference states it."""
import unittest

from Autodesk.Revit.DB import (FailureProcessingResult, FailureSeverity, FilteredElementCollector,
                               IFailuresPreprocessor, Level, Line, SubTransaction, Transaction, TransactionGroup,
                               TransactionStatus, Wall, XYZ)
from Autodesk.Revit.DB.Events import UndoOperation
from Autodesk.Revit.Exceptions import InvalidOperationException, ModificationOutsideTransactionException
from revitdouble import Session


def level1(doc):
    return next(l for l in FilteredElementCollector(doc).OfClass(Level) if l.Name == "Level 1")


def wall(doc, x0, x1, y=0.0):
    return Wall.Create(doc, Line.CreateBound(XYZ(x0, y, 0), XYZ(x1, y, 0)), level1(doc).Id, False)


def state(doc):
    """Every element's id and data, to compare documents whole."""
    return {i: dict(e._data) for i, e in doc._elements.items()}


class TransactionRules(unittest.TestCase):
    def setUp(self):
        self.s = Session()
        self.doc = self.s.doc

    def test_modification_outside_a_transaction_raises(self):
        with self.assertRaises(ModificationOutsideTransactionException):
            wall(self.doc, 0, 10)
        with self.assertRaises(ModificationOutsideTransactionException):
            level1(self.doc).Name = "Ground"
        self.assertEqual(level1(self.doc).Name, "Level 1")

    def test_start_inside_another_transaction_raises(self):
        t = Transaction(self.doc, "outer")
        self.assertEqual(t.Start(), TransactionStatus.Started)
        with self.assertRaises(InvalidOperationException):
            Transaction(self.doc, "inner").Start()
        with self.assertRaises(InvalidOperationException):
            t.Start()
        t.RollBack()

    def test_a_transaction_needs_a_name(self):
        with self.assertRaises(InvalidOperationException):
            Transaction(self.doc).Start()

    def test_commit_and_rollback_need_a_started_transaction(self):
        t = Transaction(self.doc, "x")
        with self.assertRaises(InvalidOperationException):
            t.Commit()
        with self.assertRaises(InvalidOperationException):
            t.RollBack()

    def test_rollback_restores_every_element(self):
        t = Transaction(self.doc, "setup")
        t.Start()
        w = wall(self.doc, 0, 10)
        t.Commit()
        before = state(self.doc)
        t = Transaction(self.doc, "undo me")
        t.Start()
        w2 = wall(self.doc, 0, 10, y=5)
        level1(self.doc).Name = "Ground"
        w.Location.Move(XYZ(1, 1, 0))
        self.doc.Delete(w.Id)
        self.assertEqual(t.RollBack(), TransactionStatus.RolledBack)
        self.assertEqual(state(self.doc), before)
        self.assertTrue(w.IsValidObject)
        self.assertFalse(w2.IsValidObject)
        self.assertEqual(level1(self.doc).Name, "Level 1")

    def test_document_changed_fires_after_commit_with_three_id_sets(self):
        seen = []
        self.doc.Application.DocumentChanged += lambda sender, a: seen.append(
            (sorted(i.Value for i in a.GetAddedElementIds()), sorted(i.Value for i in a.GetModifiedElementIds()),
             sorted(i.Value for i in a.GetDeletedElementIds()), list(a.GetTransactionNames()), a.Operation))
        t = Transaction(self.doc, "one")
        t.Start()
        w = wall(self.doc, 0, 10)
        gone = wall(self.doc, 20, 30)
        self.assertEqual(seen, [], "DocumentChanged fires only after the commit")
        t.Commit()
        t = Transaction(self.doc, "two")
        t.Start()
        level1(self.doc).Elevation = 1.0
        self.doc.Delete(gone.Id)
        t.Commit()
        t = Transaction(self.doc, "three")
        t.Start()
        wall(self.doc, 40, 50)
        t.RollBack()
        self.assertEqual(seen, [
            (sorted([w.Id.Value, 300001]), [], [], ["one"], UndoOperation.TransactionCommitted),
            ([], [level1(self.doc).Id.Value], [300001], ["two"], UndoOperation.TransactionCommitted),
        ])

    def test_document_changed_handlers_cannot_modify(self):
        refused = []

        def handler(sender, args):
            try:
                Transaction(self.doc, "in handler").Start()
            except InvalidOperationException as e:
                refused.append(str(e))
        self.doc.Application.DocumentChanged += handler
        t = Transaction(self.doc, "x")
        t.Start()
        wall(self.doc, 0, 10)
        t.Commit()
        self.assertEqual(len(refused), 1)

    def test_sub_transaction_only_inside_a_transaction(self):
        with self.assertRaises(InvalidOperationException):
            SubTransaction(self.doc).Start()
        t = Transaction(self.doc, "x")
        t.Start()
        keep = wall(self.doc, 0, 10)
        st = SubTransaction(self.doc)
        st.Start()
        drop = wall(self.doc, 0, 10, y=8)
        st.RollBack()
        self.assertFalse(drop.IsValidObject)
        self.assertTrue(keep.IsValidObject)
        st = SubTransaction(self.doc)
        st.Start()
        with self.assertRaises(InvalidOperationException):
            t.Commit()
        st.Commit()
        self.assertEqual(t.Commit(), TransactionStatus.Committed)

    def test_group_rolls_back_committed_transactions(self):
        before = state(self.doc)
        g = TransactionGroup(self.doc, "preview")
        g.Start()
        t = Transaction(self.doc, "inside")
        t.Start()
        with self.assertRaises(InvalidOperationException):
            TransactionGroup(self.doc, "during").Start()
        w = wall(self.doc, 0, 10)
        t.Commit()
        self.assertTrue(w.IsValidObject)
        self.assertEqual(g.RollBack(), TransactionStatus.RolledBack)
        self.assertFalse(w.IsValidObject)
        self.assertEqual(state(self.doc), before)

    def test_group_closes_only_after_its_transactions(self):
        g = TransactionGroup(self.doc, "g")
        g.Start()
        t = Transaction(self.doc, "t")
        t.Start()
        with self.assertRaises(InvalidOperationException):
            g.RollBack()
        t.RollBack()
        g.Assimilate()
        self.assertEqual(g.GetStatus(), TransactionStatus.Committed)

    def test_warnings_reach_the_failures_preprocessor(self):
        class Collect(IFailuresPreprocessor):
            def __init__(self):
                self.texts = []

            def PreprocessFailures(self, accessor):
                for m in accessor.GetFailureMessages():
                    self.texts.append((m.GetSeverity(), m.GetDescriptionText()))
                    accessor.DeleteWarning(m)
                return FailureProcessingResult.Continue
        t = Transaction(self.doc, "overlap")
        t.Start()
        wall(self.doc, 0, 10)
        wall(self.doc, 5, 15)
        pre = Collect()
        t.SetFailureHandlingOptions(t.GetFailureHandlingOptions().SetFailuresPreprocessor(pre))
        self.assertEqual(t.Commit(), TransactionStatus.Committed)
        self.assertEqual(len(pre.texts), 1)
        self.assertEqual(pre.texts[0][0], FailureSeverity.Warning)
        self.assertIn("walls overlap", pre.texts[0][1])

    def test_preprocessor_may_roll_back(self):
        class Refuse(IFailuresPreprocessor):
            def PreprocessFailures(self, accessor):
                return FailureProcessingResult.ProceedWithRollBack
        before = state(self.doc)
        t = Transaction(self.doc, "overlap")
        t.Start()
        wall(self.doc, 0, 10)
        wall(self.doc, 5, 15)
        t.SetFailureHandlingOptions(t.GetFailureHandlingOptions().SetFailuresPreprocessor(Refuse()))
        self.assertEqual(t.Commit(), TransactionStatus.RolledBack)
        self.assertEqual(state(self.doc), before)

    def test_disposing_a_started_transaction_rolls_it_back(self):
        before = state(self.doc)
        with Transaction(self.doc, "scoped") as t:
            t.Start()
            wall(self.doc, 0, 10)
        self.assertEqual(t.GetStatus(), TransactionStatus.RolledBack)
        self.assertEqual(state(self.doc), before)


if __name__ == "__main__":
    unittest.main()
