"""The link's hand-over of a saved file, against a loopback server that
answers the way the gateway does (gateway/limits.go): a body whose
Content-Length is over NEXUS_MAX_DOCUMENT_BYTES is answered 413 before any
of it is read, and the connection closed; a store failure is a 5xx. The
whole path through the real gateway and FreeCAD is the gateway's
TestBrowserDocumentHandOver."""

import json
import os
import socket
import tempfile
import threading
import time
import unittest

from hostkit import handover as handovermod
from hostkit import link as linkmod
from hostkit.link import Link

LIMIT = 1024


class Gateway:
    """Answers each request from its head alone: 413 over LIMIT (nothing
    of the body read), else status, or the statuses of a list in turn (its
    last for every request after). Records the status of each answer."""

    def __init__(self, status=200):
        self.statuses = list(status) if isinstance(status, (list, tuple)) else [status]
        self.answered = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    head += chunk
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if length > LIMIT:
                    status, body = 413, {"type": "about:blank", "title": "Request Entity Too Large", "status": 413, "reason": "REFUSAL_REASON_LIMIT_REACHED",
                                         "code": "REQUEST_ENTITY_TOO_LARGE", "detail": "document_bytes is %d, over the limit of %d (NEXUS_MAX_DOCUMENT_BYTES)" % (length, LIMIT)}
                else:
                    rest = head.partition(b"\r\n\r\n")[2]
                    while len(rest) < length:
                        rest += conn.recv(65536)
                    status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
                    body = {} if status == 200 else {"type": "about:blank", "title": "Service Unavailable", "status": 503, "reason": "REFUSAL_REASON_UNAVAILABLE",
                                                           "code": "UNAVAILABLE", "detail": "store session document: the store is unavailable"}
                data = json.dumps(body).encode()
                # Recorded before the answer leaves: the link reads it next.
                self.answered.append(status)
                conn.sendall(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(data), data))

    def close(self):
        self.sock.close()


class HandOverTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hostkit-link-")
        # The tries' waits, shortened; their number is the link's own.
        backoff, handovermod.HAND_OVER_BACKOFF = handovermod.HAND_OVER_BACKOFF, 0.01
        self.addCleanup(setattr, handovermod, "HAND_OVER_BACKOFF", backoff)
        patient, handovermod.HAND_OVER_BACKOFF_MAX = handovermod.HAND_OVER_BACKOFF_MAX, 0.05
        self.addCleanup(setattr, handovermod, "HAND_OVER_BACKOFF_MAX", patient)

    def saved(self, size):
        path = os.path.join(self.dir, "room.FCStd")
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        return {"committed": True, "save": {"outcome": "SAVE_OUTCOME_SAVED", "path": path}}

    def hand_over(self, result, status=200):
        gw = Gateway(status)
        self.addCleanup(gw.close)
        link = Link(gw.url, lambda call: {}, {}, token="nxh_test")
        self.addCleanup(link.stop)
        return link._hand_over("s_1", result), gw

    def test_received(self):
        result = self.saved(LIMIT)
        out, gw = self.hand_over(result)
        self.assertEqual(gw.answered, [200])
        self.assertEqual(out["save"]["handOver"], "DOCUMENT_HAND_OVER_RECEIVED")
        self.assertNotIn("handOverError", out["save"])
        # The result given (the ledger may hold it) is not changed.
        self.assertNotIn("handOver", result["save"])

    def test_over_the_limit_says_the_gateway_answer_not_a_broken_pipe(self):
        # Megabytes: the gateway closes long before they are sent.
        out, gw = self.hand_over(self.saved(8 << 20))
        # A refusal is said at once: the next try would be refused again.
        self.assertEqual(gw.answered, [413])
        save = out["save"]
        self.assertEqual(save["outcome"], "SAVE_OUTCOME_SAVED", "the file on the computer holds the commit")
        self.assertEqual(save["handOver"], "DOCUMENT_HAND_OVER_FAILED")
        self.assertRegex(save["handOverError"], r"^HTTP 413: document_bytes is 8388608, over the limit of 1024 \(NEXUS_MAX_DOCUMENT_BYTES\)$")

    def test_a_gateway_error_is_tried_again_then_said(self):
        out, gw = self.hand_over(self.saved(100), status=503)
        self.assertEqual(gw.answered[:handovermod.HAND_OVER_TRIES], [503] * handovermod.HAND_OVER_TRIES)
        self.assertEqual(out["save"]["handOver"], "DOCUMENT_HAND_OVER_FAILED")
        self.assertEqual(out["save"]["handOverError"], "HTTP 503: store session document: the store is unavailable (%d tries); "
                         "still trying until it lands or the session ends" % handovermod.HAND_OVER_TRIES)

    def wait_answered(self, gw, want):
        deadline = time.monotonic() + 30
        while gw.answered[-1:] != [want]:
            if time.monotonic() > deadline:
                self.fail("the gateway answered %s, never %d last" % (gw.answered, want))
            time.sleep(0.01)

    def test_a_hand_over_that_met_an_outage_lands_later(self):
        # The store is away past the tries the result waits for (a stall, an
        # orchestrator restarting); the file still lands once it is back.
        tries = handovermod.HAND_OVER_TRIES
        out, gw = self.hand_over(self.saved(100), status=[503] * (tries + 3) + [200])
        self.assertEqual(out["save"]["handOver"], "DOCUMENT_HAND_OVER_FAILED")
        self.wait_answered(gw, 200)
        self.assertEqual(gw.answered, [503] * (tries + 3) + [200])

    def test_a_hand_over_stops_when_the_session_ends(self):
        tries = handovermod.HAND_OVER_TRIES
        out, gw = self.hand_over(self.saved(100), status=[503] * (tries + 1) + [404, 200])
        self.wait_answered(gw, 404)
        # Nothing is tried after the session is gone.
        time.sleep(0.3)
        self.assertEqual(gw.answered, [503] * (tries + 1) + [404])

    def test_a_passing_gateway_error_is_outlasted(self):
        out, gw = self.hand_over(self.saved(100), status=[503, 429, 200])
        self.assertEqual(gw.answered, [503, 429, 200])
        self.assertEqual(out["save"]["handOver"], "DOCUMENT_HAND_OVER_RECEIVED")
        self.assertNotIn("handOverError", out["save"])

    def test_a_gateway_that_is_away_is_tried_again(self):
        # A port bound but not listening: every connection is refused.
        away = socket.socket()
        away.bind(("127.0.0.1", 0))
        self.addCleanup(away.close)
        link = Link("http://127.0.0.1:%d" % away.getsockname()[1], lambda call: {}, {}, token="nxh_test")
        self.addCleanup(link.stop)
        out = link._hand_over("s_1", self.saved(100))
        self.assertEqual(out["save"]["handOver"], "DOCUMENT_HAND_OVER_FAILED")
        self.assertRegex(out["save"]["handOverError"], r"^PUT http://127\.0\.0\.1:\d+/v1/sessions/s_1/document\?fileName=room\.FCStd: .* \(%d tries\); "
                         r"still trying until it lands or the session ends$" % handovermod.HAND_OVER_TRIES)

    def test_an_unreadable_file_is_said(self):
        result = self.saved(100)
        os.remove(result["save"]["path"])
        out, gw = self.hand_over(result)
        self.assertEqual(gw.answered, [])
        self.assertEqual(out["save"]["handOver"], "DOCUMENT_HAND_OVER_FAILED")
        self.assertIn("could not read", out["save"]["handOverError"])

    def test_nothing_saved_nothing_handed_over(self):
        for result in ({"committed": True}, {"committed": True, "save": {"outcome": "SAVE_OUTCOME_FAILED", "path": "/x", "error": "read-only"}}, {"error": {"type": "E"}}):
            out, gw = self.hand_over(result)
            self.assertIs(out, result)
            self.assertEqual(gw.answered, [])


if __name__ == "__main__":
    unittest.main()


class LinkErrorEvents(unittest.TestCase):
    """The error event that ends a link is read by its code: a revoked host
    (ERROR_CODE_HOST_UNAUTHORIZED) pairs again, a superseded link
    (ERROR_CODE_HOST_SUPERSEDED) stops linking; anything else is a cut the
    link recovers from by linking again."""

    def test_an_unauthorized_link_pairs_again_and_other_errors_relink(self):
        link = Link("http://127.0.0.1:9", lambda call: {}, {}, token="nxh_test")
        revoked = json.dumps({"error": {"code": "ERROR_CODE_HOST_UNAUTHORIZED", "message": "this host was revoked; pair it again to link it"}})
        with self.assertRaises(linkmod.Revoked):
            link._on_event("error", revoked)
        cut = json.dumps({"error": {"code": "ERROR_CODE_REPLICA_LOST", "message": "this orchestrator replica is shutting down; link again"}})
        with self.assertRaises(linkmod.LinkError) as caught:
            link._on_event("error", cut)
        self.assertIn("shutting down", str(caught.exception))

    def test_a_superseded_link_stops_linking(self):
        link = Link("http://127.0.0.1:9", lambda call: {}, {}, token="nxh_test")
        superseded = json.dumps({"error": {"code": "ERROR_CODE_HOST_SUPERSEDED", "message": "a newer link of this host took over"}})
        with self.assertRaises(linkmod.Superseded):
            link._on_event("error", superseded)
        # The link loop ends on it instead of taking the link back.
        link._link_once = lambda: link._on_event("error", superseded)
        done = threading.Thread(target=link.run, daemon=True)
        done.start()
        done.join(10)
        self.assertFalse(done.is_alive(), "the superseded runtime kept linking")
        self.assertIn("newer link", link.superseded)
