"""Binary glTF 2.0 (.glb) of a document's elements, for the person's 3D
review: one node per element, named by its id, holding that element's
triangles. The kit writes the container; an adapter tessellates its own
elements (hostkit.adapter.Adapter.export_model).

The layout follows the glTF 2.0 specification (Khronos): a 12-byte header,
a JSON chunk and a BIN chunk, each padded to 4 bytes; positions are FLOAT
VEC3 with their min and max (required for POSITION), indices UNSIGNED_INT;
glTF's unit is the metre and its up axis +Y, so an adapter hands its length
unit in metres and whether its up axis is +Z.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, TYPE_CHECKING

import base64
import json
import struct
import time

from hostkit.wire import RequestError

if TYPE_CHECKING:
    from hostkit.adapter import Adapter, Transaction

MIME_TYPE = "model/gltf-binary"
# What an export may weigh unless the request asks for less, and the most it
# may ask for: a review model is fetched by a browser, and a document too
# large for this is reviewed a region at a time (elementIds).
DEFAULT_MAX_BYTES = 16 << 20
MAX_BYTES_CAP = 64 << 20

_GLB_MAGIC = 0x46546C67
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942
_ARRAY_BUFFER = 34962
_ELEMENT_ARRAY_BUFFER = 34963
_FLOAT = 5126
_UNSIGNED_INT = 5125
_TRIANGLES = 4


class Element:
    """One element's node: name is its id (the node's name), label and
    category what a person calls it (kept in the node's extras), points a
    list of (x, y, z) in the adapter's unit and triangles a list of index
    triples into points. An element without geometry keeps its node, with
    no mesh."""

    def __init__(self, name: str, label: str = "", category: str = "", points: Sequence[Sequence[float]] = (),
                 triangles: Sequence[Sequence[int]] = ()) -> None:
        self.name = name
        self.label = label
        self.category = category
        self.points = points
        self.triangles = triangles


class ModelTooLarge(RequestError):
    """An export over its limit: HTTP 413, naming the limit and what the
    export reached, so the caller can ask for a region instead."""

    def __init__(self, reached: int, limit: int, elements: int) -> None:
        super().__init__(413, "the model of %d elements exceeds the export limit of %d bytes (it reached %d bytes "
                              "before the export stopped); export fewer elements (elementIds) or ask for up to %d bytes "
                              "(maxBytes)" % (elements, limit, reached, MAX_BYTES_CAP))
        self.reached = reached
        self.limit = limit


def limit_from(body: Dict[str, Any]) -> int:
    """The byte limit a request asks for (maxBytes), within the cap; a bad
    value is refused with the range named."""
    value: Any = body.get("maxBytes")
    if value in (None, "", 0, "0"):
        return DEFAULT_MAX_BYTES
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise RequestError(400, "maxBytes must be an integer, got %r" % (value,))
    if number < 1 or number > MAX_BYTES_CAP:
        raise RequestError(400, "maxBytes must be between 1 and %d, got %d" % (MAX_BYTES_CAP, number))
    return number


def ids_from(body: Dict[str, Any]) -> Optional[List[str]]:
    """The element ids a request names (elementIds), or None for the whole
    document."""
    ids = body.get("elementIds")
    if ids in (None, []):
        return None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise RequestError(400, "elementIds must be a list of non-empty strings")
    return ids


def _pad(data, fill):
    return data + fill * ((4 - len(data) % 4) % 4)


class Builder:
    """Collects elements and writes them as one .glb. It counts bytes as
    elements arrive and raises ModelTooLarge as soon as the limit is passed,
    so an oversized document is not tessellated whole first."""

    def __init__(self, limit: int, metres_per_unit: float, z_up: bool) -> None:
        self.limit = limit
        self.scale = float(metres_per_unit)
        self.z_up = z_up
        self.nodes: List[Dict[str, Any]] = []
        self.meshes: List[Dict[str, Any]] = []
        self.accessors: List[Dict[str, Any]] = []
        self.views: List[Dict[str, Any]] = []
        self.binary = bytearray()
        self.elements = 0

    def _axis(self, p):
        x, y, z = (float(c) * self.scale for c in p)
        # A +Z-up document turns to glTF's +Y up, keeping the handedness.
        return (x, z, -y) if self.z_up else (x, y, z)

    def _view(self, data, target):
        offset = len(self.binary)
        self.binary += _pad(bytes(data), b"\0")
        self.views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(data), "target": target})
        return len(self.views) - 1

    def add(self, element: Element) -> None:
        self.elements += 1
        node: Dict[str, Any] = {"name": element.name}
        extras = {k: v for k, v in (("label", element.label), ("category", element.category)) if v}
        if extras:
            node["extras"] = extras
        points = [self._axis(p) for p in element.points]
        triangles = [t for t in element.triangles if len(t) == 3]
        if points and triangles:
            flat = [c for p in points for c in p]
            view = self._view(struct.pack("<%df" % len(flat), *flat), _ARRAY_BUFFER)
            lows = [min(p[i] for p in points) for i in range(3)]
            highs = [max(p[i] for p in points) for i in range(3)]
            self.accessors.append({"bufferView": view, "componentType": _FLOAT, "count": len(points),
                                   "type": "VEC3", "min": lows, "max": highs})
            position = len(self.accessors) - 1
            indices = [int(i) for t in triangles for i in t]
            if min(indices) < 0 or max(indices) >= len(points):
                raise ValueError("element %s has a triangle index outside its %d points" % (element.name, len(points)))
            view = self._view(struct.pack("<%dI" % len(indices), *indices), _ELEMENT_ARRAY_BUFFER)
            self.accessors.append({"bufferView": view, "componentType": _UNSIGNED_INT, "count": len(indices),
                                   "type": "SCALAR", "min": [min(indices)], "max": [max(indices)]})
            self.meshes.append({"name": element.name, "primitives": [
                {"attributes": {"POSITION": position}, "indices": len(self.accessors) - 1, "mode": _TRIANGLES}]})
            node["mesh"] = len(self.meshes) - 1
        self.nodes.append(node)
        # The JSON grows by about a node's worth per element; the binary is
        # exact. Checked per element so the work stops at the limit.
        reached = len(self.binary) + 256 * len(self.nodes)
        if reached > self.limit:
            raise ModelTooLarge(reached, self.limit, self.elements)

    def glb(self, generator: str) -> bytes:
        """The .glb bytes of what was added; raises ModelTooLarge when the
        whole file is over the limit."""
        # glTF's arrays hold at least one item when present: an empty
        # document is a scene without nodes.
        doc: Dict[str, Any] = {"asset": {"version": "2.0", "generator": generator}, "scene": 0, "scenes": [{}]}
        if self.nodes:
            doc.update({"scenes": [{"nodes": list(range(len(self.nodes)))}], "nodes": self.nodes})
        if self.meshes:
            doc.update({"meshes": self.meshes, "accessors": self.accessors, "bufferViews": self.views,
                        "buffers": [{"byteLength": len(self.binary)}]})
        text = _pad(json.dumps(doc, separators=(",", ":")).encode("utf-8"), b" ")
        chunks = struct.pack("<II", len(text), _CHUNK_JSON) + text
        if self.meshes:
            chunks += struct.pack("<II", len(self.binary), _CHUNK_BIN) + bytes(self.binary)
        total = 12 + len(chunks)
        if total > self.limit:
            raise ModelTooLarge(total, self.limit, self.elements)
        return struct.pack("<III", _GLB_MAGIC, 2, total) + chunks


def export(adapter: Adapter, body: Dict[str, Any], txn: Optional[Transaction] = None) -> Dict[str, Any]:
    """The adapter's document (or the elements body names) as an
    ExportedModel, within body's byte limit (ModelTooLarge past it); with a
    preview's open transaction, the state it would leave."""
    started = time.monotonic()
    limit = limit_from(body)
    ids = ids_from(body)
    try:
        data, names = adapter.export_model(ids, limit, txn)
    except NotImplementedError:
        raise RequestError(501, "the %s runtime cannot export a 3D model yet" % adapter.host_app)
    return {"mimeType": MIME_TYPE, "data": base64.b64encode(data).decode("ascii"), "elementIds": names,
            "durationMs": int((time.monotonic() - started) * 1000)}


def captured(adapter: Adapter, capture: Dict[str, Any], txn: Optional[Transaction]) -> Dict[str, Any]:
    """The model a capture asks for (model: true) beside its view: after a
    commit the committed state, in a preview the state the script would
    leave, exported before the rollback. A model over its limit, or a host
    that exports none, leaves the script's result standing with a
    modelNote saying why."""
    if not capture.get("model"):
        return {}
    try:
        return {"model": export(adapter, {"maxBytes": capture.get("modelMaxBytes")}, txn)}
    except RequestError as exc:
        return {"modelNote": exc.message}


def before(adapter: Adapter, capture: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """For a preview whose capture asks for a model, the document as it is
    before the script (modelBefore), so a reviewer can toggle between what
    is and what would be, and see what the script deletes."""
    got = captured(adapter, capture or {}, None)
    return {k.replace("model", "modelBefore", 1): v for k, v in got.items()}
