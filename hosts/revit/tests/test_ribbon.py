"""The ribbon's buttons on the double: Connect serves the open project over
the kit's loopback contract (and starts the host link when asked), Status
reports it, Disconnect stops it."""
import http.server
import json
import threading
import unittest
import urllib.error
import urllib.request

from nexus_revit import ribbon
from revitdouble import Session


def info(url, token):
    req = urllib.request.Request(url + "/v1/info", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


class Ribbon(unittest.TestCase):
    def test_connect_status_disconnect(self):
        session = Session(title="Office").start()
        self.addCleanup(session.stop)
        lines = ribbon.connect(session.uiapp, {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": "ribbon-token"})
        url = next(l.split(": ", 1)[1] for l in lines if l.startswith("address: "))
        self.assertIn("pairing token: ribbon-token", lines)
        self.assertTrue(any("host link" in l for l in lines), lines)
        got = info(url, "ribbon-token")
        self.assertEqual((got["hostApp"], got["document"]), ("revit", "Office"))
        self.assertIn("Already connected", ribbon.connect(session.uiapp)[0])
        status = ribbon.status()
        self.assertTrue(status[0].startswith("Connected: " + url), status)
        self.assertIn("Office", status[1])
        self.assertRegex(status[3], r"^(project read: \d+ elements|reading the project while Revit is idle)")
        self.assertIn("Disconnected", ribbon.disconnect()[0])
        with self.assertRaises(urllib.error.URLError):
            info(url, "ribbon-token")
        self.assertEqual(ribbon.status()[0][:13], "Not connected")
        self.assertEqual(ribbon.disconnect(), ["Not connected."])

    def test_connect_starts_the_host_link(self):
        # A loopback server where the gateway would be: it records the
        # pairing request the kit's link client sends and refuses it, so the
        # link keeps retrying until Disconnect stops it.
        asked = []
        got = threading.Event()

        class Gateway(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                asked.append((self.path, json.loads(body or b"{}")))
                got.set()
                self.send_response(503)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        gw = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
        threading.Thread(target=gw.serve_forever, daemon=True).start()
        self.addCleanup(gw.server_close)
        self.addCleanup(gw.shutdown)
        session = Session(title="Office").start()
        self.addCleanup(session.stop)
        url = "http://127.0.0.1:%d" % gw.server_address[1]
        lines = ribbon.connect(session.uiapp, {"NEXUS_HOST_ADDR": "127.0.0.1:0", "NEXUS_HOST_TOKEN": "ribbon-token",
                                               "NEXUS_HOST_CONNECT_URL": url})
        self.addCleanup(ribbon.disconnect)
        self.assertIn("Nexus host link: pairing with %s; the code to approve (nexus hosts approve CODE) "
                      "appears in the output window." % url, lines)
        self.assertTrue(got.wait(60), "the link never asked to pair")
        path, body = asked[0]
        self.assertEqual((path, body["hostApp"], body["document"]), ("/v1/host-pairings", "revit", "Office"))


if __name__ == "__main__":
    unittest.main()
