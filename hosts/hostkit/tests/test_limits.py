import json
import socket
import unittest

from hostkit import limits
from hostkit.tests.serving import TOKEN, Served


def raw_exchange(port, data, read_timeout=60):
    """Sends data on a fresh connection and answers everything the server
    sends back until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


class LimitRulesTest(unittest.TestCase):
    def test_timeouts_from_the_environment(self):
        self.assertEqual(limits.load_timeouts({}), {"header_timeout_ms": 10000, "body_timeout_ms": 60000})
        self.assertEqual(limits.load_timeouts({"NEXUS_HOST_BODY_TIMEOUT_MS": "250"})["body_timeout_ms"], 250)
        for value in ("50", "600001", "1s", "-5"):
            with self.assertRaises(ValueError) as ctx:
                limits.load_timeouts({"NEXUS_HOST_HEADER_TIMEOUT_MS": value})
            self.assertIn("NEXUS_HOST_HEADER_TIMEOUT_MS must be a number of milliseconds between 100 and 600000",
                          str(ctx.exception))


class LimitsServedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.served = Served(NEXUS_HOST_HEADER_TIMEOUT_MS="300", NEXUS_HOST_BODY_TIMEOUT_MS="300")

    @classmethod
    def tearDownClass(cls):
        cls.served.close()

    def post(self, headers, body=b""):
        head = "POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n" % (TOKEN, headers)
        return raw_exchange(self.served.port, head.encode("ascii") + body)

    def test_a_body_over_the_limit_is_refused_unread(self):
        answer = self.post("Content-Length: %d\r\n" % (limits.MAX_BODY_BYTES + 1))
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:80])
        self.assertIn(b"exceeds the limit of %d bytes" % limits.MAX_BODY_BYTES, answer)

    def test_chunked_and_bad_lengths_are_refused(self):
        answer = self.post("Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 411"), answer[:80])
        for header in ("Content-Length: 12abc\r\n", "Content-Length: 5\r\nContent-Length: 6\r\n", "Content-Length: -1\r\n"):
            answer = self.post(header, b"{}")
            self.assertTrue(answer.startswith(b"HTTP/1.1 400"), (header, answer[:80]))
            self.assertIn(b"invalid Content-Length", answer)

    def test_headers_that_never_end_get_408(self):
        answer = raw_exchange(self.served.port, b"POST /v1/execute HTTP/1.1\r\nHost: x\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 408"), answer[:80])
        self.assertIn(b"request headers not received within 300 ms", answer)

    def test_a_body_that_never_arrives_gets_408_and_runs_nothing(self):
        body = json.dumps({"mode": "MODE_TRANSACTION", "code": "doc.add('w')"}).encode("utf-8")
        answer = self.post("Content-Length: %d\r\n" % len(body), body[:10])
        self.assertTrue(answer.startswith(b"HTTP/1.1 408"), answer[:80])
        self.assertIn(b"request body not received within 300 ms", answer)
        self.assertEqual(self.served.host.elements, {})

    def test_a_body_that_is_not_a_json_object(self):
        for body in (b"[1]", b"{nope"):
            status, _, payload = self.served.request("POST", "/v1/execute", body)
            self.assertEqual(status, 400)
            self.assertIn("request body", payload["error"])


if __name__ == "__main__":
    unittest.main()
