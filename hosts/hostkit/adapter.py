"""The interface a host application implements to run on the kit.

The kit (runner.Runner) holds the three modes, the ledger, checkpoints,
timeouts and the wire format; an adapter holds what only its application
knows: the document it serves and its revision, how a transaction opens,
commits and rolls back exactly, which elements a script changed, how the
document is saved as a checkpoint, and how a view is rendered. Every method
runs on the main thread (the application's API thread), one call at a time.

A change snapshot (Transaction.changes) is a dict of element names:
{"added", "modified", "deleted", "changed" (added + modified),
"deleted_info" (name -> {"label", "typeId", ...} of what was deleted),
"properties" (name -> the modified element's changed properties)}.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Dict, List, Optional, TYPE_CHECKING, Tuple

import collections

if TYPE_CHECKING:
    from hostkit.imagefit import ImageRule

# A checkpoint of the served document: name is the file name it takes in
# its checkpoint folder, file_name the document's own file (what the
# launcher gives back after a restart), save(path) writes a copy to path.
DocumentCopy = collections.namedtuple("DocumentCopy", "name file_name save")


def no_changes() -> Dict[str, Any]:
    """The change snapshot of a run that changed nothing."""
    return {"added": [], "modified": [], "deleted": [], "changed": [], "deleted_info": {}, "properties": {}}


class Transaction:
    """One script's run on the served document. Adapter.begin answers it
    with the application's transaction open and change tracking on."""

    def globals(self) -> Dict[str, Any]:
        """The names the script sees besides nexus_changes (the application's
        modules, the document)."""
        raise NotImplementedError

    def changes(self) -> Dict[str, Any]:
        """The change snapshot of what the script changed so far."""
        raise NotImplementedError

    def finish_script(self, error: Optional[Dict[str, Any]], writes: bool) -> Optional[Dict[str, Any]]:
        """Runs right after the script, the transaction still open; answers
        the error the run ends with (error, or a refusal of the application's
        own such as a closed or switched document). writes is whether the run
        may change the document (a transaction or a preview): then the
        application brings its derived data up to date here (FreeCAD's
        recompute), so a failure there rolls back like the script's own."""
        raise NotImplementedError

    def stop_tracking(self) -> None:
        """Ends change tracking; called once, whatever the script did."""
        raise NotImplementedError

    def commit(self) -> Optional[Dict[str, Any]]:
        """Commits the transaction; answers None, or the error saying why the
        commit failed."""
        raise NotImplementedError

    def closed(self) -> bool:
        """Whether the script closed the served document."""
        raise NotImplementedError

    def reopen(self, error: Dict[str, Any]) -> List[str]:
        """Brings back the document the script closed as it was before the
        script, saying so in error's message; answers what still differs."""
        raise NotImplementedError

    def changed(self) -> bool:
        """Whether the document changed since begin (read-only runs are
        refused when it did)."""
        raise NotImplementedError

    def rollback(self) -> List[str]:
        """Takes everything since begin back; answers what still differs from
        the document before the script (empty: exactly as before, its
        revision included)."""
        raise NotImplementedError

    def isolated(self) -> ContextManager[List[str]]:
        """A context manager for an epilogue run after the commit: it opens a
        transaction of its own and rolls it back on leaving, filling the list
        it yields with what that rollback could not restore."""
        raise NotImplementedError

    def result_fields(self, rolled_back: bool) -> Dict[str, Any]:
        """The result's fields only the application knows, called once when
        the result is put together: rollbackVerified, what a rollback's
        verification covered when the adapter compared less than the whole
        document (e.g. "verified for the 3 elements the transaction
        touched"), and hostNotes, what the application did on its own while
        the script ran and the adapter answered for it (a dialog dismissed),
        one sentence each. Empty when there is nothing to say."""
        return {}


class Adapter:
    """A host application. host_app is its id in /v1/info ("freecad"),
    runtime_version the add-in's version, source_dir the adapter package's
    folder (its frames are left out of a script's traceback)."""

    host_app = ""
    runtime_version = ""
    source_dir = ""

    def host_version(self) -> str:
        """The application's version, e.g. "1.0.0"."""
        raise NotImplementedError

    def serve(self) -> None:
        """Makes sure a document is served (opening a new empty one when the
        person closed it); called before every request that needs one."""
        raise NotImplementedError

    def new_document(self) -> None:
        """Serves a new, empty document from now on; the one served before
        stays open (and saved where it was). Raises NotImplementedError on
        a host that cannot."""
        raise NotImplementedError

    def document_label(self) -> str:
        """The open document as the person knows it (its file, or its name)."""
        raise NotImplementedError

    def revision(self) -> str:
        """An opaque token of the served document's state: any change, by
        whoever, gives a new one; a run that left the document exactly as
        before leaves it."""
        raise NotImplementedError

    def globals(self) -> Dict[str, Any]:
        """The names an epilogue sees besides nexus_changes."""
        raise NotImplementedError

    def checkpoint_copy(self) -> Optional[DocumentCopy]:
        """The served document as a DocumentCopy, or None when none is served."""
        raise NotImplementedError

    def save_document(self, path: str, before_replace: Optional[Callable[[str], None]] = None) -> None:
        """Saves the served document to the person's file at path, whole or
        not at all (saving.save_atomically, which runs before_replace),
        keeping backups as the application does; raises when it could not."""
        raise NotImplementedError

    def begin(self, transaction_name: str, checkpoint: Callable[[], str]) -> Transaction:
        """Opens a Transaction named transaction_name on the served document.
        checkpoint() saves one and answers its path ("" when it failed): the
        adapter takes one before the script when it can reload it for an
        exact rollback."""
        raise NotImplementedError

    def export_model(self, ids: Optional[List[str]], limit: int,
                     transaction: Optional[Transaction] = None) -> Tuple[bytes, List[str]]:
        """The served document's elements (or those named in ids, a list of
        element ids; None for all) as binary glTF of at most limit bytes
        (hostkit.gltf.Builder); answers (bytes, the node names in order).
        With the transaction of a preview still open, the state it holds.
        Raises RequestError(400) naming an id the document lacks, and
        gltf.ModelTooLarge past the limit."""
        raise NotImplementedError

    def capture(self, view: str, rule: ImageRule, framing: Optional[Dict[str, Any]] = None,
                transaction: Optional[Transaction] = None) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        """Renders view ("plan", "isometric" or "front") within rule (an
        imagefit.ImageRule); answers (wire.png_image(...), None) or (None,
        why there is no image). With framing rules and the transaction that
        committed, it frames what the transaction changed."""
        raise NotImplementedError
