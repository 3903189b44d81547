import hashlib
import json
import unittest

from hostkit.tests.serving import Served
from hostkit.wire import REPORT_MARKER


class RunnerTest(unittest.TestCase):
    """The three modes and the call ledger through the real server, on the
    plain-Python host."""

    def setUp(self):
        self.served = Served()

    def tearDown(self):
        self.served.close()

    def test_a_transaction_commits_and_a_failing_one_changes_nothing(self):
        status, res = self.served.execute(mode="MODE_TRANSACTION", code="doc.add('w1', length=4)\nprint('ok')")
        self.assertEqual(status, 200)
        self.assertTrue(res["committed"])
        self.assertEqual(res["changes"], {"added": ["w1"], "modified": [], "deleted": []})
        self.assertEqual(res["stdout"], "ok\n")
        revision = res["documentRevision"]
        status, res = self.served.execute(mode="MODE_TRANSACTION", code="doc.add('w2')\nraise ValueError('no')")
        self.assertFalse(res["committed"])
        self.assertEqual(res["error"]["type"], "ValueError")
        self.assertEqual(res["error"]["line"], 2)
        self.assertEqual(res["rollback"], "ROLLBACK_EXACTNESS_EXACT")
        self.assertEqual(res["documentRevision"], revision)
        self.assertEqual(self.served.host.elements, {"w1": {"length": 4}})

    def test_read_only_changes_are_undone_and_refused(self):
        _, res = self.served.execute(mode="MODE_READ_ONLY", code="doc.add('w')")
        self.assertEqual(res["error"]["type"], "ReadOnlyViolation")
        self.assertIn("added ['w']", res["error"]["message"])
        self.assertEqual(self.served.host.elements, {})

    def test_a_preview_reports_and_rolls_back(self):
        epilogue = "print(nexus_changes()['added'])\nprint('" + REPORT_MARKER + json.dumps({"elements": [], "helpers": []}) + "')"
        _, res = self.served.execute(mode="MODE_PREVIEW", code="doc.add('w')",
                                     epilogue={"code": epilogue}, capture={"view": "plan"})
        self.assertTrue(res["previewed"])
        self.assertFalse(res["committed"])
        self.assertEqual(res["changes"]["added"], ["w"])
        self.assertEqual(res["epilogue"]["report"], {"elements": [], "helpers": []})
        self.assertEqual(res["epilogue"]["stdout"], "['w']\n")
        self.assertEqual(res["epilogue"]["contentHash"], hashlib.sha256(epilogue.encode("utf-8")).hexdigest())
        self.assertEqual(res["images"][0]["mimeType"], "image/png")
        self.assertEqual(self.served.host.elements, {})

    def test_an_epilogue_whose_stamp_differs_is_not_run(self):
        _, res = self.served.execute(mode="MODE_TRANSACTION", code="doc.add('w')",
                                     epilogue={"code": "print(1)", "contentHash": "00" * 32})
        self.assertTrue(res["committed"])
        self.assertEqual(res["epilogue"]["error"]["type"], "ContentHashMismatch")
        self.assertNotIn("stdout", res["epilogue"])

    def test_bad_requests_name_the_problem_and_change_nothing(self):
        for body, want in (({"mode": "MODE_WRITE", "code": "x"}, "mode must be MODE_READ_ONLY"),
                           ({"mode": "MODE_TRANSACTION", "code": "  "}, "code must be a non-empty string"),
                           ({"mode": "MODE_TRANSACTION", "code": "x", "timeoutMs": 3600001},
                            "timeoutMs must be between 1 and 3600000"),
                           ({"mode": "MODE_TRANSACTION", "code": "doc.add('w')", "capture": {"patchPx": 14}},
                            "patchPx and maxPatches go together"),
                           ({"mode": "MODE_TRANSACTION", "code": "doc.add('w')", "capture": "plan"},
                            "capture must be an object, got str")):
            status, res = self.served.execute(**body)
            self.assertEqual(status, 400, body)
            self.assertIn(want, res["error"])
        _, res = self.served.execute(mode="MODE_TRANSACTION", code="x = 1\ny = '\x00'")
        self.assertEqual(res["error"]["type"], "SyntaxError")
        self.assertEqual(res["error"]["line"], 2)
        self.assertEqual(self.served.host.elements, {})

    def test_a_stale_revision_runs_nothing(self):
        _, res = self.served.execute(mode="MODE_TRANSACTION", code="doc.add('w')", expectRevision="mem.99")
        self.assertEqual(res["error"]["type"], "RevisionChanged")
        self.assertEqual(self.served.host.elements, {})

    def test_a_call_id_runs_once(self):
        call = {"mode": "MODE_TRANSACTION", "code": "doc.add('w%d' % len(doc.elements))", "toolCallId": "toolu_1"}
        _, first = self.served.execute(**call)
        _, again = self.served.execute(**call)
        self.assertTrue(first["committed"])
        self.assertEqual(again, first)
        self.assertEqual(list(self.served.host.elements), ["w0"])
        status, refused = self.served.execute(**dict(call, code="doc.add('other')"))
        self.assertEqual(status, 409)
        self.assertEqual(refused["error"]["type"], "CallIdReused")
        self.assertEqual(list(self.served.host.elements), ["w0"])

    def test_a_failed_call_is_answered_the_same_when_repeated(self):
        call = {"mode": "MODE_TRANSACTION", "code": "raise KeyError('k')", "toolCallId": "toolu_2"}
        _, first = self.served.execute(**call)
        _, again = self.served.execute(**call)
        self.assertEqual(first["error"]["type"], "KeyError")
        self.assertEqual(again, first)

    def test_export_view_and_info(self):
        status, _, res = self.served.request("POST", "/v1/export-view", {"view": "front", "maxPx": 64})
        self.assertEqual(status, 200)
        self.assertEqual(res["images"][0]["view"], "front")
        status, _, info = self.served.request("GET", "/v1/info")
        self.assertEqual(info, {"hostApp": "memhost", "hostVersion": "1.0", "runtimeVersion": "0.0.1",
                                "document": "memory", "documentRevision": "mem.0"})


if __name__ == "__main__":
    unittest.main()
