"""Saving a commit to the person's file: the document is written to a
temporary file in the file's own folder and renamed over it, so the file is
at every moment either the old document or the new one, never half of
either; the previous versions are kept as numbered backups (file1 the
newest) the way the application keeps them."""

from __future__ import annotations

from typing import Callable, Dict, Optional

import os
import secrets


def save_atomically(save: Callable[[str], object], target: str, backups: int,
                    before_replace: Optional[Callable[[str], None]] = None) -> None:
    """Writes the document to target through save(path); keeps backups
    (a number, 0 for none) previous versions as target1..targetN.
    before_replace(tmp) runs once the new version is written in full, just
    before it replaces target (the call ledger records the save there).
    Raises OSError (or what save raised) with target as it was."""
    folder = os.path.dirname(os.path.abspath(target))
    # The temporary file keeps the target's extension: an application may
    # name what it writes after it (FreeCAD's saveCopy does).
    stem, ext = os.path.splitext(os.path.basename(target))
    tmp = os.path.join(folder, ".%s.nexus-%s%s" % (stem, secrets.token_hex(4), ext))
    try:
        try:
            save(tmp)
        except Exception as exc:
            why = "the folder %s is read-only" % folder if not os.access(folder, os.W_OK) else _reason(exc)
            raise OSError("could not write %s: %s" % (target, why)) from exc
        if not os.path.isfile(tmp):
            raise OSError("the document was not written to %s" % tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        if before_replace is not None:
            try:
                before_replace(tmp)
            except OSError as exc:
                raise OSError("could not write %s: %s" % (target, exc)) from exc
        if backups > 0 and os.path.exists(target):
            for n in range(backups, 1, -1):
                older = "%s%d" % (target, n - 1)
                if os.path.exists(older):
                    os.replace(older, "%s%d" % (target, n))
            # A hard link keeps target in place until the rename below
            # replaces it; a copy where links are not supported.
            backup = target + "1"
            if os.path.exists(backup):
                os.remove(backup)
            try:
                os.link(target, backup)
            except OSError:
                with open(target, "rb") as src, open(backup, "wb") as dst:
                    dst.write(src.read())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _reason(exc):
    """What went wrong, as text; an application's exception may carry it in
    a dict (FreeCAD's carry "swhat")."""
    arg = exc.args[0] if exc.args else None
    if isinstance(arg, dict) and arg.get("swhat"):
        return str(arg["swhat"])
    return str(exc) or type(exc).__name__


def outcome(target: str, err: Optional[BaseException] = None) -> Dict[str, str]:
    """The result's save field for target: saved, or failed with err."""
    if err is None:
        return {"outcome": "SAVE_OUTCOME_SAVED", "path": target}
    return {"outcome": "SAVE_OUTCOME_FAILED", "path": target, "error": str(err) or type(err).__name__}
