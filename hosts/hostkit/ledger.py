"""The call ledger: each tool call id runs once.

A repeat of an id (a courier that retried after a lost answer, two couriers
that both saw the call) is answered with the first answer; an id reused for
other code is refused. The ledger lives beside the checkpoints, so a runtime
restarted on a checkpoint knows the calls whose effect that checkpoint holds.
"""

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


def call_fingerprint(mode, code):
    """What makes two deliveries of a call id the same call: its mode and its
    code's exact bytes."""
    data = ("%s\n%s" % (mode, code)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()



class CallLedger:
    """The tool call ids the runtime ran for its document, and its answers.

    Each answer is a file of its own in directory; index.json lists the calls
    oldest first, with the checkpoint generation that holds each call's
    effect. A committed call is recorded just before the checkpoint of its
    generation is saved, so a runtime restarted on checkpoint G keeps the
    calls up to G and forgets later ones, whose effect the document it opened
    does not hold either: ledger and document agree wherever a kill lands.
    A call stays while it is one of the last LEDGER_KEEP_CALLS, or younger
    than LEDGER_KEEP_S within LEDGER_MAX_CALLS and LEDGER_MAX_BYTES.
    """

    def __init__(self, directory, generation):
        self.dir = directory
        self.index = os.path.join(directory, "index.json")
        self.entries = {}
        os.makedirs(directory, exist_ok=True)
        try:
            with open(self.index, "r", encoding="utf-8") as f:
                listed = json.load(f)
        except (OSError, ValueError):
            listed = []
        for entry in listed if isinstance(listed, list) else []:
            if (isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("file"), str)
                    and isinstance(entry.get("generation"), int) and entry["generation"] <= generation):
                self.entries[entry["id"]] = entry
        self._prune()
        self._save_index()
        kept = {e["file"] for e in self.entries.values()} | {"index.json"}
        for name in os.listdir(directory):
            if name not in kept:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))

    def lookup(self, call_id):
        return self.entries.get(call_id)

    def answer(self, entry):
        """The stored answer of entry, or None when it cannot be read."""
        try:
            with open(os.path.join(self.dir, entry["file"]), "r", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def record(self, call_id, fingerprint, mode, result, generation):
        name = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest() + ".json"
        text = json.dumps(result)
        write_atomically(os.path.join(self.dir, name), text)
        self.entries.pop(call_id, None)
        self.entries[call_id] = {"id": call_id, "fingerprint": fingerprint, "mode": str(mode), "file": name,
                                 "generation": generation, "time": time.time(), "bytes": len(text)}
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
        write_atomically(self.index, json.dumps(list(self.entries.values())))


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
