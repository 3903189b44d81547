import json
import os
import tempfile
import unittest
from unittest import mock

from hostkit import fileledger, process
from hostkit.runner import Runner
from hostkit.tests.memhost import MemHost


def box(call_id, name):
    return {"toolCallId": call_id, "mode": "MODE_TRANSACTION", "code": "doc.add(%r)" % name}


class FileLedgerTest(unittest.TestCase):
    """The ledger kept with the person's file, on the plain-Python host: a
    runtime started again on the file or on a checkpoint keeps exactly the
    calls the document it opened holds."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hostkit-fileledger-")
        self.file = os.path.join(self.dir, "doc.json")

    def runner(self, opened=None, checkpoints=None):
        """A runtime on the file (or on opened, a checkpoint), as a launcher
        starts it: the host holds what the opened document holds."""
        host = MemHost()
        opened = self.file if opened is None else opened
        if os.path.exists(opened):
            with open(opened, encoding="utf-8") as f:
                host.elements = json.load(f)
        checkpoints = checkpoints or tempfile.mkdtemp(prefix="hostkit-fileledger-ck-")
        return Runner(host, process.StatusPipe(None), checkpoints, opened, self.file)

    def file_elements(self):
        with open(self.file, encoding="utf-8") as f:
            return json.load(f)

    def test_the_ledger_is_a_private_folder_beside_the_file(self):
        self.runner().execute_call(box("x", "b1"))
        folder = os.path.join(self.dir, ".doc.json.nexus-ledger")
        self.assertEqual(os.stat(folder).st_mode & 0o777, 0o700)
        self.assertIn("index.json", os.listdir(folder))

    def test_a_runtime_started_again_on_the_file_keeps_its_calls(self):
        first = self.runner()
        answer = first.execute_call(box("x", "b1"))
        self.assertEqual(answer["save"]["outcome"], "SAVE_OUTCOME_SAVED")
        again = self.runner()
        self.assertEqual(again.execute_call(box("x", "b1")), answer)
        self.assertEqual(again.adapter.elements, {"b1": {}})
        self.assertEqual(again.checkpoints.generation, first.checkpoints.generation)
        with self.assertRaises(Exception) as refused:
            again.execute_call(box("x", "other"))
        self.assertEqual(refused.exception.status, 409)
        # A new call after the restart is saved and kept as well.
        again.execute_call(box("y", "b2"))
        third = self.runner()
        self.assertEqual(third.adapter.elements, {"b1": {}, "b2": {}})
        self.assertIsNotNone(third.ledger.lookup("x"))
        self.assertIsNotNone(third.ledger.lookup("y"))

    def test_a_kill_between_the_ledger_and_the_save_runs_the_call_again(self):
        first = self.runner()
        first.execute_call(box("x", "b1"))
        saved = self.file_elements()

        real_replace = os.replace

        def replace(src, dst):
            # The runtime dies just before its file is replaced.
            if dst == self.file:
                raise SystemExit("killed")
            real_replace(src, dst)

        with mock.patch("os.replace", side_effect=replace), self.assertRaises(SystemExit):
            first.execute_call(box("y", "b2"))
        self.assertIsNotNone(first.ledger.lookup("y"))
        self.assertEqual(self.file_elements(), saved)
        again = self.runner()
        self.assertIsNotNone(again.ledger.lookup("x"))
        self.assertIsNone(again.ledger.lookup("y"))
        self.assertTrue(again.execute_call(box("y", "b2"))["committed"])
        self.assertEqual(self.file_elements(), {"b1": {}, "b2": {}})

    def test_a_file_no_save_wrote_starts_an_empty_ledger(self):
        self.runner().execute_call(box("x", "b1"))
        with open(self.file, "w", encoding="utf-8") as f:
            json.dump({"edited": {}}, f)
        again = self.runner()
        self.assertIsNone(again.ledger.lookup("x"))
        self.assertEqual(again.checkpoints.generation, 0)

    def test_a_restart_on_a_checkpoint_brings_a_file_behind_it_up(self):
        checkpoints = tempfile.mkdtemp(prefix="hostkit-fileledger-ck-")
        first = self.runner(checkpoints=checkpoints)
        first.execute_call(box("x", "b1"))
        # Killed after the checkpoint of y, before the file was saved.
        with mock.patch.object(first, "_save", lambda result, recording: None):
            first.execute_call(box("y", "b2"))
        self.assertEqual(self.file_elements(), {"b1": {}})
        newest = os.path.join(checkpoints, str(first.checkpoints.generation), "doc.json")
        again = self.runner(opened=newest, checkpoints=checkpoints)
        self.assertIsNotNone(again.ledger.lookup("y"))
        self.assertEqual(self.file_elements(), {"b1": {}, "b2": {}})
        # The file now names the checkpoint's generation: a launcher started
        # on it keeps both calls.
        self.assertIsNotNone(self.runner().ledger.lookup("y"))

    def test_a_restart_on_a_checkpoint_the_file_is_ahead_of_takes_the_file_back(self):
        checkpoints = tempfile.mkdtemp(prefix="hostkit-fileledger-ck-")
        first = self.runner(checkpoints=checkpoints)
        first.execute_call(box("x", "b1"))
        before = os.path.join(checkpoints, str(first.checkpoints.generation), "doc.json")
        first.execute_call(box("y", "b2"))
        # The checkpoint of y was lost: the runtime restarts on x's.
        again = self.runner(opened=before, checkpoints=checkpoints)
        self.assertIsNone(again.ledger.lookup("y"))
        self.assertEqual(self.file_elements(), {"b1": {}})
        self.assertIsNone(self.runner().ledger.lookup("y"))

    def test_a_ledger_folder_that_cannot_be_made_leaves_the_ledger_with_the_checkpoints(self):
        with open(fileledger.ledger_dir(self.file), "w", encoding="utf-8") as f:
            f.write("in the way")
        with mock.patch("sys.__stderr__"):
            runner = self.runner()
        self.assertEqual(runner.ledger.dir, os.path.join(runner.checkpoints.dir, "ledger"))
        self.assertTrue(runner.execute_call(box("x", "b1"))["committed"])
        self.assertEqual(self.file_elements(), {"b1": {}})

    def test_a_call_the_ledger_could_not_record_is_not_saved_to_the_file(self):
        runner = self.runner()
        runner.execute_call(box("x", "b1"))
        with mock.patch.object(runner.ledger, "record", side_effect=OSError("disk full")), mock.patch("sys.__stderr__"):
            res = runner.execute_call(box("y", "b2"))
        self.assertTrue(res["committed"])
        self.assertEqual(res["save"]["outcome"], "SAVE_OUTCOME_FAILED")
        self.assertIn("could not be recorded in the call ledger", res["save"]["error"])
        self.assertEqual(self.file_elements(), {"b1": {}})

    def test_without_a_file_the_ledger_stays_with_the_checkpoints(self):
        checkpoints = tempfile.mkdtemp(prefix="hostkit-fileledger-ck-")
        runner = Runner(MemHost(), process.StatusPipe(None), checkpoints, "", "")
        runner.execute_call(box("x", "b1"))
        self.assertEqual(runner.ledger.dir, os.path.join(checkpoints, "ledger"))
        self.assertFalse(os.path.exists(fileledger.ledger_dir(self.file)))


if __name__ == "__main__":
    unittest.main()
