"""Checkpoints: the served document saved before every script and after
every commit. A restarted runtime starts from the newest; a rollback that
the host's undo cannot make exact reloads the one saved before the script.

Each checkpoint is a new generation in a folder of its own
(<dir>/<generation>/<file>), so a kill while saving never spoils the last
good one; the launcher learns each path over the status pipe.
"""

from __future__ import annotations

from typing import Callable, Optional, TYPE_CHECKING

import os
import shutil
import sys
import tempfile

if TYPE_CHECKING:
    from hostkit.adapter import DocumentCopy
    from hostkit.process import StatusPipe

# Checkpoints kept besides the newest, for a launcher that restarts from the
# one before its last notice.
CHECKPOINTS_KEPT = 3


def checkpoint_generation(checkpoint_dir: Optional[str], opened: Optional[str]) -> int:
    """Answers the generation of the checkpoint the runtime was started on
    (<checkpoint_dir>/<generation>/<file>), or 0 for any other start."""
    if not opened or not checkpoint_dir:
        return 0
    folder = os.path.dirname(os.path.abspath(opened))
    if os.path.dirname(folder) != os.path.abspath(checkpoint_dir) or not os.path.basename(folder).isdigit():
        return 0
    return int(os.path.basename(folder))


class Checkpoints:
    """The generations of the served document in directory (a new temporary
    folder when none is given: without a launcher the checkpoints still
    serve exact rollback)."""

    def __init__(self, directory: Optional[str], opened: Optional[str], status: StatusPipe) -> None:
        self.dir = directory or tempfile.mkdtemp(prefix="nexus-checkpoint-")
        self.status = status
        # A runtime restarted on checkpoint <dir>/<generation>/<file> goes on
        # from that generation.
        self.generation = checkpoint_generation(self.dir, opened)

    def save(self, copy: Optional[DocumentCopy], before_save: Optional[Callable[[int], None]] = None) -> str:
        """Saves copy (an adapter.DocumentCopy, or None when there is no
        served document) as the next generation; answers its path, or ""
        when it failed. before_save(generation) runs first: a call's ledger
        entry is written with the generation that will hold its effect."""
        if copy is None:
            return ""
        self.generation += 1
        folder = os.path.join(self.dir, str(self.generation))
        path = os.path.join(folder, copy.name)
        try:
            # A call whose ledger entry could not be written gets no
            # checkpoint either: a restart then forgets its effect with it.
            if before_save is not None:
                before_save(self.generation)
            os.makedirs(folder, exist_ok=True)
            copy.save(path)
        except Exception as exc:
            sys.__stderr__.write("nexus runtime: save checkpoint %s: %s\n" % (path, exc))
            return ""
        self.status.say("checkpoint %s\t%s" % (path, copy.file_name))
        for entry in os.listdir(self.dir):
            if entry.isdigit() and int(entry) <= self.generation - CHECKPOINTS_KEPT:
                shutil.rmtree(os.path.join(self.dir, entry), ignore_errors=True)
        return path
