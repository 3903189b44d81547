import json
import unittest

from hostkit import wire


class WireTest(unittest.TestCase):
    def test_lone_surrogates_become_replacement_characters(self):
        fixed, n = wire.valid_unicode({"stdout": "a\udc80b", "list": ["\ud83d\ude00", "\ud800"]})
        self.assertEqual(fixed, {"stdout": "a\ufffdb", "list": ["\U0001f600", "\ufffd"]})
        self.assertEqual(n, 2)
        # What comes out encodes as strict UTF-8.
        json.dumps(fixed, ensure_ascii=False).encode("utf-8")

    def test_valid_text_is_untouched(self):
        self.assertEqual(wire.valid_unicode("caf\u00e9 \ufffd"), ("caf\u00e9 \ufffd", 0))

    def test_report_line_moves_to_data(self):
        report = {"elements": [{"change": "CHANGE_KIND_ADDED", "category": "Wall", "name": "Wall", "label": "Wall"},
                               {"change": "CHANGE_KIND_ADDED", "category": "Door", "name": "Window", "label": "Door",
                                "type": "Simple door 900x2100", "level": "Ground"}],
                  "helpers": [{"change": "CHANGE_KIND_ADDED", "kind": "Sketch", "count": 2}]}
        out, got = wire.extract_report("seen\n" + wire.REPORT_MARKER + json.dumps(report) + "\n")
        self.assertEqual(out, "seen\n")
        self.assertEqual(got, report)

    def test_malformed_report_is_left_in_stdout(self):
        for last in ("not json", json.dumps({"elements": [{"change": "CHANGE_KIND_ADDED", "extra": 1}]}),
                     json.dumps({"helpers": [{"kind": "x", "count": -1}]}), json.dumps({"other": []}),
                     json.dumps({"helpers": [{"kind": "x", "count": True}]}),
                     json.dumps({"elements": [{"change": "CHANGE_KIND_ADDED", "level": 3}]})):
            stdout = "seen\n" + wire.REPORT_MARKER + last + "\n"
            self.assertEqual(wire.extract_report(stdout), (stdout, None), last)

    def test_int_field_names_the_field_and_its_bounds(self):
        self.assertEqual(wire.int_field({}, "maxPx", 1024, 64, 4096), 1024)
        self.assertEqual(wire.int_field({"maxPx": "512"}, "maxPx", 1024, 64, 4096), 512)
        with self.assertRaises(wire.RequestError) as ctx:
            wire.int_field({"maxPx": 9000}, "maxPx", 1024, 64, 4096)
        self.assertEqual(ctx.exception.status, 400)
        self.assertEqual(ctx.exception.message, "maxPx must be between 64 and 4096, got 9000")
        with self.assertRaises(wire.RequestError) as ctx:
            wire.int_field({"timeoutMs": "soon"}, "timeoutMs", 1, 1, 2)
        self.assertIn("timeoutMs must be an integer", ctx.exception.message)

    def test_rollback_exactness(self):
        self.assertEqual(wire.rollback_exactness([]), {"rollback": "ROLLBACK_EXACTNESS_EXACT"})
        self.assertEqual(wire.rollback_exactness(["x"]),
                         {"rollback": "ROLLBACK_EXACTNESS_NOT_EXACT", "rollbackDifferences": ["x"]})


if __name__ == "__main__":
    unittest.main()
