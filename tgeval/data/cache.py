"""A binary cache of parsed event files, so that a repeated run skips parsing the text.

An entry is one uncompressed ``.npz`` in the cache folder holding the validated arrays and a JSON
record of what the reader reported. It is keyed by what it holds: the sha256 of the very bytes the arrays
were parsed from (:func:`~tgeval.data.io.read_events` reads the file once, hashes those bytes and parses them,
so a file that changes while it is read never files one version's arrays under the other's sha256), the
reader's options and :data:`CACHE_VERSION`. The entry's name is the sha256 of that key, and the key is stored
inside it and compared on every load with the file's sha256 then, so an edited file or other options never
meet a stale entry.
Entries are written atomically (:func:`tgeval.core.atomic.write_atomic`), so a reader sees a complete
entry or none. An entry that cannot be read, fails the zip checksums (CRC-32 of every array) or
holds another key is rebuilt, with a :class:`~tgeval.errors.CacheWarning`. A folder that refuses the new entry
gives a :class:`~tgeval.errors.CacheWarning` too, and the result read from the text is returned: the cache only
saves time, so a read-only cache (shared, filled by someone else) still serves its hits.

The folder is the reader's ``cache_dir`` argument, else ``$TGEVAL_CACHE_DIR`` when set and not
empty; without either nothing is cached.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar, Union

import numpy as np

from tgeval.core.atomic import write_atomic
from tgeval.errors import CacheWarning

__all__ = ["CACHE_ENV", "CACHE_VERSION", "cache_folder", "entry_key", "load_entry", "store_entry"]

#: environment variable naming the default cache folder
CACHE_ENV = "TGEVAL_CACHE_DIR"
#: raised whenever the arrays or the record stored in an entry change meaning; older entries then miss
#: (3: ids, times and labels with ``_`` digit separators are no numbers; 2: keyed by the bytes parsed, 1's could
#: hold the arrays of a file changed while it was read)
CACHE_VERSION = 3

T = TypeVar("T")
_KEY = "__key__"
_RECORD = "__record__"


def cache_folder(cache_dir: Optional[Union[str, "os.PathLike[str]"]]) -> Optional[Path]:
    """The cache folder: ``cache_dir``, else ``$TGEVAL_CACHE_DIR`` when set and not empty, else ``None`` (off)."""
    chosen = cache_dir if cache_dir is not None else os.environ.get(CACHE_ENV) or None
    return None if chosen is None else Path(chosen)


def entry_key(sha256: str, options: dict[str, Any]) -> str:
    """The key of the file bytes of ``sha256`` (:func:`~tgeval.core.atomic.sha256_of`) read with ``options``
    (JSON-able): that sha256, the options and the cache version."""
    return json.dumps({"version": CACHE_VERSION, "sha256": sha256, "options": options}, sort_keys=True, default=str)


def _entry_path(folder: Path, key: str) -> Path:
    return folder / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()}.npz"


def load_entry(folder: Path, key: str, decode: Callable[[dict[str, np.ndarray], dict[str, Any]], T]) -> Optional[T]:
    """``decode(arrays, record)`` of the entry stored under ``key``, or ``None`` when there is none. An entry that
    is unreadable, holds another key or that ``decode`` refuses (``ValueError``, ``TypeError``, ``KeyError``) is
    left to be overwritten, with a :class:`~tgeval.errors.CacheWarning`."""
    path = _entry_path(folder, key)
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as entry:
            arrays = {name: entry[name] for name in entry.files}  # reads every member: checks its CRC-32
        if arrays.pop(_KEY).tobytes().decode("utf-8") != key:
            raise ValueError("it holds another file or other options")
        return decode(arrays, json.loads(arrays.pop(_RECORD).tobytes().decode("utf-8")))
    except (OSError, ValueError, TypeError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        warnings.warn(f"cache entry {str(path)!r} cannot be used ({type(exc).__name__}: {exc}); reading the file "
                      f"again and rewriting the entry.", CacheWarning, stacklevel=3)
        return None


def store_entry(folder: Path, key: str, arrays: dict[str, np.ndarray], record: dict[str, Any]) -> bool:
    """Write the entry for ``key`` atomically; whether it was written (else a :class:`~tgeval.errors.CacheWarning`)."""
    payload = io.BytesIO()
    encoded = {_KEY: np.frombuffer(key.encode("utf-8"), dtype=np.uint8),
               _RECORD: np.frombuffer(json.dumps(record).encode("utf-8"), dtype=np.uint8)}
    np.savez(payload, **arrays, **encoded)
    path = _entry_path(folder, key)
    try:
        write_atomic(path, payload.getvalue())
    except OSError as exc:
        warnings.warn(f"cannot write the cache entry {str(path)!r} ({exc.strerror or exc}); the file was read "
                      f"from its text. Make {str(folder)!r} writable, or choose another cache folder "
                      f"(cache_dir, ${CACHE_ENV}).", CacheWarning, stacklevel=3)
        return False
    return True
