"""The person's file on a Runner (hostkit.runner): each commit saved to it,
the file brought back to the checkpoint a restarted runtime serves, and a
new, empty document (with a file of its own) when a call asks for one."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TYPE_CHECKING

from hostkit import saving
from hostkit.fileledger import file_sha256, open_file_ledger

if TYPE_CHECKING:
    from hostkit.adapter import Adapter
    from hostkit.checkpoints import Checkpoints
    from hostkit.ledger import CallLedger
    from hostkit.newdocs import NewDocuments

# A test hook, for tests only: the runtime stops dead right after the save of
# the commit of this tool call id is recorded in the ledger, before the
# person's file is replaced, so a test can kill it exactly there.
HALT_ENV = "NEXUS_HOST_TEST_HALT_SAVE_OF_CALL"


class PersonsFile:
    """The Runner's methods for the person's file; they use the Runner's
    adapter, save_to, ledger, checkpoints, new_documents and halt_save_of."""

    adapter: Adapter
    save_to: str
    ledger: CallLedger
    checkpoints: Checkpoints
    new_documents: NewDocuments
    halt_save_of: str
    _checkpoint: Callable[..., Any]

    def _save(self, result, recording):
        """Saves the committed document to the person's file; a failure
        turns the result's save field (and the call's ledger answer) failed,
        with the reason."""
        generation = self.checkpoints.generation
        if recording is not None and (self.ledger.lookup(recording[0]) or {}).get("generation") != generation:
            # The file must not hold a call the ledger does not.
            result["save"] = saving.outcome(self.save_to, OSError(
                "not saved: the call could not be recorded in the call ledger"))
            return
        try:
            self._save_file(self.ledger, generation, recording[0] if recording else "")
        except Exception as exc:
            result["save"] = saving.outcome(self.save_to, exc)
            if recording is not None:
                try:
                    self.ledger.record(recording[0], recording[1], recording[2], result, generation)
                except OSError as err:
                    sys.__stderr__.write("nexus runtime: record the failed save in the ledger: %s\n" % err)

    def _save_file(self, ledger, generation, call_id=""):
        """Saves the served document to the person's file as of generation;
        the save is in ledger before the file is replaced. Raises when it
        failed."""

        def before_replace(tmp):
            ledger.record_save(generation, file_sha256(tmp))
            if call_id and call_id == self.halt_save_of:
                sys.__stderr__.write("nexus runtime: halted before saving %s (test hook %s)\n" % (self.save_to, HALT_ENV))
                sys.__stderr__.flush()
                while True:
                    time.sleep(3600)

        self.adapter.save_document(self.save_to, before_replace)

    def _resave(self, ledger, generation):
        """Brings the person's file to the checkpoint a restarted runtime
        serves (generation), when the file holds more or less than it."""
        self.adapter.serve()
        try:
            self._save_file(ledger, generation)
        except Exception as exc:
            sys.__stderr__.write("nexus runtime: save %s as of the checkpoint: %s\n" % (self.save_to, exc))

    def _new_document(self, body):
        """Starts a new, empty document when the call asks for one the first
        time; a checkpoint of it at once, so a restart comes back to it."""
        key = body.get("newDocumentKey") or ""
        before = self.new_documents.keys[-1:] if self.new_documents.keys else []
        self.save_to = self.new_documents.start(key, self.adapter, self.save_to)
        if key and before != [key] and self.new_documents.keys[-1:] == [key]:
            if self.save_to:
                # The new file keeps its own ledger, from this generation on:
                # the calls of the document before stay with that one's file.
                generation = self.checkpoints.generation
                ledger = open_file_ledger(self.checkpoints, "", self.save_to, self._resave)
                self.checkpoints.generation = generation
                if ledger is not None:
                    self.ledger = ledger
            sys.__stdout__.write("nexus runtime: a new, empty document for session %s; %s\n" % (
                key, "its commits are saved to %s" % self.save_to if self.save_to else "it is saved to no file"))
            sys.__stdout__.flush()
            self._checkpoint()
