"""New documents on request: a call carrying newDocumentKey (Nexus sets the
id of a session created with newDocument) makes the runtime start a new,
empty document the first time it sees the key, and never again. The keys
seen, and the file the new document is saved to, are kept beside the ledger
so a runtime restarted on its checkpoint neither starts another document
nor saves the new one over the person's previous file."""

from __future__ import annotations

from typing import Collection, Optional, TYPE_CHECKING

import json
import os

from hostkit.wire import RequestError

if TYPE_CHECKING:
    from hostkit.adapter import Adapter

STATE_FILE = "new-documents.json"
# Keys remembered; the oldest are forgotten past it (a session's calls all
# come within its life, and a host serves one document at a time).
MAX_KEYS = 1000


def next_free(path: str, taken: Collection[str] = ()) -> str:
    """The first of house-2.FCStd, house-3.FCStd, ... beside path
    (house.FCStd) that neither exists nor is in taken."""
    stem, ext = os.path.splitext(path)
    n = 2
    while os.path.exists("%s-%d%s" % (stem, n, ext)) or "%s-%d%s" % (stem, n, ext) in taken:
        n += 1
    return "%s-%d%s" % (stem, n, ext)


class NewDocuments:
    """The keys a runtime started a new document for, in directory."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, STATE_FILE)
        self.keys = []
        self.save_to = None
        # The person's file the runtime was started on, and the files the
        # new documents took beside it.
        self.first = ""
        self.files = []
        try:
            with open(self.path) as f:
                state = json.load(f)
            self.keys = [str(k) for k in state.get("keys", [])]
            self.save_to = state.get("saveTo")
            self.first = state.get("first") or ""
            self.files = list(state.get("files") or [])
        except (OSError, ValueError):
            pass

    def start(self, key: str, adapter: Adapter, save_to: str) -> str:
        """Starts a new document for key unless it was seen; answers the
        file commits are saved to from now on ("" for none)."""
        if not key or key in self.keys:
            return save_to
        if not isinstance(key, str) or len(key) > 200:
            raise RequestError(400, "newDocumentKey must be a string of at most 200 characters")
        try:
            adapter.new_document()
        except NotImplementedError:
            raise RequestError(400, "this %s runtime cannot start a new document" % adapter.host_app)
        if save_to:
            self.first = self.first or save_to
            save_to = next_free(self.first, self.files)
            self.files.append(save_to)
        self.keys = (self.keys + [key])[-MAX_KEYS:]
        self.save_to = save_to
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"keys": self.keys, "saveTo": save_to, "first": self.first, "files": self.files[-MAX_KEYS:]}, f)
        os.replace(tmp, self.path)
        return save_to
