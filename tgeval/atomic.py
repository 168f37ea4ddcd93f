"""Atomic file writes: a reader sees the old file or the complete new one, never a partial one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union

__all__ = ["write_atomic"]


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
