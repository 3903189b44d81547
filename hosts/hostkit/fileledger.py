"""The call ledger kept with the person's file.

A runtime that saves every commit to a file (NEXUS_HOST_SAVE_TO) keeps its
ledger in a private folder beside that file, so a runtime started again on
the file (its launcher restarted) still knows the calls the file holds. A
call counts only while the document the runtime opened holds its effect:

  * every save of the file is recorded (its generation and sha256) before
    the file is replaced, so the file's content names the generation it
    holds, wherever a kill lands;
  * a runtime started on the file keeps the calls up to that generation and
    goes on from it; a file no recorded save wrote (changed outside Nexus,
    or new) starts an empty ledger;
  * a runtime restarted on a checkpoint keeps the calls up to the
    checkpoint's generation, and first brings the file to the checkpoint
    when the file holds less (a kill before its save) or more (a save the
    checkpoint missed) than that.
"""

from __future__ import annotations

from typing import Callable, Optional, TYPE_CHECKING

import hashlib
import os
import sys

from hostkit.checkpoints import checkpoint_generation
from hostkit.ledger import CallLedger

if TYPE_CHECKING:
    from hostkit.checkpoints import Checkpoints


def ledger_dir(save_to: str) -> str:
    """The ledger folder of the person's file: .<file name>.nexus-ledger
    beside it."""
    folder, name = os.path.split(os.path.abspath(save_to))
    return os.path.join(folder, ".%s.nexus-ledger" % name)


def file_sha256(path: str) -> Optional[str]:
    """The sha256 of the file at path, or None when there is none."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def open_file_ledger(checkpoints: Checkpoints, opened: Optional[str], save_to: str,
                     resave: Callable[[CallLedger, int], None]) -> Optional[CallLedger]:
    """Answers the ledger kept with save_to, as the document the runtime
    opened holds it, or None when its folder cannot be written (the ledger
    then lives with the checkpoints, as without a file). Started on the file
    itself, checkpoints go on from the generation the file holds.
    resave(ledger, generation) saves the served document to the file,
    recording the save in ledger; it runs on a restart from a checkpoint the
    file disagrees with."""
    try:
        return _open(checkpoints, opened, save_to, resave)
    except OSError as exc:
        sys.__stderr__.write("nexus runtime: keep the call ledger beside %s: %s; it is kept with the "
                             "checkpoints instead, and a restarted launcher starts a new one\n" % (save_to, exc))
        return None


def _open(checkpoints, opened, save_to, resave):
    ledger = CallLedger(ledger_dir(save_to))
    started_on = checkpoint_generation(checkpoints.dir, opened)
    held = ledger.saved_generation(file_sha256(save_to))
    if started_on > 0:
        if (held is not None and held > started_on) or ledger.commits_between(held, started_on):
            resave(ledger, started_on)
        ledger.forget_after(started_on)
        return ledger
    same = bool(opened) and os.path.abspath(opened) == os.path.abspath(save_to)
    if not same or held is None:
        # A document the ledger has no save of: none of its calls count.
        ledger.forget_after(-1)
        held = 0
    else:
        ledger.forget_after(held)
    checkpoints.generation = held
    return ledger
