import os
import tempfile
import unittest
from unittest import mock

from hostkit import ledger
from hostkit.checkpoints import checkpoint_generation


class LedgerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hostkit-ledger-")

    def test_answer_survives_a_restart(self):
        fp = ledger.call_fingerprint("MODE_TRANSACTION", "print(1)")
        ledger.CallLedger(self.dir, 1).record("call-1", fp, "MODE_TRANSACTION", {"committed": True}, 1)
        again = ledger.CallLedger(self.dir, 1)
        entry = again.lookup("call-1")
        self.assertEqual(entry["fingerprint"], fp)
        self.assertEqual(again.answer(entry), {"committed": True})

    def test_restart_on_an_older_checkpoint_forgets_later_calls(self):
        first = ledger.CallLedger(self.dir, 0)
        first.record("kept", "f1", "MODE_TRANSACTION", {"n": 1}, 1)
        first.record("lost", "f2", "MODE_TRANSACTION", {"n": 2}, 2)
        again = ledger.CallLedger(self.dir, 1)
        self.assertIsNotNone(again.lookup("kept"))
        self.assertIsNone(again.lookup("lost"))
        # The forgotten call's answer file is gone too.
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(["index.json", again.lookup("kept")["file"]]))

    def test_fingerprint_is_mode_and_exact_code(self):
        a = ledger.call_fingerprint("MODE_TRANSACTION", "x = 1")
        self.assertNotEqual(a, ledger.call_fingerprint("MODE_PREVIEW", "x = 1"))
        self.assertNotEqual(a, ledger.call_fingerprint("MODE_TRANSACTION", "x = 1 "))
        self.assertEqual(a, ledger.call_fingerprint("MODE_TRANSACTION", "x = 1"))
        # Lone surrogates are bytes like any other.
        ledger.call_fingerprint("MODE_TRANSACTION", "\udc80")

    def test_old_calls_are_pruned_beyond_the_limits(self):
        with mock.patch.object(ledger, "LEDGER_KEEP_CALLS", 3), mock.patch.object(ledger, "LEDGER_MAX_CALLS", 5):
            book = ledger.CallLedger(self.dir, 0)
            for i in range(8):
                book.record("c%d" % i, "f", "MODE_READ_ONLY", {"i": i}, 0)
            kept = [i for i in range(8) if book.lookup("c%d" % i) is not None]
            self.assertEqual(kept, [3, 4, 5, 6, 7])
            # Past the age limit only the last LEDGER_KEEP_CALLS stay.
            with mock.patch.object(ledger.time, "time", return_value=ledger.time.time() + ledger.LEDGER_KEEP_S + 1):
                book.record("c8", "f", "MODE_READ_ONLY", {"i": 8}, 0)
            kept = [i for i in range(9) if book.lookup("c%d" % i) is not None]
            self.assertEqual(kept, [6, 7, 8])
            self.assertEqual(len(os.listdir(self.dir)), 4)

    def test_an_unreadable_answer_reads_as_none(self):
        book = ledger.CallLedger(self.dir, 0)
        book.record("c", "f", "MODE_READ_ONLY", {"ok": 1}, 0)
        with open(os.path.join(self.dir, book.lookup("c")["file"]), "w") as f:
            f.write("{broken")
        self.assertIsNone(book.answer(book.lookup("c")))

    def test_a_corrupt_index_starts_empty(self):
        with open(os.path.join(self.dir, "index.json"), "w") as f:
            f.write("[{\"id\": 3}")
        self.assertIsNone(ledger.CallLedger(self.dir, 5).lookup("3"))

    def test_checkpoint_generation(self):
        self.assertEqual(checkpoint_generation(self.dir, os.path.join(self.dir, "7", "Doc.FCStd")), 7)
        self.assertEqual(checkpoint_generation(self.dir, os.path.join(self.dir, "x", "Doc.FCStd")), 0)
        self.assertEqual(checkpoint_generation(self.dir, "/elsewhere/7/Doc.FCStd"), 0)
        self.assertEqual(checkpoint_generation(self.dir, ""), 0)


if __name__ == "__main__":
    unittest.main()
