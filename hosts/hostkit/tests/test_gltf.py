import base64
import json
import struct
import unittest

from hostkit import gltf
from hostkit.adapter import Adapter
from hostkit.tests.serving import Served


def parse(glb):
    """The JSON document and BIN chunk of a .glb, checking its framing."""
    magic, version, total = struct.unpack_from("<III", glb, 0)
    assert (magic, version, total) == (0x46546C67, 2, len(glb)), (magic, version, total, len(glb))
    length, kind = struct.unpack_from("<II", glb, 12)
    assert kind == 0x4E4F534A and length % 4 == 0
    doc = json.loads(glb[20:20 + length].decode("utf-8"))
    binary = b""
    if 20 + length < len(glb):
        blength, bkind = struct.unpack_from("<II", glb, 20 + length)
        assert bkind == 0x004E4942 and blength % 4 == 0
        binary = glb[28 + length:28 + length + blength]
    return doc, binary


class WriterTest(unittest.TestCase):
    def test_one_node_per_element_named_by_id(self):
        b = gltf.Builder(1 << 20, metres_per_unit=0.001, z_up=True)
        b.add(gltf.Element("Wall", "Wall north", "Wall", [(0, 0, 0), (1000, 0, 0), (0, 2000, 3000)], [(0, 1, 2)]))
        b.add(gltf.Element("Level", "Ground", "Level"))
        doc, binary = parse(b.glb("test"))
        self.assertEqual([n["name"] for n in doc["nodes"]], ["Wall", "Level"])
        self.assertEqual(doc["nodes"][0]["extras"], {"label": "Wall north", "category": "Wall"})
        self.assertNotIn("mesh", doc["nodes"][1])
        self.assertEqual(doc["scenes"][0]["nodes"], [0, 1])
        position = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]]
        # Millimetres to metres, +Z up to +Y up: (x, y, z) -> (x, z, -y).
        self.assertEqual(position["min"], [0.0, 0.0, -2.0])
        self.assertEqual(position["max"], [1.0, 3.0, 0.0])
        view = doc["bufferViews"][position["bufferView"]]
        points = struct.unpack_from("<9f", binary, view["byteOffset"])
        self.assertEqual(points[6:9], (0.0, 3.0, -2.0))
        self.assertEqual(doc["buffers"][0]["byteLength"], len(binary))

    def test_over_the_limit_names_it(self):
        b = gltf.Builder(2000, metres_per_unit=1, z_up=False)
        with self.assertRaises(gltf.ModelTooLarge) as ctx:
            for i in range(100):
                b.add(gltf.Element("e%d" % i, points=[(0, 0, 0), (1, 0, 0), (0, 1, 0)], triangles=[(0, 1, 2)]))
        self.assertEqual(ctx.exception.status, 413)
        self.assertIn("export limit of 2000 bytes", ctx.exception.message)
        # It stopped at the limit, not after tessellating everything.
        self.assertLess(b.elements, 100)

    def test_a_bad_index_is_refused(self):
        b = gltf.Builder(1 << 20, metres_per_unit=1, z_up=False)
        with self.assertRaises(ValueError):
            b.add(gltf.Element("e", points=[(0, 0, 0)], triangles=[(0, 1, 2)]))


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.served = Served()

    def tearDown(self):
        self.served.close()

    def model(self, **body):
        status, _, res = self.served.request("POST", "/v1/export-model", body)
        return status, res

    def test_export_of_the_document_and_of_a_region(self):
        self.served.execute(mode="MODE_TRANSACTION", code="doc.add('a')\ndoc.add('b', x=2, size=2)")
        status, res = self.model()
        self.assertEqual(status, 200, res)
        self.assertEqual(res["mimeType"], "model/gltf-binary")
        self.assertEqual(res["elementIds"], ["a", "b"])
        doc, _ = parse(base64.b64decode(res["data"]))
        self.assertEqual([n["name"] for n in doc["nodes"]], ["a", "b"])
        self.assertEqual(res["documentRevision"], self.served.host.revision())
        status, res = self.model(elementIds=["b"])
        self.assertEqual(res["elementIds"], ["b"])

    def test_refusals_name_the_problem_and_change_nothing(self):
        self.served.execute(mode="MODE_TRANSACTION", code="doc.add('a')")
        before = dict(self.served.host.elements)
        status, res = self.model(maxBytes=100)
        self.assertEqual(status, 413)
        self.assertIn("export limit of 100 bytes", res["error"])
        status, res = self.model(maxBytes=gltf.MAX_BYTES_CAP + 1)
        self.assertEqual(status, 400)
        self.assertIn("maxBytes must be between 1 and %d" % gltf.MAX_BYTES_CAP, res["error"])
        status, res = self.model(elementIds=["nope"])
        self.assertEqual(status, 400)
        self.assertIn("nope", res["error"])
        self.assertEqual(self.served.host.elements, before)

    def test_a_preview_carries_the_state_it_would_leave(self):
        self.served.execute(mode="MODE_TRANSACTION", code="doc.add('a')")
        _, res = self.served.execute(mode="MODE_PREVIEW", code="doc.add('new', x=3)\ndoc.remove('a')",
                                     capture={"view": "plan", "model": True})
        self.assertTrue(res["previewed"])
        self.assertEqual(res["model"]["elementIds"], ["new"])
        # What is, beside what would be: the element the script deletes is
        # in the model before.
        self.assertEqual(res["modelBefore"]["elementIds"], ["a"])
        self.assertEqual(res["changes"]["added"], ["new"])
        # Rolled back: the document holds what it held.
        self.assertEqual(sorted(self.served.host.elements), ["a"])
        _, res = self.served.execute(mode="MODE_PREVIEW", code="doc.add('c')",
                                     capture={"view": "plan", "model": True, "modelMaxBytes": 64})
        self.assertTrue(res["previewed"])
        self.assertNotIn("model", res)
        self.assertIn("export limit of 64 bytes", res["modelNote"])
        self.assertIn("export limit of 64 bytes", res["modelBeforeNote"])
        _, res = self.served.execute(mode="MODE_TRANSACTION", code="doc.add('d')", capture={"view": "plan", "model": True})
        self.assertTrue(res["committed"])
        self.assertEqual(res["model"]["elementIds"], ["a", "d"])
        self.assertNotIn("modelBefore", res)

    def test_a_host_without_an_exporter_says_so(self):
        host = self.served.host
        host.export_model = lambda *args: Adapter.export_model(host, *args)
        status, res = self.model()
        self.assertEqual(status, 501)
        self.assertEqual(res["error"], "the memhost runtime cannot export a 3D model yet")
        _, res = self.served.execute(mode="MODE_PREVIEW", code="doc.add('c')", capture={"view": "plan", "model": True})
        self.assertTrue(res["previewed"])
        self.assertEqual(res["modelNote"], "the memhost runtime cannot export a 3D model yet")


if __name__ == "__main__":
    unittest.main()
