import unittest

from hostkit import auth
from hostkit.tests.serving import ORIGIN, Served


class AuthRulesTest(unittest.TestCase):
    def test_only_loopback_addresses(self):
        self.assertEqual(auth.parse_addr("127.0.0.1:7723"), ("127.0.0.1", 7723))
        self.assertEqual(auth.parse_addr("[::1]:0"), ("::1", 0))
        for addr in ("0.0.0.0:7723", "192.168.1.2:7723", "example.org:80"):
            with self.assertRaises(ValueError) as ctx:
                auth.parse_addr(addr)
            self.assertIn("must be a loopback address", str(ctx.exception))
        with self.assertRaises(ValueError) as ctx:
            auth.parse_addr("127.0.0.1:http")
        self.assertIn("must end with a port", str(ctx.exception))

    def test_a_token_is_generated_when_none_is_set(self):
        a, b = auth.load({}), auth.load({})
        self.assertTrue(a["generated_token"])
        self.assertGreaterEqual(len(a["token"]), 40)
        self.assertNotEqual(a["token"], b["token"])
        self.assertFalse(auth.load({"NEXUS_HOST_TOKEN": "x"})["generated_token"])

    def test_token_and_origin(self):
        self.assertTrue(auth.token_ok("Bearer s3cret", "s3cret"))
        for header in (None, "", "Bearer s3cre", "bearer s3cret", "Bearer s3cret ", "Basic s3cret"):
            self.assertFalse(auth.token_ok(header, "s3cret"), header)
        self.assertTrue(auth.origin_ok(None, ORIGIN))
        self.assertTrue(auth.origin_ok(ORIGIN, ORIGIN))
        self.assertFalse(auth.origin_ok("http://evil.example", ORIGIN))


class AuthServedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.served = Served()

    @classmethod
    def tearDownClass(cls):
        cls.served.close()

    def test_a_wrong_token_is_refused_and_runs_nothing(self):
        before = self.served.host.revision()
        for token in (None, "wrong"):
            status, resp, body = self.served.request("POST", "/v1/execute",
                                                     {"mode": "MODE_TRANSACTION", "code": "doc.add('w')"}, token=token)
            self.assertEqual(status, 401)
            self.assertEqual(resp.getheader("WWW-Authenticate"), 'Bearer realm="nexus-host"')
            self.assertIn("pairing token", body["error"])
        self.assertEqual(self.served.host.revision(), before)
        self.assertEqual(self.served.host.elements, {})

    def test_another_origin_is_refused_before_the_token(self):
        status, _, body = self.served.request("GET", "/v1/info", headers={"Origin": "http://evil.example"}, token="wrong")
        self.assertEqual(status, 403)
        self.assertIn("only %s may call" % ORIGIN, body["error"])

    def test_the_allowed_origin_gets_cors(self):
        status, resp, body = self.served.request("GET", "/v1/info", headers={"Origin": ORIGIN})
        self.assertEqual(status, 200)
        self.assertEqual(resp.getheader("Access-Control-Allow-Origin"), ORIGIN)
        self.assertEqual(body["hostApp"], "memhost")
        status, resp, _ = self.served.request("OPTIONS", "/v1/execute", token=None,
                                              headers={"Origin": ORIGIN, "Access-Control-Request-Private-Network": "true"})
        self.assertEqual(status, 204)
        self.assertEqual(resp.getheader("Access-Control-Allow-Private-Network"), "true")
        self.assertIn("Authorization", resp.getheader("Access-Control-Allow-Headers"))

    def test_unknown_paths_and_methods(self):
        self.assertEqual(self.served.request("GET", "/v1/nothing")[0], 404)
        self.assertEqual(self.served.request("GET", "/v1/execute")[0], 405)


if __name__ == "__main__":
    unittest.main()
