"""A host whose document is a plain Python dict of element name -> properties,
so the kit's runner, server and ledger run whole under plain CPython. It
implements hostkit.adapter as an application with real transactions would:
a transaction works on a copy that a commit makes the document, and a
rollback drops it; a checkpoint is the document as JSON."""

import contextlib
import copy
import json

from hostkit import gltf, saving
from hostkit.wire import RequestError
from hostkit.adapter import Adapter, DocumentCopy, Transaction
from hostkit.wire import png_image
from hostkit.png import encode_png


class Document:
    """The elements scripts see as doc: add, change and remove them."""

    def __init__(self, elements=None):
        self.elements = elements if elements is not None else {}
        self.added, self.modified, self.deleted = [], [], []

    def add(self, name, **props):
        if name in self.elements:
            raise ValueError("element %s exists" % name)
        self.elements[name] = dict(props)
        self.added.append(name)

    def set(self, name, **props):
        self.elements[name].update(props)
        if name not in self.added and name not in self.modified:
            self.modified.append(name)

    def remove(self, name):
        del self.elements[name]
        if name in self.added:
            self.added.remove(name)
        else:
            self.deleted.append(name)


class MemTransaction(Transaction):
    def __init__(self, host, checkpoint):
        self.host = host
        self.snapshot = checkpoint()
        self.doc = Document(copy.deepcopy(host.elements))

    def globals(self):
        return {"doc": self.doc}

    def changes(self):
        d = self.doc
        return {"added": list(d.added), "modified": list(d.modified), "deleted": list(d.deleted),
                "changed": d.added + d.modified, "deleted_info": {}, "properties": {}}

    def finish_script(self, error, writes):
        return error

    def stop_tracking(self):
        pass

    def commit(self):
        self.host.elements = self.doc.elements
        self.host.count += 1
        return None

    def closed(self):
        return False

    def reopen(self, error):
        return []

    def changed(self):
        return self.doc.elements != self.host.elements

    def rollback(self):
        self.doc = Document(copy.deepcopy(self.host.elements))
        return []

    @contextlib.contextmanager
    def isolated(self):
        saved = copy.deepcopy(self.host.elements)
        yield []
        self.host.elements = saved


class MemHost(Adapter):
    host_app = "memhost"
    runtime_version = "0.0.1"

    def __init__(self):
        self.elements = {}
        self.count = 0

    def host_version(self):
        return "1.0"

    def serve(self):
        pass

    def new_document(self):
        self.elements = {}
        self.count += 1
        self.documents = getattr(self, "documents", 1) + 1

    def document_label(self):
        return "memory"

    def revision(self):
        return "mem.%d" % self.count

    def globals(self):
        return {"doc": Document(self.elements)}

    def checkpoint_copy(self):
        def save(path):
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.elements, f)
        return DocumentCopy("doc.json", "", save)

    def save_document(self, path, before_replace=None):
        def save(target):
            with open(target, "w", encoding="utf-8") as f:
                json.dump(self.elements, f)
        saving.save_atomically(save, path, 1, before_replace)

    def begin(self, transaction_name, checkpoint):
        return MemTransaction(self, checkpoint)

    def export_model(self, ids, limit, transaction=None):
        # Each element is a cube of its size (1 unless it says) at its x.
        elements = transaction.doc.elements if transaction is not None else self.elements
        names = sorted(elements) if ids is None else ids
        missing = [n for n in names if n not in elements]
        if missing:
            raise RequestError(400, "no element %s" % ", ".join(missing))
        builder = gltf.Builder(limit, metres_per_unit=1.0, z_up=False)
        for name in names:
            size, x = float(elements[name].get("size", 1)), float(elements[name].get("x", 0))
            corners = [(x + size * (i & 1), size * ((i >> 1) & 1), size * (i >> 2)) for i in range(8)]
            faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
                     (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
            builder.add(gltf.Element(name, name, "Element", corners, faces))
        return builder.glb("memhost"), names

    def capture(self, view, rule, framing=None, transaction=None):
        width = height = 64
        return png_image(encode_png(width, height, [b"\xff" * width * 3] * height), view, width, height, "document"), None
