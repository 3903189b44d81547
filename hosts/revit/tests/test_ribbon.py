"""The ribbon's buttons on the double: Connect serves the open project over
the kit's loopback contract, Status reports it, Disconnect stops it."""
import json
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
        self.assertIn("Disconnected", ribbon.disconnect()[0])
        with self.assertRaises(urllib.error.URLError):
            info(url, "ribbon-token")
        self.assertEqual(ribbon.status()[0][:13], "Not connected")
        self.assertEqual(ribbon.disconnect(), ["Not connected."])


if __name__ == "__main__":
    unittest.main()
