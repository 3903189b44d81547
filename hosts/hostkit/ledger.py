"""The call ledger: each tool call id runs once.

A repeat of an id (a courier that retried after a lost answer, two couriers
that both saw the call) is answered with the first answer; an id reused for
other code is refused. The ledger lives beside the checkpoints, so a runtime
restarted on a checkpoint knows the calls whose effect that checkpoint holds,
or with the person's file when commits are saved to one (fileledger).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import contextlib
import hashlib
import json
import os
import time

# The call ledger keeps a call while it is one of the last LEDGER_KEEP_CALLS,
# or younger than LEDGER_KEEP_S while the ledger holds at most
# LEDGER_MAX_CALLS answers of LEDGER_MAX_BYTES in all (answers hold images).
LEDGER_KEEP_CALLS = 256
LEDGER_KEEP_S = 3600
LEDGER_MAX_CALLS = 4096
LEDGER_MAX_BYTES = 256 << 20
# Saves of the person's file remembered: the file's own backups (FILE1..)
# copied back over it are still known, up to this many saves back.
SAVES_KEPT = 16


def call_fingerprint(mode: Any, code: Any) -> str:
    """What makes two deliveries of a call id the same call: its mode and its
    code's exact bytes."""
    data = ("%s\n%s" % (mode, code)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()



class CallLedger:
    """The tool call ids the runtime ran for its document, and its answers.

    Each answer is a file of its own in directory; index.json lists the calls
    oldest first, with the checkpoint generation that holds each call's
    effect, and the saves of the person's file (fileledger). A committed call is recorded just before the checkpoint of its
    generation is saved, so a runtime restarted on checkpoint G keeps the
    calls up to G and forgets later ones, whose effect the document it opened
    does not hold either: ledger and document agree wherever a kill lands.
    A call stays while it is one of the last LEDGER_KEEP_CALLS, or younger
    than LEDGER_KEEP_S within LEDGER_MAX_CALLS and LEDGER_MAX_BYTES.
    """

    def __init__(self, directory: str, generation: Optional[int] = None) -> None:
        self.dir = directory
        self.index = os.path.join(directory, "index.json")
        self.entries = {}
        # The saves of the person's file: its sha256 when it was written at
        # each generation (a ledger kept with the file, fileledger).
        self.saves = []
        os.makedirs(directory, mode=0o700, exist_ok=True)
        try:
            with open(self.index, "r", encoding="utf-8") as f:
                listed = json.load(f)
        except (OSError, ValueError):
            listed = []
        if isinstance(listed, dict):
            saves = listed.get("saves")
            self.saves = [s for s in saves if isinstance(s, dict) and isinstance(s.get("generation"), int)
                          and isinstance(s.get("sha256"), str)] if isinstance(saves, list) else []
            listed = listed.get("calls")
        for entry in listed if isinstance(listed, list) else []:
            if (isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("file"), str)
                    and isinstance(entry.get("generation"), int)):
                self.entries[entry["id"]] = entry
        if generation is not None:
            self.forget_after(generation)

    def forget_after(self, generation: int) -> None:
        """Forgets the calls and saves of generations after generation (all
        of them for -1): the document the runtime opened holds none of their
        effects. Removes every file no kept call names."""
        self.entries = {k: e for k, e in self.entries.items() if e["generation"] <= generation}
        self.saves = [s for s in self.saves if s["generation"] <= generation]
        self._prune()
        self._save_index()
        kept = {e["file"] for e in self.entries.values()} | {"index.json"}
        for name in os.listdir(self.dir):
            if name not in kept:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.dir, name))

    def saved_generation(self, sha256: Optional[str]) -> Optional[int]:
        """The newest generation the person's file was written at with
        content sha256, or None when no recorded save wrote it."""
        found = [s["generation"] for s in self.saves if sha256 is not None and s["sha256"] == sha256]
        return max(found) if found else None

    def commits_between(self, after: Optional[int], upto: int) -> bool:
        """Whether a call committed at a generation after after (None: at
        any) and up to upto."""
        low = -1 if after is None else after
        return any(e.get("committed") and low < e["generation"] <= upto for e in self.entries.values())

    def record_save(self, generation: int, sha256: Optional[str]) -> None:
        """Records that the person's file is about to hold content sha256 as
        of generation; written before the file is replaced, so a file that
        was replaced is always one the ledger knows."""
        self.saves = [s for s in self.saves if s["generation"] < generation][-(SAVES_KEPT - 1):]
        self.saves.append({"generation": generation, "sha256": sha256})
        self._save_index()

    def lookup(self, call_id: str) -> Optional[Dict[str, Any]]:
        return self.entries.get(call_id)

    def answer(self, entry: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The stored answer of entry, or None when it cannot be read."""
        try:
            with open(os.path.join(self.dir, entry["file"]), "r", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def record(self, call_id: str, fingerprint: str, mode: Any, result: Dict[str, Any], generation: int) -> None:
        name = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest() + ".json"
        text = json.dumps(result)
        write_atomically(os.path.join(self.dir, name), text)
        self.entries.pop(call_id, None)
        self.entries[call_id] = {"id": call_id, "fingerprint": fingerprint, "mode": str(mode), "file": name,
                                 "generation": generation, "committed": bool(result.get("committed")),
                                 "time": time.time(), "bytes": len(text)}
        self._prune()
        self._save_index()

    def _prune(self):
        now = time.time()
        size = sum(int(e.get("bytes") or 0) for e in self.entries.values())
        while self.entries:
            oldest = next(iter(self.entries))
            entry = self.entries[oldest]
            if len(self.entries) <= LEDGER_KEEP_CALLS or (
                    len(self.entries) <= LEDGER_MAX_CALLS and size <= LEDGER_MAX_BYTES
                    and now - entry.get("time", 0) < LEDGER_KEEP_S):
                return
            size -= int(entry.get("bytes") or 0)
            del self.entries[oldest]
            with contextlib.suppress(OSError):
                os.remove(os.path.join(self.dir, entry["file"]))

    def _save_index(self):
        write_atomically(self.index, json.dumps({"calls": list(self.entries.values()), "saves": self.saves}))


def write_atomically(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
