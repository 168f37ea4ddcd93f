"""Atomic file writes (a reader sees the old file or the complete new one, never a partial one),
and checks that an output can be written, made before the work that produces it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union

from tgeval.errors import OutputPathError

__all__ = ["write_atomic", "check_writable"]


def write_atomic(path: Union[str, os.PathLike], content: Union[str, bytes]) -> None:
    """Write ``content`` (text as UTF-8, or bytes) to ``path`` via a temporary file in the same
    folder, ``fsync`` and ``os.replace``; on any failure the old file is left untouched."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = content.encode("utf-8") if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_writable(path: Union[str, os.PathLike], *, folder: bool = False, what: str = "output") -> None:
    """Raise :class:`~tgeval.errors.OutputPathError` unless ``path`` can be written: a file path
    (``folder=False``) must not be a folder, a folder path must not be a file, and the nearest
    existing folder on the way must accept a new file (probed with a temporary file that is
    removed at once, so nothing is left behind, and root's permission bypass does not hide a
    read-only file system)."""
    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise OutputPathError(f"{what} {str(target)!r} is a file, but a folder is expected: choose a folder path.")
    if not folder and target.is_dir():
        raise OutputPathError(f"{what} {str(target)!r} is a folder, but a file is expected: give a file name "
                              f"inside it, e.g. {str(target / 'result.json')!r}.")
    existing = target if folder and target.is_dir() else target.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"{what} {str(target)!r} cannot be created: {str(existing)!r} is a file, not a folder.")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".tgeval-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputPathError(f"{what} {str(target)!r} cannot be written: {str(existing)!r} refuses new files "
                              f"({exc.strerror}). Choose a writable location.") from None
