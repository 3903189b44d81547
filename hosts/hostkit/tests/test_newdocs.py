import json
import os
import tempfile
import unittest

from hostkit import process
from hostkit.runner import Runner
from hostkit.tests.memhost import MemHost


class NewDocumentTest(unittest.TestCase):
    """A call's newDocumentKey starts a new, empty document once per key,
    saved beside the person's file, and a restarted runtime remembers both."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="hostkit-newdoc-")
        self.checkpoints = os.path.join(self.folder, "checkpoints")
        self.house = os.path.join(self.folder, "house.json")

    def runner(self):
        host = MemHost()
        return host, Runner(host, process.StatusPipe(None), self.checkpoints, save_to=self.house)

    def commit(self, runner, call_id, code, key=""):
        body = {"toolCallId": call_id, "mode": "MODE_TRANSACTION", "code": code}
        if key:
            body["newDocumentKey"] = key
        return runner.execute_call(body)

    def test_a_key_starts_one_new_document_saved_beside_the_file(self):
        host, runner = self.runner()
        res = self.commit(runner, "c1", "doc.add('w1')")
        self.assertEqual(res["save"]["path"], self.house)
        with open(self.house) as f:
            first = f.read()
        self.assertEqual(json.loads(first), {"w1": {}})

        res = self.commit(runner, "c2", "doc.add('w2')", key="s_new")
        self.assertTrue(res["committed"], res)
        self.assertEqual(host.elements, {"w2": {}}, "the new document starts empty")
        second = os.path.join(self.folder, "house-2.json")
        self.assertEqual(res["save"], {"outcome": "SAVE_OUTCOME_SAVED", "path": second})
        with open(self.house) as f:
            self.assertEqual(f.read(), first, "the previous document stays saved where it was")

        # The same key again (every call of the session carries it) starts none.
        res = self.commit(runner, "c3", "doc.add('w3')", key="s_new")
        self.assertEqual(sorted(host.elements), ["w2", "w3"])
        self.assertEqual(res["save"]["path"], second)
        # A repeat of a call is answered by the ledger and starts none either.
        again = self.commit(runner, "c2", "doc.add('w2')", key="s_new")
        self.assertEqual(again, self.commit(runner, "c2", "doc.add('w2')", key="s_new"))
        self.assertEqual(sorted(host.elements), ["w2", "w3"])

        # A runtime its launcher restarted on the newest checkpoint (with the
        # person's first file to save to, as it was started) keeps saving to
        # the new file, leaves the first one alone, answers the new
        # document's calls from the new file's ledger, and starts no
        # document for a key it saw.
        newest = os.path.join(self.checkpoints, str(runner.checkpoints.generation), "doc.json")
        restarted = Runner(MemHost(), process.StatusPipe(None), self.checkpoints, opened=newest, save_to=self.house)
        self.assertEqual(restarted.save_to, second)
        with open(self.house) as f:
            self.assertEqual(f.read(), first, "the restart wrote over the previous document's file")
        self.assertEqual(self.commit(restarted, "c3", "doc.add('w3')", key="s_new")["save"]["path"], second,
                         "a repeat of the new document's call is answered by its ledger")
        self.assertEqual(restarted.adapter.elements, {}, "the repeat ran again")
        self.commit(restarted, "c4", "doc.add('w4')", key="s_new")
        self.assertEqual(restarted.save_to, second)
        with open(self.house) as f:
            self.assertEqual(f.read(), first)

        # Another session's key starts the next one.
        res = self.commit(runner, "c5", "doc.add('w5')", key="s_other")
        self.assertEqual(res["save"]["path"], os.path.join(self.folder, "house-3.json"))
        self.assertEqual(host.elements, {"w5": {}})

    def test_a_read_only_call_and_an_export_start_it_too(self):
        host, runner = self.runner()
        self.commit(runner, "c1", "doc.add('w1')")
        res = runner.execute_call({"toolCallId": "r1", "mode": "MODE_READ_ONLY", "code": "print(len(doc.elements))",
                                   "newDocumentKey": "s_a"})
        self.assertEqual(res["stdout"], "0\n")
        runner.export_view({"view": "plan", "newDocumentKey": "s_b"})
        self.assertEqual(host.documents, 3)

    def test_a_host_that_cannot_says_so(self):
        class Fixed(MemHost):
            def new_document(self):
                raise NotImplementedError
        runner = Runner(Fixed(), process.StatusPipe(None), self.checkpoints)
        with self.assertRaises(Exception) as ctx:
            runner.execute_call({"toolCallId": "c", "mode": "MODE_READ_ONLY", "code": "pass", "newDocumentKey": "s"})
        self.assertIn("cannot start a new document", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
