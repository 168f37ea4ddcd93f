"""The bytes of an event file as text, as every reader sees them.

A file that starts with the gzip magic bytes is decompressed, whatever its name; the text is UTF-8
with or without a byte-order mark, and LF, CRLF and CR line ends all become LF. The exact path reads
the whole text (:func:`read_text`), the fast path its first bytes (:func:`head_text`) and then blocks
of whole lines (:func:`blocks`). Within :func:`pinned`, they read bytes read once instead of the file.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from contextlib import contextmanager
from contextvars import ContextVar
from typing import BinaryIO, Iterator, Optional

from tgeval.core import progress
from tgeval.core.atomic import PathLike, check_input_file
from tgeval.errors import DataFormatError


#: the first bytes the fast path parses exactly (header, column names, column count)
HEAD_BYTES = 1 << 16
#: the size of the fast path's blocks (whole lines)
BLOCK_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"


def check_event_file(path: PathLike) -> None:
    """Raise :class:`~tgeval.errors.InputPathError` naming ``path`` and the fix when the event file does not exist
    or is a folder (:func:`~tgeval.core.atomic.check_input_file`), before any reader opens it."""
    check_input_file(path, what="event file")


#: the file whose bytes :func:`pinned` serves, those bytes, and the reads served from them
_PINNED: ContextVar[Optional[tuple[str, bytes, list[str]]]] = ContextVar("pinned", default=None)


@contextmanager
def pinned(path: PathLike, raw: bytes) -> Iterator[list[str]]:
    """Serve ``raw`` as the bytes of the file ``path`` to every read of this module in the block (the readers of
    :mod:`tgeval.data.io` read through them), so that they parse the very bytes their caller read and hashed
    (the cache, :func:`~tgeval.data.io.read_events`), not a file changed since; yields the list of the reads
    served, empty if the reader read the file otherwise (a reader of one's own)."""
    served: list[str] = []
    token = _PINNED.set((os.path.abspath(path), raw, served))
    try:
        yield served
    finally:
        _PINNED.reset(token)


def _pinned_bytes(path: PathLike, read: str) -> Optional[bytes]:
    """The bytes :func:`pinned` serves for ``path`` (counting the ``read``), or ``None``: read the file."""
    pin = _PINNED.get()
    if pin is None or pin[0] != os.path.abspath(path):
        return None
    pin[2].append(read)
    return pin[1]


def is_gzip(start: bytes) -> bool:
    """Whether bytes that start a file are gzip's magic bytes."""
    return start[:2] == _GZIP_MAGIC


def open_bytes(path: PathLike) -> BinaryIO:
    """The file's bytes, decompressed when it starts with the gzip magic bytes."""
    raw = _pinned_bytes(path, "open_bytes")
    if raw is not None:
        return gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb") if is_gzip(raw) else io.BytesIO(raw)
    with open(path, "rb") as handle:
        gzipped = is_gzip(handle.read(2))
    return gzip.open(path, "rb") if gzipped else open(path, "rb")  # type: ignore[return-value]


def read_text(path: PathLike) -> str:
    """The whole file as text (module rules).

    Raises:
        DataFormatError: gzip bytes that do not decompress, or bytes that are not UTF-8.
    """
    name = os.fspath(path)
    raw = _pinned_bytes(path, "read_text")
    if raw is None:
        with open(name, "rb") as handle:
            raw = handle.read()
    if is_gzip(raw):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFormatError(
                f"{name}: starts with the gzip magic bytes but cannot be decompressed ({exc}). "
                f"Re-download the file or decompress it by hand to find the damage."
            ) from exc
    return decode(name, raw)


#: the first bytes of files that are no UTF-8 text: what they are, and how to make text of them
_SIGNATURES = (
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2-compressed", "decompress it first: `bunzip2 -k FILE`"),
    (re.compile(rb"\xfd7zXZ\x00"), "xz-compressed", "decompress it first: `unxz -k FILE`"),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd-compressed", "decompress it first: `unzstd FILE`"),
    (re.compile(rb"PK\x03\x04"), "a zip archive", "extract the event file first: `unzip FILE`"),
    (re.compile(rb"7z\xbc\xaf\x27\x1c"), "a 7-Zip archive", "extract the event file first: `7z x FILE`"),
    (re.compile(rb"\xff\xfe\x00\x00|\x00\x00\xfe\xff"), "UTF-32 text",
     "re-encode it as UTF-8: `iconv -f utf-32 -t utf-8 FILE > FILE.utf8`"),
    (re.compile(rb"\xff\xfe|\xfe\xff"), "UTF-16 text",
     "re-encode it as UTF-8: `iconv -f utf-16 -t utf-8 FILE > FILE.utf8`"),
    (re.compile(rb"[^\x00]\x00[^\x00]\x00"), "UTF-16 text without a byte-order mark (little-endian)",
     "re-encode it as UTF-8: `iconv -f utf-16le -t utf-8 FILE > FILE.utf8`"),
    (re.compile(rb"\x00[^\x00]\x00[^\x00]"), "UTF-16 text without a byte-order mark (big-endian)",
     "re-encode it as UTF-8: `iconv -f utf-16be -t utf-8 FILE > FILE.utf8`"),
)


def decode(name: str, raw: bytes) -> str:
    """UTF-8 bytes (optional BOM) of the file ``name`` as text with LF line ends.

    Raises:
        DataFormatError: bytes that are no UTF-8 text: a compressed file or an archive (other than gzip, which is
            read), UTF-16 or UTF-32 text, NUL bytes, bytes of another encoding (each named, with its fix), or a
            byte-order mark inside the text (files joined).
    """
    for signature, what, fix in _SIGNATURES:
        if signature.match(raw):
            raise DataFormatError(f"{name} is {what}, not UTF-8 text: {fix.replace('FILE', name)}, and give that "
                                  f"file.")
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise DataFormatError(f"{name}, line {line}: holds NUL bytes, which UTF-8 text never does: a binary file, or "
                              f"text in UTF-16 / UTF-32. Give the event file as UTF-8 text (e.g. `iconv -f utf-16 -t "
                              f"utf-8` for UTF-16).")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(
            f"{name}, line {line}: expected UTF-8 text, found the byte {raw[exc.start:exc.start + 1]!r}. "
            f"Re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8` for Latin-1 text)."
        ) from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\ufeff" in text:
        line = text[: text.index("\ufeff")].count("\n") + 1
        raise DataFormatError(f"{name}, line {line}: holds a byte-order mark (U+FEFF) inside the text, where files "
                              f"were joined (e.g. `cat a.csv b.csv`, the second with its own mark). Remove it, e.g. "
                              f"`sed -i 's/\\xEF\\xBB\\xBF//g' FILE`.")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def head_text(path: PathLike) -> str:
    """The file's first whole lines, at most :data:`HEAD_BYTES` bytes of them, as text."""
    with open_bytes(path) as handle:
        raw = handle.read(HEAD_BYTES + 1)
    if len(raw) > HEAD_BYTES:
        raw = raw[: raw.rfind(b"\n") + 1]
    return decode(os.fspath(path), raw)


def first_line(path: PathLike) -> str:
    """The first line of the file, without reading the rest (undecodable bytes replaced)."""
    with io.TextIOWrapper(open_bytes(path), encoding="utf-8-sig", errors="replace", newline="") as handle:
        return handle.readline().rstrip("\r\n")


def blocks(path: PathLike) -> Iterator[bytes]:
    """The file in blocks of whole lines (about :data:`BLOCK_BYTES`; the last may lack its line end),
    without the BOM, CRLF and CR made LF (as :func:`read_text`); the bytes read so far of the file go to
    :func:`tgeval.core.progress.report`."""
    rest, first = b"", True
    stored = _pinned_bytes(path, "blocks")
    size = os.path.getsize(path) if stored is None else len(stored)
    with open_bytes(path) as handle:
        raw = getattr(handle, "fileobj", handle)  # a gzip file's compressed bytes, whose size is known
        while True:
            chunk = handle.read(BLOCK_BYTES)
            progress.report(raw.tell(), size)
            if first:
                chunk, first = chunk.removeprefix(_BOM), False
            block = rest + chunk
            cut = block.rfind(b"\n") + 1 if chunk else len(block)  # a CR of a CRLF stays before its LF
            rest = block[cut:]
            if cut:
                lines = block[:cut]
                yield lines.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in lines else lines
            if not chunk:
                return
