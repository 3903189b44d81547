"""The three modes of POST /v1/execute on an adapter: read-only (any change
undone and refused), a transaction (committed, or rolled back exactly), and
a preview (run, reported and rendered as a commit would be, then rolled
back exactly); and the calls around them, each tool call id run once."""

from __future__ import annotations

from typing import Any, Dict, Optional, TYPE_CHECKING, Tuple

import hashlib
import os
import time

from hostkit import executor, gltf, imagefit, saving
from hostkit.adapter import no_changes
from hostkit.checkpoints import Checkpoints
from hostkit.fileledger import open_file_ledger
from hostkit.ledger import CallLedger, call_fingerprint
from hostkit.newdocs import NewDocuments
from hostkit.personsfile import HALT_ENV, PersonsFile
from hostkit.wire import MODES, RequestError, error as wire_error, extract_report, int_field, rollback_exactness

if TYPE_CHECKING:
    from hostkit.adapter import Adapter
    from hostkit.process import StatusPipe

class Runner(PersonsFile):
    """Serves info, execute_call, export_view and export_model for one adapter; on the main thread only."""

    def __init__(self, adapter: Adapter, status: StatusPipe, checkpoint_dir: str = "", opened: str = "",
                 save_to: str = "") -> None:
        self.adapter = adapter
        # The person's file every commit is saved to ("" saves none).
        self.save_to = save_to
        self.status = status
        self.hidden = (executor.KIT_DIR, adapter.source_dir)
        self.threads = executor.ScriptThreads()
        self.last_changes = no_changes()
        self.checkpoints = Checkpoints(checkpoint_dir, opened, status)
        self.halt_save_of = os.environ.get(HALT_ENV, "")
        self.new_documents = NewDocuments(self.checkpoints.dir)
        if self.new_documents.save_to is not None:
            # Restarted after a session started a new document: its commits
            # go to the new document's file, never the one before, and the
            # calls it holds are in that file's ledger.
            self.save_to = save_to = self.new_documents.save_to
        # A runtime restarted on a checkpoint keeps the calls it holds; one
        # that saves to the person's file keeps them with the file, so a
        # runtime started on the file again keeps the calls the file holds.
        kept = open_file_ledger(self.checkpoints, opened, save_to, self._resave) if save_to else None
        self.ledger = kept if kept is not None else CallLedger(
            os.path.join(self.checkpoints.dir, "ledger"), self.checkpoints.generation)
        # (call id, fingerprint, mode) of the call running, until recorded.
        self.recording: Optional[Tuple[str, str, Any]] = None

    def info(self, _body: Dict[str, Any]) -> Dict[str, Any]:
        a = self.adapter
        return {"hostApp": a.host_app, "hostVersion": a.host_version(), "runtimeVersion": a.runtime_version,
                "document": a.document_label(), "documentRevision": a.revision()}

    def _namespace(self, names, changes):
        """The script's globals: the adapter's names and nexus_changes(),
        which answers changes() copied (inside a script its own changes so
        far; inside an epilogue what the committed transaction changed)."""

        def nexus_changes():
            """What changed: inside a script, its own changes so far; inside
            an epilogue, what the committed transaction changed."""
            return {k: (list(v) if isinstance(v, list) else dict(v)) for k, v in changes().items()}

        ns = {"__name__": "__nexus__", "nexus_changes": nexus_changes}
        ns.update(names)
        return ns

    def _run(self, code, filename, namespace, timeout_ms, threads=None):
        return executor.run_code(code, filename, namespace, timeout_ms, self.status, threads, self.hidden)

    def _checkpoint(self, committed=None):
        """Saves a checkpoint; committed, the answer of a call that committed,
        goes into the ledger with the checkpoint's generation before the
        document is saved: a runtime restarted on an older checkpoint forgets
        the call together with its effect."""
        before_save = None
        if committed is not None and self.recording is not None:
            call_id, fingerprint, mode = self.recording
            self.recording = None

            def before_save(generation):
                self.ledger.record(call_id, fingerprint, mode, committed, generation)
        return self.checkpoints.save(self.adapter.checkpoint_copy(), before_save)

    def execute(self, body: Dict[str, Any]) -> Dict[str, Any]:
        started = time.monotonic()
        mode = body.get("mode")
        if mode not in MODES:
            raise RequestError(400, "mode must be MODE_READ_ONLY, MODE_TRANSACTION or MODE_PREVIEW, got %r" % (mode,))
        code = body.get("code")
        if not isinstance(code, str) or not code.strip():
            raise RequestError(400, "code must be a non-empty string")
        if "\x00" in code:
            # compile() refuses NUL with a ValueError, not a SyntaxError; a
            # script that cannot compile is answered like any other, before
            # anything opens a transaction.
            at = code.index("\x00")
            line = code.count("\n", 0, at) + 1
            message = "source code cannot contain null bytes: a NUL at line %d, column %d" % (
                line, at - (code.rfind("\n", 0, at) + 1) + 1)
            return {"committed": False, "stdout": "",
                    "error": wire_error("SyntaxError", message, '  File "%s", line %d\nSyntaxError: %s\n' % (
                        executor.SCRIPT_FILENAME, line, message), line),
                    "durationMs": int((time.monotonic() - started) * 1000)}
        timeout_ms = int_field(body, "timeoutMs", executor.DEFAULT_TIMEOUT_MS, 1, executor.MAX_TIMEOUT_MS)
        transaction_name = str(body.get("transactionName") or "Nexus automation")
        epilogue = body.get("epilogue") or None
        capture = body.get("capture") or None
        for name, value in (("epilogue", epilogue), ("capture", capture)):
            if value is not None and not isinstance(value, dict):
                raise RequestError(400, "%s must be an object, got %s" % (name, type(value).__name__))
        if capture:
            # A capture that cannot be rendered is refused before the script
            # runs, not after it committed.
            imagefit.rule_from_request(capture)
            if capture.get("model"):
                gltf.limit_from({"maxBytes": capture.get("modelMaxBytes")})
        expect = str(body.get("expectRevision") or "")

        adapter = self.adapter
        self._new_document(body)
        adapter.serve()
        revision = adapter.revision()
        if expect and expect != revision:
            # The person approved a preview of another document state; what
            # the script would do now is not what they saw.
            return {"committed": False, "stdout": "", "documentRevision": revision,
                    "error": wire_error("RevisionChanged",
                                        "the document changed since the preview: the preview saw revision %s, "
                                        "the document is now at revision %s; nothing was run, preview the script "
                                        "again" % (expect, revision)),
                    "durationMs": int((time.monotonic() - started) * 1000)}
        before = gltf.before(adapter, capture) if mode == "MODE_PREVIEW" else {}
        txn = adapter.begin(transaction_name, self._checkpoint)
        try:
            stdout, error = self._run(code, executor.SCRIPT_FILENAME, self._namespace(txn.globals(), txn.changes),
                                      timeout_ms, self.threads)
            error = txn.finish_script(error, mode in ("MODE_TRANSACTION", "MODE_PREVIEW"))
        finally:
            txn.stop_tracking()

        committed = False
        previewed = False
        described = {}
        exactness = {}
        snap = txn.changes()
        if mode == "MODE_TRANSACTION" and error is None:
            error = txn.commit()
            committed = error is None
            if committed:
                self.last_changes = snap
                described = self._describe(txn, snap, epilogue, capture, pending=False)
        elif txn.closed():
            exactness = rollback_exactness(txn.reopen(error))
        else:
            if mode == "MODE_PREVIEW" and error is None:
                # The transaction is still open: the report and the view see
                # what a commit would hold, and the rollback below takes it
                # all back, the epilogue's doings included.
                described = self._describe(txn, snap, epilogue, capture, pending=True)
            changed = txn.changed()
            problems = txn.rollback()
            exactness = rollback_exactness(problems)
            if mode == "MODE_READ_ONLY" and error is None and changed:
                error = wire_error("ReadOnlyViolation",
                                   "a read-only script changed the document (added %s, modified %s, deleted %s); "
                                   "the changes were undone; run it as a transaction to change the document"
                                   % (snap["added"], snap["modified"], snap["deleted"]))
            if mode == "MODE_PREVIEW" and error is None:
                if problems:
                    described = {}
                    error = wire_error("RollbackFailed", "the preview ran but could not be rolled back exactly: %s"
                                       % "; ".join(problems))
                else:
                    previewed = True
            elif problems and error is not None:
                error["message"] += "; rollback was not exact: %s" % "; ".join(problems)

        result = {"committed": committed, "stdout": stdout}
        if error is not None:
            result["error"] = error
        if committed or previewed:
            result["changes"] = {"added": snap["added"], "modified": snap["modified"], "deleted": snap["deleted"]}
            result.update(described)
        elif capture and error is None:
            image, note = self._capture(capture)
            if image is not None:
                result["images"] = [image]
            else:
                result["captureNote"] = note
        if previewed:
            result.update(before, previewed=True)
        result.update(exactness, **txn.result_fields(bool(exactness)))
        result["documentRevision"] = adapter.revision()
        if committed and self.save_to:
            # What the save below makes true; a save that fails corrects it.
            result["save"] = saving.outcome(self.save_to)
        result["durationMs"] = int((time.monotonic() - started) * 1000)
        if committed:
            # Saved once the answer is whole: the ledger entry of this call
            # is written with the checkpoint that holds its effect, and the
            # person's file is saved after the checkpoint, so it never holds
            # a generation the checkpoints do not.
            recording = self.recording
            self._checkpoint(result)
            if self.save_to:
                self._save(result, recording)
        return result

    def execute_call(self, body: Dict[str, Any]) -> Dict[str, Any]:
        """Runs an execute request at most once per tool call id.

        A repeat of an id (a courier that retried after a lost answer, two
        couriers that both saw the call) is answered from the ledger without
        running anything; one that arrives while the first still runs waits
        behind it on the main thread's queue and is answered the same. An id
        reused for another mode or other code bytes is refused (409) and
        changes nothing. A request without an id runs as it is.
        """
        call_id = body.get("toolCallId") or ""
        if not isinstance(call_id, str) or not call_id:
            return self.execute(body)
        fingerprint = call_fingerprint(body.get("mode"), body.get("code"))
        entry = self.ledger.lookup(call_id)
        if entry is not None:
            stored = self.ledger.answer(entry) if entry["fingerprint"] == fingerprint else None
            if stored is not None:
                return stored
            if entry["fingerprint"] == fingerprint:
                why = "its stored answer could not be read back"
            else:
                why = "it ran as a %s of other code (or in another mode)" % entry.get("mode", "call")
            raise RequestError(409, "tool call id %r was already used: %s" % (call_id, why), result={
                "committed": False, "stdout": "",
                "error": wire_error("CallIdReused",
                                    "tool call id %r was already run by this runtime and %s; nothing was run and "
                                    "the document is unchanged; a new call needs an id of its own" % (call_id, why)),
                "documentRevision": self.adapter.revision(), "durationMs": 0})
        self.recording = (call_id, fingerprint, body.get("mode"))
        try:
            result = self.execute(body)
        finally:
            pending, self.recording = self.recording, None
        if pending is not None and result.get("error", {}).get("type") != "RevisionChanged":
            # Not committed: the document is as at the last checkpoint, so
            # the answer holds for that generation. A RevisionChanged run
            # ran nothing, and its id may run once the preview is renewed.
            self.ledger.record(call_id, fingerprint, pending[2], result, self.checkpoints.generation)
        return result

    def _describe(self, txn, snap, epilogue, capture, pending):
        """Runs the epilogue and renders the framed view of a transaction that
        committed, or that is still open when pending (a preview); answers
        the result's epilogue, images and captureNote."""
        out = {}
        if epilogue:
            out["epilogue"] = self._epilogue(txn, epilogue, snap, isolated=not pending)
            problems = out["epilogue"].pop("rollbackProblems", None)
            if problems:
                # The epilogue's own rollback after a commit: the committed
                # document now holds what the epilogue left.
                out.update(rollback_exactness(problems))
        if capture:
            image, note = self._capture(capture, capture.get("framing"), txn)
            if image is not None:
                out["images"] = [image]
            else:
                out["captureNote"] = note
        if capture:
            out.update(gltf.captured(self.adapter, capture, txn))
        return out

    def _epilogue(self, txn, epilogue, changes, isolated=True):
        """Runs the epilogue read-only. isolated, after a commit, wraps it in
        its own transaction rolled back at once; in a preview the caller's
        open transaction holds whatever it does, and the caller's rollback
        undoes it (opening another would commit the preview's)."""
        code = epilogue.get("code")
        if not isinstance(code, str) or not code:
            return {"error": wire_error("InvalidEpilogue", "epilogue.code must be a non-empty string")}
        digest = hashlib.sha256(code.encode("utf-8")).hexdigest()
        want = str(epilogue.get("contentHash") or "").lower()
        if want and want != digest:
            return {"contentHash": digest,
                    "error": wire_error("ContentHashMismatch",
                                        "epilogue bytes hash to %s but were stamped %s; not run" % (digest, want))}
        namespace = self._namespace(self.adapter.globals(), lambda: changes)
        problems = []
        if not isolated:
            stdout, error = self._run(code, executor.EPILOGUE_FILENAME, namespace, executor.DEFAULT_TIMEOUT_MS)
        else:
            # The epilogue is read-only: whatever it did is undone.
            with txn.isolated() as problems:
                stdout, error = self._run(code, executor.EPILOGUE_FILENAME, namespace, executor.DEFAULT_TIMEOUT_MS)
            if problems:
                # The committed document now holds what the epilogue left;
                # the answer must not read as a clean commit.
                error = error or wire_error("RollbackFailed", "the epilogue changed the document")
                error["message"] += "; rollback was not exact: %s" % "; ".join(problems)
        stdout, report = extract_report(stdout)
        out = {"stdout": stdout, "contentHash": digest}
        if isolated and problems:
            out["rollbackProblems"] = problems
        if report is not None:
            out["report"] = report
        if error is not None:
            out["error"] = error
        return out

    def _capture(self, request, framing=None, txn=None):
        """Renders the view a capture or export-view request names, at its
        image rule; answers (image, None) or (None, why no image). With
        framing rules and the transaction that committed, the adapter frames
        what the transaction changed."""
        view = str(request.get("view") or "isometric")
        rule = imagefit.rule_from_request(request)
        return self.adapter.capture(view, rule, framing if txn is not None else None, txn)

    def export_view(self, body: Dict[str, Any]) -> Dict[str, Any]:
        started = time.monotonic()
        self._new_document(body)
        self.adapter.serve()
        image, _ = self._capture(body)
        return {"committed": False, "stdout": "", "images": [image],
                "documentRevision": self.adapter.revision(),
                "durationMs": int((time.monotonic() - started) * 1000)}

    def export_model(self, body: Dict[str, Any]) -> Dict[str, Any]:
        self.adapter.serve()
        out = gltf.export(self.adapter, body)
        out["documentRevision"] = self.adapter.revision()
        return out
