"""Readers that turn event files into validated :class:`~torch_geometric.data.TemporalData`.

Every reader returns ``(data, info)``:

* ``data`` passes :func:`tgeval.data.validation.validate`: ``src``, ``dst`` int64 ``[E]``
  with ids ``>= 0``; ``t`` int64 ``[E]`` when every timestamp is a whole number, else
  float64 ``[E]``; non-decreasing ``t``; optional ``msg`` float32 ``[E, d]`` (event
  features) and ``y`` int64 ``[E]`` (event labels).
* ``info`` is a :class:`ReadInfo` that records what the reader did: lines read, header
  skipped, comment and blank lines, columns used and ignored, whether events were sorted,
  and the id mapping when ids were remapped.

Rules shared by all readers (SPEC §1, §12):

* UTF-8 with or without a byte-order mark; LF, CRLF or CR line ends; gzip-compressed
  files (detected by their magic bytes, whatever the file name) are decompressed.
* Blank lines are skipped and counted; comment lines only where the format has them.
* A malformed line raises :class:`~tgeval.errors.DataFormatError` naming the file, the
  1-based line number, what was found and what was expected. No row is ever dropped.
* Events must be time-sorted in the file, else :class:`~tgeval.errors.TemporalDataError`
  is raised unless ``sort=True`` (a stable sort: events that share a timestamp keep
  their file order, which carries no meaning, SPEC §2).
* ``remap=True`` renumbers ids to ``0..n-1`` by first appearance in time order (event
  ``i`` contributes ``src[i]`` then ``dst[i]``), and stores the original id of each new
  id in ``info.node_ids`` (int64 ``[n]``), or ``info.node_names`` for textual ids.
* Ids kept as written must be dense: models and catalogs hold ``largest id + 1`` node slots,
  so ids above :data:`SPARSE_ID_SLACK` (2^20) with fewer than one distinct id in
  :data:`SPARSE_ID_FACTOR` (16) slots raise :class:`~tgeval.errors.DataFormatError` at once,
  suggesting ``remap=True`` (ids near 2^40 would otherwise make a model allocate terabytes).
* ``bipartite=True`` keeps sources and destinations in disjoint id ranges: with
  ``remap`` (the default when bipartite) sources get ``[0, n_src)`` and destinations
  ``[n_src, n_src + n_dst)``, each side numbered by first appearance; without remap the
  file's ids must already satisfy ``max(src) < min(dst)``. In both cases
  ``max(src) < info.dst_offset <= min(dst)``: ``n_src`` with remap, ``max(src) + 1``
  without.
* ``directed`` is recorded in ``info`` for pair statistics (SPEC §3); the reader never
  reorders the endpoints of an event.

Parsing needs only numpy, on two paths that give the same arrays, ``info`` and errors:

* the fast path streams the file in blocks of whole lines (1 MiB) and parses each with numpy's
  C parser (:func:`numpy.loadtxt`) straight into the final dtypes (int64 ids, times and labels,
  float32 features); peak memory is about twice the final arrays. It takes well-formed numeric
  files (printable ASCII data, no quotes, whole-line comments, numbers that numpy and Python read
  alike) and gives up at the first doubt: an error, text ids, ``time_format``, whitespace-only
  lines in delimited files, fractional times longer than 15 characters (exact decimals are then
  needed to count merged times), ... Plain decimals (at most 15 digits, no exponent) are read as
  integers and divided by their power of ten, exactly as Python's ``float``; other fractions go
  through numpy's slower correctly rounded parser. On 3M events a SNAP file of integers reads in
  about 1.8x the time of pandas' C reader, CSV / JODIE files with decimal columns in 3-5x
  (``benchmarks/bench_read.py``);
* the exact path then reads the file as text, field by field, accepts what Python's ``int`` and
  ``float`` accept and names the file, line and fix of every error.

:func:`read_events` with ``cache_dir`` (or ``$TGEVAL_CACHE_DIR``) caches the validated arrays
(:mod:`tgeval.data.cache`).
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import warnings
import zlib
from dataclasses import dataclass, fields as dataclass_fields, replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from io import StringIO
from typing import Any, BinaryIO, Callable, Iterator, Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval import progress
from tgeval.choices import DUPLICATE_RULES
from tgeval.data import cache, formats
from tgeval.data.validation import validate
from tgeval.errors import DataFormatError, TemporalDataError

__all__ = [
    "ReadInfo",
    "read_events",
    "read_dgb",
    "read_snap",
    "read_sociopatterns",
    "read_jodie",
    "read_tgb",
    "read_csv_events",
]

PathLike = Union[str, "os.PathLike[str]"]
Column = Union[str, int]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_EXACT_FLOAT_INT = 2**53


@dataclass(frozen=True, eq=False)
class ReadInfo:
    """What a reader did with a file.

    Attributes:
        path (str): the file read.
        format (str): reader used (``"dgb"``, ``"snap"``, ...).
        num_events (int): events read, one per data line.
        num_lines (int): physical lines in the file (a final line end adds none).
        header (tuple of str, optional): fields of the header line that was skipped,
            ``None`` when the file has none.
        comment_lines (int): lines skipped as comments (``#`` / ``%`` for SNAP).
        blank_lines (int): empty or whitespace-only lines skipped.
        columns (dict): role -> column used: ``"src"``, ``"dst"``, ``"t"``, optional
            ``"y"``; names where the file has a header, else 0-based indices as text.
        msg_columns (tuple of str): columns stacked into ``msg``, in order.
        ignored_columns (tuple of str): columns present but not used.
        time_format (str, optional): strptime format used to parse textual timestamps
            into Unix seconds (UTC unless the format holds ``%z``).
        sorted_on_read (bool): whether ``sort=True`` had to reorder the events.
        remapped (bool): whether ids were renumbered.
        bipartite (bool): whether sources and destinations use disjoint id ranges.
        directed (bool): whether pairs are ordered; recorded for pair statistics.
        num_nodes (int): ``max(src, dst) + 1``, the size of the id space.
        num_sources (int): distinct source ids.
        num_destinations (int): distinct destination ids.
        dst_offset (int, optional): bipartite only: every source id is
            ``< dst_offset`` and every destination id is ``>= dst_offset``.
        node_ids (Tensor, optional): int64 ``[num_nodes]`` when remapped with integer
            ids: ``node_ids[new_id]`` is the id in the file. For bipartite data the two
            sides are separate id spaces, so the same file id may occur twice.
        node_names (tuple of str, optional): as ``node_ids`` for textual ids.
        num_duplicates (int): events equal in every field read (``src``, ``dst``, ``t``,
            ``msg``, ``y``) to an earlier event of the file: kept, or dropped by
            :func:`read_events` with ``duplicates="drop"`` (then not in ``num_events``).
        duplicates (str): ``"keep"`` or ``"drop"``.
        num_merged_times (int): distinct timestamps of the file (as exact decimals, or
            microseconds of textual times) that became equal when parsed to float64: their
            events now share a timestamp group. 0 for integer times.
        cache (str): ``"off"`` (no cache folder), ``"hit"`` (arrays loaded from the cache) or ``"miss"``
            (read from the text, and stored in the cache unless a :class:`~tgeval.errors.CacheWarning` said
            otherwise).
    """

    path: str
    format: str
    num_events: int
    num_lines: int
    header: Optional[tuple[str, ...]]
    comment_lines: int
    blank_lines: int
    columns: dict[str, str]
    msg_columns: tuple[str, ...]
    ignored_columns: tuple[str, ...]
    time_format: Optional[str]
    sorted_on_read: bool
    remapped: bool
    bipartite: bool
    directed: bool
    num_nodes: int
    num_sources: int
    num_destinations: int
    dst_offset: Optional[int]
    node_ids: Optional[Tensor]
    node_names: Optional[tuple[str, ...]]
    num_duplicates: int = 0
    duplicates: str = "keep"
    num_merged_times: int = 0
    cache: str = "off"




def _first_occurrences(data: TemporalData) -> Tensor:
    """bool ``[E]``: the event is the first in the file equal to it in every field read.

    ``t`` is sorted, so only events whose time equals a neighbour's can repeat. Those are grouped by
    ``(time group, src, dst)`` through one int64 key ``(g * N + src) * N + dst`` (``N = num_nodes``) when it
    fits, else by rows; only groups that repeat are compared on every field (``t``'s bits, ``msg``, ``y``) by a
    stable lexicographic sort, so wide features cost nothing when there are few repeats."""
    t = data.t.numpy()
    same = t[1:] == t[:-1]
    keep = torch.ones(t.size, dtype=torch.bool)
    candidates = np.flatnonzero(np.append(same, False) | np.insert(same, 0, False))
    if not candidates.size:
        return keep
    times = t[candidates]
    group = np.insert(np.cumsum(times[1:] != times[:-1]), 0, 0)
    del times
    src, dst = data.src.numpy(), data.dst.numpy()
    nodes = int(max(src.max(), dst.max())) + 1
    if (int(group[-1]) + 1) * nodes * nodes < 2**63:
        key = group  # (g * N + src) * N + dst, in place: peak memory stays a few arrays of the candidates
        key *= nodes
        key += src[candidates]
        key *= nodes
        key += dst[candidates]
        ordered = np.sort(key)
        repeats = ordered[1:][ordered[1:] == ordered[:-1]]  # sorted
        del ordered
        if not repeats.size:
            return keep
        repeated = repeats[np.searchsorted(repeats, key).clip(max=repeats.size - 1)] == key
        candidates, columns = candidates[repeated], [key[repeated, None]]
    else:
        columns = [np.stack([group, src[candidates], dst[candidates]], 1)]
    for key in ("t", "msg", "y"):
        if key in data:
            value = data[key].reshape(data.num_events, -1)[torch.from_numpy(candidates)]
            bits = value.view(torch.int32) if value.dtype == torch.float32 else value.view(torch.int64)
            columns.append(bits.to(torch.int64).numpy())
    rows = np.concatenate(columns, axis=1)
    order = np.lexsort(rows.T[::-1])  # stable: equal rows stay in file order, the first one leads
    ordered = rows[order]
    leads = np.insert(np.flatnonzero((ordered[1:] != ordered[:-1]).any(axis=1)) + 1, 0, 0)
    keep[torch.from_numpy(candidates)] = False
    keep[torch.from_numpy(candidates[order[leads]])] = True
    return keep


# --------------------------------------------------------------------------- text layer


@dataclass(frozen=True)
class _Table:
    """The data lines of a delimited file, checked to have ``num_cols`` fields each."""

    path: str
    header: Optional[tuple[str, ...]]
    header_line: Optional[int]
    names: tuple[str, ...]
    delimiter: Optional[str]
    quoted: bool
    lines: list[str]
    line_nos: list[int]
    num_lines: int
    comment_lines: int
    blank_lines: int

    @property
    def num_cols(self) -> int:
        return len(self.names)

    def fields(self, width: int) -> _Fields:
        """The first ``width`` fields of every line, split once."""
        d = self.delimiter
        if self.quoted:
            rows = csv.reader(self.lines, delimiter=d or ",", strict=True)
            tokens = [field for row in rows for field in row[:width]]
        elif width == self.num_cols:
            tokens = " ".join(self.lines).split() if d is None else d.join(self.lines).split(d)
        else:
            tokens = [field for line in self.lines for field in line.split(d, width)[:width]]
        return _Fields(self, tokens, width)


@dataclass(frozen=True)
class _Fields:
    """Row-major fields ``[num_rows * width]`` of the first ``width`` columns of a table."""

    table: _Table
    tokens: list[str]
    width: int

    def column(self, j: int) -> list[str]:
        return self.tokens[j :: self.width]

    def name(self, j: int) -> str:
        return self.table.names[j]

    def where(self, row: int) -> str:
        return f"{self.table.path}, line {self.table.line_nos[row]}"


def _read_text(path: PathLike) -> str:
    """Whole file as text: gzip detected by magic bytes, UTF-8 with optional BOM."""
    name = os.fspath(path)
    with open(name, "rb") as handle:
        raw = handle.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataFormatError(
                f"{name}: starts with the gzip magic bytes but cannot be decompressed ({exc}). "
                f"Re-download the file or decompress it by hand to find the damage."
            ) from exc
    return _decode(name, raw)


def _decode(name: str, raw: bytes) -> str:
    """UTF-8 bytes (optional BOM) as text with LF line ends."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(
            f"{name}, line {line}: expected UTF-8 text, found the byte {raw[exc.start:exc.start + 1]!r}. "
            f"Re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)."
        ) from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _separator_name(delimiter: Optional[str]) -> str:
    names = {None: "whitespace", "\t": "tab", ",": "comma", ";": "semicolon", " ": "space"}
    return names.get(delimiter, repr(delimiter))


def _field_counts(
    path: str, lines: list[str], line_nos: list[int], delimiter: Optional[str], quoted: bool
) -> list[int]:
    """Number of fields on each line; quoted fields (``"a,b"``) are parsed with :mod:`csv`."""
    if delimiter is None:
        return [len(line.split()) for line in lines]
    if not quoted:
        return [line.count(delimiter) + 1 for line in lines]
    counts: list[int] = []
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    for line, number in zip(lines, line_nos):
        try:
            counts.append(len(next(reader)))
        except csv.Error as exc:
            raise DataFormatError(
                f"{path}, line {number}: expected {_separator_name(delimiter)}-separated fields "
                f"with balanced double quotes, found {line!r} ({exc}). Fix the quoting."
            ) from None
    return counts


def _header_fields(line: str, delimiter: Optional[str]) -> tuple[str, ...]:
    if delimiter is None:
        return tuple(line.split())
    return tuple(field.strip() for field in next(csv.reader([line], delimiter=delimiter)))


def _looks_numeric(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Layout:
    """How a format lays out its lines: the separator (``None``: runs of whitespace), whether the first
    non-blank, non-comment line is a header, comment prefixes, the fewest columns, the expected fields in
    words for error messages, and ``names(num_cols)`` for formats whose header does not name the fields."""

    delimiter: Optional[str]
    has_header: bool
    comments: tuple[str, ...]
    min_cols: int
    layout: str
    names: Optional[Callable[[int], tuple[str, ...]]] = None


def _parse_table(path: PathLike, spec: _Layout, text: Optional[str] = None) -> _Table:
    """Split a file (or ``text``, its first lines) into fields; every data line must have the same number
    of fields.

    The expected count is the header's when there is one and ``spec.names`` is not given,
    else the first data line's.
    """
    delimiter, has_header, comments, min_cols, layout, names = (
        spec.delimiter, spec.has_header, spec.comments, spec.min_cols, spec.layout, spec.names)
    name = os.fspath(path)
    lines = (_read_text(path) if text is None else text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    data: list[str] = []
    line_nos: list[int] = []
    blank = comment = 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            blank += 1
        elif comments and stripped.startswith(comments):
            comment += 1
        else:
            data.append(line)
            line_nos.append(number)

    header: Optional[tuple[str, ...]] = None
    header_line: Optional[int] = None
    if has_header:
        if not data:
            raise DataFormatError(f"{name}: expected a header line ({layout}), found an empty file.")
        header_text = data.pop(0)
        header_line = line_nos.pop(0)
        header = _header_fields(header_text, delimiter)
        if all(_looks_numeric(f) for f in header[:min_cols]):
            raise DataFormatError(
                f"{name}, line {header_line}: expected a header line ({layout}), found data "
                f"{header_text!r}. Skipping it would drop an event: add a header or read the "
                f"file as header-less."
            )

    if not data:
        raise DataFormatError(f"{name}: expected at least one event line ({layout}), found none.")
    quoted = delimiter is not None and any('"' in line for line in data)
    counts = _field_counts(name, data, line_nos, delimiter, quoted)
    from_header = header is not None and names is None
    num_cols = len(header) if header is not None and names is None else counts[0]
    reference = f"line {header_line}, the header" if from_header else f"line {line_nos[0]}"
    sep = _separator_name(delimiter)
    if num_cols < min_cols:
        raise DataFormatError(
            f"{name}, {reference}: expected at least {min_cols} {sep}-separated fields ({layout}), "
            f"found {num_cols}. Check the delimiter and the format."
        )
    bad = next((i for i, c in enumerate(counts) if c != num_cols), None)
    if bad is not None:
        raise DataFormatError(
            f"{name}, line {line_nos[bad]}: expected {num_cols} {sep}-separated fields "
            f"({layout}; as on {reference}), found {counts[bad]}: {data[bad]!r}. "
            f"Fix or remove that line; rows are never skipped silently."
        )
    if names is not None:
        column_names = names(num_cols)
    elif header is not None:
        column_names = header
    else:
        column_names = tuple(str(j) for j in range(num_cols))
    return _Table(
        path=name,
        header=header,
        header_line=header_line,
        names=column_names,
        delimiter=delimiter,
        quoted=quoted,
        lines=data,
        line_nos=line_nos,
        num_lines=len(lines),
        comment_lines=comment,
        blank_lines=blank,
    )


# -------------------------------------------------------------------------- fast path


class _Doubt(Exception):
    """The fast path cannot vouch for a file; the exact path reads it (and names any problem)."""


@dataclass(frozen=True)
class _Roles:
    """The 0-based columns a reader takes each field from, and how it reads them."""

    src: int
    dst: int
    t: int
    msg: tuple[int, ...] = ()
    y: Optional[int] = None
    time_format: Optional[str] = None
    items_after_sources: bool = False  # bipartite without remap: dst + max(src) + 1 (TGB's numbering of JODIE)


@dataclass(frozen=True)
class _Columns:
    """The converted columns of a file and its line counts; ``line_nos`` (the 1-based line of each event)
    only on the exact path, the one that names lines in errors."""

    src: np.ndarray
    dst: np.ndarray
    t: np.ndarray
    merged_times: int
    msg: Optional[np.ndarray]
    y: Optional[np.ndarray]
    num_lines: int
    comment_lines: int
    blank_lines: int
    line_nos: Optional[list[int]]

    def line(self, row: int) -> int:
        if self.line_nos is None:
            raise _Doubt
        return self.line_nos[row]


_HEAD_BYTES = 1 << 16
_BLOCK_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
#: bytes data lines may hold on the fast path: printable ASCII but the double quote (quoted fields), tab, LF
_DATA_BYTES = bytes(range(0x20, 0x7F)).replace(b'"', b"") + b"\t\n"
_NOT_INT = re.compile(r"to int64 at row \d+, column (\d+)\.$")
#: decimals of at most this many characters (so at most DBL_DIG significant digits) in float64's normal range
#: parse to distinct floats: no two distinct times of such a file merge
_SHORT_DECIMAL = 15
_POWERS_OF_TEN = 10.0 ** np.arange(23)  # exact in float64


def _open_bytes(path: PathLike) -> BinaryIO:
    """The file's bytes, decompressed when it starts with the gzip magic bytes."""
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")  # type: ignore[return-value]


def _blocks(path: PathLike) -> Iterator[bytes]:
    """The file in blocks of whole lines (about :data:`_BLOCK_BYTES`; the last may lack its line end),
    without the BOM, CRLF and CR made LF (as :func:`_read_text`); the bytes read so far of the file go to
    :func:`tgeval.progress.report`."""
    rest, first = b"", True
    size = os.path.getsize(path)
    with _open_bytes(path) as handle:
        raw = getattr(handle, "fileobj", handle)  # a gzip file's compressed bytes, whose size is known
        while True:
            chunk = handle.read(_BLOCK_BYTES)
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


def _head(path: PathLike, spec: _Layout) -> _Table:
    """The exact table of the file's first lines (at most :data:`_HEAD_BYTES`): header, names, column count."""
    with _open_bytes(path) as handle:
        raw = handle.read(_HEAD_BYTES + 1)
    if len(raw) > _HEAD_BYTES:
        raw = raw[: raw.rfind(b"\n") + 1]
    return _parse_table(path, spec, _decode(os.fspath(path), raw))


def _without_line(block: bytes, number: int) -> bytes:
    """``block`` without its line ``number`` (1-based)."""
    start = 0
    for _ in range(number - 1):
        start = block.index(b"\n", start) + 1
    end = block.find(b"\n", start)
    return block[:start] + (block[end + 1:] if end >= 0 else b"")


def _load(block: bytes, kinds: list[str], delimiter: Optional[str]) -> np.ndarray:
    """Records ``[rows]`` of a block, field ``c{j}`` of kind ``kinds[j]`` per column (numpy's C parser checks
    every line has ``len(kinds)`` fields); an int64 column holding another number turns float64 (in
    ``kinds``, for the blocks that follow)."""
    text = block.decode("ascii")
    while True:
        dtype = np.dtype([(f"c{j}", kind) for j, kind in enumerate(kinds)])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                return np.loadtxt(StringIO(text), dtype=dtype, delimiter=delimiter, comments=None, quotechar=None,
                                  ndmin=1)
        except ValueError as exc:
            found = _NOT_INT.search(str(exc))
            if found is None or kinds[int(found[1]) - 1] != "i8":
                raise _Doubt from None
            kinds[int(found[1]) - 1] = "f8"
        except Warning:
            raise _Doubt from None


def _decimals(block: bytes, kinds: list[str], delimiter: Optional[str]) -> Optional[dict[int, np.ndarray]]:
    """Columns ``{j: values}`` of a delimited block whose float64 columns hold plain decimals (``-12.375``, ``5``:
    no exponent, at most 15 digits, no spaces), or ``None`` where it cannot say (the caller then uses :func:`_load`).
    An int64 column with a point turns float64 (in ``kinds``, for the blocks that follow).

    numpy parses integers far faster than fractions: the points are deleted, every column is read as int64
    ``m`` and a fraction with ``k`` digits after its point is ``m / 10^k``; ``|m| < 10^15`` and ``k <= 22`` make
    both exact in float64, so the division is correctly rounded, as Python's ``float`` (Clinger's fast path),
    and no two distinct such decimals give one float (at most 15 significant digits).
    """
    if delimiter is None or b"." not in block or b" " in block or (delimiter != "\t" and b"\t" in block):
        return None
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero((data == ord(delimiter)) | (data == 10))  # the end of every field
    if not block.endswith(b"\n"):
        ends = np.append(ends, data.size)
    width = len(kinds)
    newlines = ends[width - 1 :: width]
    if ends.size % width or np.count_nonzero(data[newlines[:-1]] != 10) or newlines.size != block.count(b"\n") + (
            not block.endswith(b"\n")):
        return None  # a blank line, or a line with another number of fields
    points = np.flatnonzero(data == ord("."))
    field = np.searchsorted(ends, points)  # the field of every point
    pointed = np.flatnonzero(np.bincount(field % width, minlength=width)).tolist()
    if np.count_nonzero(np.diff(field) == 0) or any(kinds[j] == "S1" for j in pointed):
        return None
    for j in pointed:  # an int64 column holding fractions turns float64, as in _load
        kinds[j] = "f8"
    floats = [j for j, kind in enumerate(kinds) if kind == "f8"]
    digits = ends[field] - points - 1
    if digits.max(initial=0) > 22:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            records = np.loadtxt(StringIO(block.translate(None, b".").decode("ascii")), delimiter=delimiter,
                                 dtype=np.dtype([(f"c{j}", "i8" if kind == "f8" else kind) for j, kind in
                                                 enumerate(kinds)]), comments=None, quotechar=None, ndmin=1)
    except (ValueError, Warning):
        return None
    scale = np.ones(ends.size)
    scale[field] = _POWERS_OF_TEN[digits]
    scale = scale.reshape(-1, width)
    signed = np.zeros(ends.size, dtype=bool)
    signed[np.searchsorted(ends, np.flatnonzero(data == ord("-")))] = True
    signed = signed.reshape(-1, width)
    out = {j: records[f"c{j}"] for j in range(width)}
    for j in floats:
        whole = out[j]
        if np.count_nonzero(np.abs(whole) >= 10**15):
            return None
        out[j] = whole / scale[:, j]
        out[j][signed[:, j] & (whole == 0)] = -0.0  # "-0.00" is -0.0 for Python's float
    return out


def _whole_ints(values: np.ndarray) -> np.ndarray:
    """int64 of an int64 or float64 block column; float64 must be whole and exact (as :func:`_whole`)."""
    if values.dtype == np.int64:
        return values.copy()
    if not np.isfinite(values).all() or _non_whole(values).size:
        raise _Doubt
    return values.astype(np.int64)


def _fast_columns(path: PathLike, spec: _Layout, head: _Table, roles: _Roles) -> _Columns:
    """The columns of a well-formed numeric file, parsed block by block in C straight into their final dtypes.

    Raises :class:`_Doubt` where the exact path might read the file differently: quoted fields, other
    bytes than :data:`_DATA_BYTES` on data lines, a comment prefix inside a line, textual times, values numpy
    does not parse or that are not finite, integer columns that mix in other numbers beyond 2^53, fractional
    times longer than :data:`_SHORT_DECIMAL` characters or outside float64's normal range.
    """
    ints = [roles.src, roles.dst, roles.t] + ([] if roles.y is None else [roles.y])
    if head.quoted or roles.time_format is not None or len({*ints, *roles.msg}) < len(ints) + len(roles.msg):
        raise _Doubt
    kinds = ["S1"] * head.num_cols
    for j in ints:
        kinds[j] = "i8"
    for j in roles.msg:
        kinds[j] = "f8"
    prefixes = tuple(prefix.encode("utf-8") for prefix in spec.comments)
    comment_line = re.compile(rb"^[ \t]*(?:" + b"|".join(map(re.escape, prefixes)) + rb")[^\n]*\n?", re.M)
    parts: dict[str, list[np.ndarray]] = {"src": [], "dst": [], "t": [], "y": [], "msg": []}
    num_lines = comment_lines = rows = 0
    last = b""
    for number, block in enumerate(_blocks(path)):
        num_lines, last = num_lines + block.count(b"\n"), block
        if number == 0 and head.header_line is not None:
            block = _without_line(block, head.header_line)
        if prefixes and any(prefix in block for prefix in prefixes):
            block.decode("utf-8")  # comments too must be UTF-8
            block, removed = comment_line.subn(b"", block)
            comment_lines += removed
            if any(prefix in block for prefix in prefixes):
                raise _Doubt
        if block.translate(None, _DATA_BYTES):
            raise _Doubt
        if not block or block.isspace():
            continue
        records, short_times = _decimals(block, kinds, spec.delimiter), True  # decimals of at most 15 digits
        if records is None:
            loaded = _load(block, kinds, spec.delimiter)
            records = {j: loaded[f"c{j}"] for j in range(len(kinds))}
            short_times = kinds[roles.t] == "i8"  # else the lengths of the times' texts tell
        rows += records[roles.src].size
        parts["src"].append(_whole_ints(records[roles.src]))
        parts["dst"].append(_whole_ints(records[roles.dst]))
        if roles.y is not None:
            parts["y"].append(_whole_ints(records[roles.y]))
        parts["t"].append(records[roles.t].copy())
        if not short_times:
            texts = np.loadtxt(StringIO(block.decode("ascii")), dtype=f"S{_SHORT_DECIMAL + 1}", usecols=roles.t,
                               delimiter=spec.delimiter, comments=None, quotechar=None, ndmin=1)
            if np.char.str_len(texts).max() > _SHORT_DECIMAL:
                raise _Doubt
        if roles.msg:
            msg = np.stack([records[j] for j in roles.msg], axis=1)
            with np.errstate(over="ignore"):
                parts["msg"].append(msg.astype(np.float32))
            if not np.isfinite(parts["msg"][-1]).all():  # also a value beyond float32's range
                raise _Doubt
        del records
    if not rows:
        raise _Doubt
    ints_with_floats = [j for j in ints if kinds[j] == "f8"]
    columns = {key: np.concatenate(parts.pop(key)) for key in list(parts) if parts[key]}  # each part freed at once
    if any(np.abs(columns[role]).max() >= _MAX_EXACT_FLOAT_INT for role, j in
           (("src", roles.src), ("dst", roles.dst), ("t", roles.t), ("y", roles.y)) if j in ints_with_floats):
        raise _Doubt  # the exact path reads such a column as float64: large values would lose digits
    t = columns["t"]
    if t.dtype == np.float64:
        tiny = np.abs(t) < np.finfo(np.float64).tiny
        if not np.isfinite(t).all() or (tiny & (t != 0)).any():
            raise _Doubt
        if not _non_whole(t).size:
            t = t.astype(np.int64)
    num_lines += bool(last) and not last.endswith(b"\n")
    return _Columns(
        src=columns["src"], dst=columns["dst"], t=t, merged_times=0, msg=columns.get("msg"), y=columns.get("y"),
        num_lines=num_lines, comment_lines=comment_lines,
        blank_lines=num_lines - comment_lines - rows - (head.header_line is not None), line_nos=None)


# ------------------------------------------------------------------------ column layer


def _first_failure(values: list[str], convert: Callable[[str], object]) -> int:
    """Index of the first value that ``convert`` rejects, ``-1`` if none (slow path)."""
    for i, value in enumerate(values):
        try:
            convert(value)
        except (ValueError, OverflowError):
            return i
    return -1


def _floats(fields: _Fields, j: int, what: str, fix: str) -> np.ndarray:
    """float64 ``[rows]`` of column ``j``; raises on unparsable or non-finite fields."""
    values = fields.column(j)
    try:
        out = np.fromiter(map(float, values), dtype=np.float64, count=len(values))
    except ValueError:
        row = _first_failure(values, float)
        raise DataFormatError(
            f"{fields.where(row)}: column {fields.name(j)!r} must hold {what}, "
            f"found {values[row].strip()!r}. {fix}"
        ) from None
    bad = ~np.isfinite(out)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"{fields.where(row)}: column {fields.name(j)!r} must hold finite {what}, "
            f"found {values[row].strip()!r}. Repair or remove events with missing values."
        )
    return out


def _feature_block(table: _Table, columns: Sequence[int]) -> np.ndarray:
    """float64 ``[rows, len(columns)]``: :func:`numpy.loadtxt` (C parser) for speed,
    the field-by-field path when it fails, to name the offending line or to accept
    what Python's ``float`` accepts (e.g. ``1_000``)."""
    try:
        block = np.loadtxt(
            table.lines,
            dtype=np.float64,
            delimiter=table.delimiter,
            usecols=tuple(columns),
            comments=None,
            quotechar='"' if table.quoted else None,
            ndmin=2,
        )
        if np.isfinite(block).all():
            return block
    except ValueError:
        pass
    fields = table.fields(max(columns) + 1)
    fix = "Event features must be numbers; drop the column from the features."
    return np.stack([_floats(fields, j, "numeric event features", fix) for j in columns], axis=1)


def _float32_features(table: _Table, columns: Sequence[int]) -> np.ndarray:
    """float32 ``[rows, len(columns)]`` of :func:`_feature_block`; a value beyond the float32 range (|x| > 3.4e38),
    which would become inf, raises naming its line and column."""
    block = _feature_block(table, columns)
    with np.errstate(over="ignore"):
        out = block.astype(np.float32)
    over = np.argwhere(np.isinf(out))  # the block is finite: inf is an overflow of the cast
    if over.size:
        row, k = (int(i) for i in over[0])
        fields = table.fields(max(columns) + 1)
        found = fields.column(columns[k])[row].strip()
        raise DataFormatError(
            f"{fields.where(row)}: column {fields.name(columns[k])!r} holds {found!r}, beyond the float32 range of "
            f"event features (|x| <= {float(np.finfo(np.float32).max):.4g}; {len(over)} of the file's feature values "
            f"exceed it). Rescale that column (e.g. a logarithm or a larger unit), or drop it from the features."
        )
    return out


def _integers(values: list[str]) -> Optional[np.ndarray]:
    """int64 array when every field is an integer literal, else ``None`` (fast path)."""
    try:
        return np.fromiter(map(int, values), dtype=np.int64, count=len(values))
    except (ValueError, OverflowError):
        return None


def _non_whole(values: np.ndarray) -> np.ndarray:
    """Positions of a float64 array that are not exactly representable whole numbers."""
    return np.flatnonzero((np.floor(values) != values) | (np.abs(values) >= _MAX_EXACT_FLOAT_INT))


def _whole(fields: _Fields, j: int, what: str, fix: str) -> np.ndarray:
    """int64 column; accepts ``12`` and ``12.0``, raises on anything else."""
    exact = _integers(fields.column(j))
    if exact is not None:
        return exact
    as_float = _floats(fields, j, what, fix)
    fractional = _non_whole(as_float)
    if fractional.size:
        row = int(fractional[0])
        raise DataFormatError(
            f"{fields.where(row)}: column {fields.name(j)!r} must hold {what}, "
            f"found {fields.column(j)[row].strip()!r}. {fix}"
        )
    return as_float.astype(np.int64)


def _ids(fields: _Fields, j: int, *, allow_text: bool) -> np.ndarray:
    """int64 ids, or (``allow_text``) a str array of the ids as written when some id is not a number, or
    is an integer beyond int64 (ids to renumber: exact as names, where int64 or float64 would not be)."""
    values = fields.column(j)
    if allow_text and _integers(values) is None and (_first_failure(values, float) >= 0
                                                     or _first_failure(values, int) < 0):
        return np.array([v.strip() for v in values])
    if allow_text:
        fix = ("Node ids are integers or names, and a number with a fraction or an exponent is neither: check the "
               "column mapping, or write the ids as integers.")
    else:
        fix = ("Pass remap=True to number ids 0..n-1 (textual ones, or beyond the int64 range), or check the column "
               "mapping.")
    return _whole(fields, j, "integer node ids", fix)


def _parse_datetime(text: str, time_format: str) -> int:
    """Microseconds since the Unix epoch; naive times are read as UTC."""
    moment = datetime.strptime(text.strip(), time_format)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _times(fields: _Fields, j: int, time_format: Optional[str]) -> tuple[np.ndarray, int]:
    """int64 seconds when every time is whole, else float64 seconds; and the number of
    distinct times of the file that parsing made equal (float64 rounding merges their groups).

    Numeric columns are read as they are (integers exactly; other numbers through float64,
    compared as exact decimals to count the merges); textual ones are parsed with
    ``time_format`` (each distinct string once, to microseconds).
    """
    values = fields.column(j)
    if time_format is None:
        exact = _integers(values)
        if exact is not None:
            return exact, 0
        as_float = _floats(
            fields,
            j,
            "numeric timestamps",
            "For textual times pass time_format, a strptime format such as '%m/%d/%y %I:%M %p'.",
        )
        merged = len({Decimal(text) for text in set(values)}) - np.unique(as_float).size
        return (as_float if _non_whole(as_float).size else as_float.astype(np.int64)), merged
    unique, inverse = np.unique(np.array(values), return_inverse=True)
    micros = np.empty(unique.size, dtype=np.int64)
    for k, text in enumerate(unique.tolist()):
        try:
            micros[k] = _parse_datetime(text, time_format)
        except ValueError as exc:
            row = int(np.flatnonzero(inverse.reshape(-1) == k)[0])
            raise DataFormatError(
                f"{fields.where(row)}: column {fields.name(j)!r} must match time_format "
                f"{time_format!r}, found {text.strip()!r} ({exc}). Fix the value or the format."
            ) from None
    micros = micros[inverse.reshape(-1)]
    if np.all(micros % 1_000_000 == 0):
        return micros // 1_000_000, 0
    seconds = micros / 1e6
    return seconds, np.unique(micros).size - np.unique(seconds).size


def _resolve(table: _Table, column: Column, role: str) -> int:
    """0-based index of ``column`` (a header name, case-insensitive, or an index)."""
    if isinstance(column, bool) or not isinstance(column, (int, str)):
        raise TypeError(f"`{role}` must be a column name (str) or a 0-based index (int), got {column!r}.")
    if isinstance(column, int):
        if not -table.num_cols <= column < table.num_cols:
            raise ValueError(
                f"`{role}`={column} is out of range: {table.path} has {table.num_cols} columns "
                f"(indices 0..{table.num_cols - 1})."
            )
        return column % table.num_cols
    if table.header is None:
        raise ValueError(
            f"`{role}`={column!r} names a column, but {table.path} is read without a header "
            f"(has_header=False). Pass a 0-based index instead."
        )
    lowered = [h.lower() for h in table.header]
    if column.lower() not in lowered:
        raise ValueError(f"`{role}`={column!r} is not a column of {table.path}; the header has {list(table.header)}.")
    return lowered.index(column.lower())


def _exact_columns(table: _Table, roles: _Roles, remap: bool) -> _Columns:
    """The chosen columns of a whole table converted field by field (exact path); ``remap`` allows textual ids."""
    fields = table.fields(max(roles.src, roles.dst, roles.t, -1 if roles.y is None else roles.y) + 1)
    src = _ids(fields, roles.src, allow_text=remap)
    dst = _ids(fields, roles.dst, allow_text=remap)
    if src.dtype.kind != dst.dtype.kind:  # one side textual: both are names, as written
        src, dst = (np.array([v.strip() for v in fields.column(j)]) for j in (roles.src, roles.dst))
    t, merged_times = _times(fields, roles.t, roles.time_format)
    return _Columns(
        src=src,
        dst=dst,
        t=t,
        merged_times=merged_times,
        msg=_float32_features(table, roles.msg) if roles.msg else None,
        y=None if roles.y is None else _whole(fields, roles.y, "integer labels", "Labels are stored as int64 `y`."),
        num_lines=table.num_lines,
        comment_lines=table.comment_lines,
        blank_lines=table.blank_lines,
        line_nos=table.line_nos,
    )


# ------------------------------------------------------------------------ event layer


def _first_appearance(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ids in order of first occurrence, and the new id of every element. Integer ids spanning at
    most ``len(ids) + 2^20`` values go through a table of first positions, others through a sort."""
    if ids.dtype.kind == "i" and ids.size and int(ids.max()) - int(ids.min()) < ids.size + SPARSE_ID_SLACK:
        low = ids.min()
        first = np.full(int(ids.max() - low) + 1, ids.size, dtype=np.int64)
        np.minimum.at(first, ids - low, np.arange(ids.size))
        present = np.flatnonzero(first < ids.size)
        order = present[np.argsort(first[present])]
        rank = np.empty(first.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        return order + low, rank[ids - low]
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return unique[order], rank[inverse.reshape(-1)]


def _num_distinct(ids: np.ndarray) -> int:
    """Distinct values of an int64 array (a sort: numpy's hashing ``unique`` is slower on millions)."""
    ordered = np.sort(ids)
    return int(ordered.size and 1 + np.count_nonzero(ordered[1:] != ordered[:-1]))


#: ids kept as written must be dense enough: the largest id + 1 (the node slots every model and
#: catalog allocates) may exceed SPARSE_ID_SLACK only up to SPARSE_ID_FACTOR times the distinct ids
SPARSE_ID_FACTOR = 16
SPARSE_ID_SLACK = 2**20


def _check_dense_ids(path: str, src: np.ndarray, dst: np.ndarray) -> None:
    """Refuse ids so sparse that ``num_nodes = largest + 1`` slots would waste memory (e.g. ids near
    2^40 for a few thousand nodes would make a model allocate terabytes)."""
    largest = int(max(int(src.max()), int(dst.max()))) if src.size else -1
    if largest + 1 <= SPARSE_ID_SLACK:
        return
    distinct = _num_distinct(np.concatenate([src, dst]))
    if largest + 1 > SPARSE_ID_FACTOR * distinct:
        raise DataFormatError(
            f"{path}: the ids are sparse: the largest is {largest:,} but only {distinct:,} distinct ids occur, so "
            f"every model and catalog would hold {largest + 1:,} node slots. Pass remap=True (--remap) to number "
            f"the ids 0..{distinct - 1} (the original ids are kept in info.node_ids).")


#: time column of each headerless format (named when an unsorted file is sorted in another column)
_HEADERLESS_TIME_COLUMN = {"snap": 2, "sociopatterns": 0}


def _sorted_time_column(table: _Table, fmt: str) -> Optional[tuple[str, int]]:
    """``(format, column)`` of another headerless format whose time column is numeric,
    non-decreasing and not constant in this file: what to suggest when the file is unsorted in
    ``fmt``'s time column (read only on that error path)."""
    if table.header is not None:
        return None
    fields = table.fields(table.num_cols)
    for other, j in _HEADERLESS_TIME_COLUMN.items():
        if other == fmt or j >= table.num_cols:
            continue
        try:
            values = np.array([float(v) for v in fields.column(j)])
        except ValueError:
            continue
        if values.size > 1 and values[0] < values[-1] and bool(np.all(values[1:] >= values[:-1])):
            return other, j
    return None


def _build(
    table: _Table,
    fmt: str,
    roles: _Roles,
    columns: _Columns,
    *,
    remap: bool,
    bipartite: bool,
    sort: bool,
    directed: bool,
) -> tuple[TemporalData, ReadInfo]:
    """Check order, remap ids and validate (module rules) the converted columns of ``table`` (its first
    lines on the fast path: header, names). ``roles.items_after_sources`` (bipartite, no remap): destination
    ids are shifted past the largest source id, ``dst + max(src) + 1`` (TGB's numbering of JODIE's
    separately numbered users and items)."""
    src, dst, t, msg, y = columns.src, columns.dst, columns.t, columns.msg, columns.y
    if roles.items_after_sources:
        dst = dst + (int(src.max()) + 1 if src.size else 0)
    decreasing = np.flatnonzero(t[1:] < t[:-1])
    if decreasing.size and not sort:
        row = int(decreasing[0]) + 1
        line, previous = columns.line(row), columns.line(row - 1)
        other = _sorted_time_column(table, fmt)
        if other is None:
            hint = "Pass sort=True to stable-sort the events by time."
        else:
            hint = (f"Column {other[1] + 1} is non-decreasing, where {other[0]!r} files hold time: if this is "
                    f"one, read it with format={other[0]!r} (--format {other[0]}); if it is unsorted, pass sort=True "
                    f"(--sort).")
        raise TemporalDataError(
            f"{table.path}: `t` (column {table.names[roles.t]!r} of format {fmt!r}) must be non-decreasing, but line "
            f"{line} (t={t[row]}) follows line {previous} (t={t[row - 1]}). {hint}"
        )
    if decreasing.size:
        perm = np.argsort(t, kind="stable")
        src, dst, t = src[perm], dst[perm], t[perm]
        msg = msg[perm] if msg is not None else None
        y = y[perm] if y is not None else None
        if columns.line_nos is not None:
            columns = replace(columns, line_nos=[columns.line_nos[i] for i in perm.tolist()])

    node_ids: Optional[Tensor] = None
    node_names: Optional[tuple[str, ...]] = None
    dst_offset: Optional[int] = None
    if remap:
        if bipartite:
            src_orig, src_new = _first_appearance(src)
            dst_orig, dst_new = _first_appearance(dst)
            original = np.concatenate([src_orig, dst_orig])
            dst_offset = int(src_orig.size)
            src, dst = src_new, dst_new + dst_offset
        else:
            original, new = _first_appearance(np.stack([src, dst], axis=1).reshape(-1))
            src, dst = new[0::2], new[1::2]
        if original.dtype.kind in "iu":
            node_ids = torch.from_numpy(original.astype(np.int64))
        else:
            node_names = tuple(original.tolist())
    else:
        for ids, role in ((src, "source"), (dst, "destination")):
            negative = np.flatnonzero(ids < 0)
            if negative.size:
                row = int(negative[0])
                raise DataFormatError(
                    f"{table.path}, line {columns.line(row)}: {role} ids must be >= 0, found "
                    f"{int(ids[row])}. Pass remap=True to number ids 0..n-1."
                )
        _check_dense_ids(table.path, src, dst)
        if bipartite:
            top_src = int(np.argmax(src))
            low_dst = int(np.argmin(dst))
            if src[top_src] >= dst[low_dst]:
                raise DataFormatError(
                    f"{table.path}: bipartite=True with remap=False needs every source id below "
                    f"every destination id, but source {int(src[top_src])} (line {columns.line(top_src)}) "
                    f">= destination {int(dst[low_dst])} (line {columns.line(low_dst)}). Pass remap=True "
                    f"to place sources in [0, n_src) and destinations in [n_src, n_src + n_dst)."
                )
            dst_offset = int(src[top_src]) + 1

    data = TemporalData(
        src=torch.from_numpy(np.ascontiguousarray(src, dtype=np.int64)),
        dst=torch.from_numpy(np.ascontiguousarray(dst, dtype=np.int64)),
        t=torch.from_numpy(np.ascontiguousarray(t)),
    )
    if msg is not None:
        data.msg = torch.from_numpy(msg)
    if y is not None:
        data.y = torch.from_numpy(y)
    data = validate(data)

    names = {"src": table.names[roles.src], "dst": table.names[roles.dst], "t": table.names[roles.t]}
    if roles.y is not None:
        names["y"] = table.names[roles.y]
    used = {roles.src, roles.dst, roles.t, *roles.msg, *([] if roles.y is None else [roles.y])}
    num_nodes = int(max(int(data.src.max()), int(data.dst.max())) + 1)
    info = ReadInfo(
        path=table.path,
        format=fmt,
        num_events=int(data.t.numel()),
        num_lines=columns.num_lines,
        header=table.header,
        comment_lines=columns.comment_lines,
        blank_lines=columns.blank_lines,
        columns=names,
        msg_columns=tuple(table.names[j] for j in roles.msg),
        ignored_columns=tuple(table.names[j] for j in range(table.num_cols) if j not in used),
        time_format=roles.time_format,
        sorted_on_read=bool(decreasing.size),
        remapped=remap,
        bipartite=bipartite,
        directed=directed,
        num_nodes=num_nodes,
        num_sources=_num_present(data.src.numpy(), num_nodes),
        num_destinations=_num_present(data.dst.numpy(), num_nodes),
        dst_offset=dst_offset,
        node_ids=node_ids,
        node_names=node_names,
        num_duplicates=int(data.num_events - _first_occurrences(data).sum()),
        num_merged_times=int(columns.merged_times),
    )
    return data, info


def _num_present(ids: np.ndarray, size: int) -> int:
    """Distinct values of ids in ``[0, size)`` (``size`` is at most ``max(2^20, 32 E)`` once ids are dense)."""
    seen = np.zeros(size, dtype=bool)
    seen[ids] = True
    return int(np.count_nonzero(seen))


def _read(
    path: PathLike,
    fmt: str,
    spec: _Layout,
    pick: Callable[[_Table], _Roles],
    *,
    remap: Optional[bool],
    bipartite: bool,
    sort: bool,
    directed: bool,
) -> tuple[TemporalData, ReadInfo]:
    """Read ``path`` laid out as ``spec``, its columns chosen by ``pick(table)``: on the fast path, and at any
    doubt or error on the exact path, which then accepts the file or raises the error that names the problem."""
    do_remap = bipartite if remap is None else remap
    try:
        head = _head(path, spec)
        roles = pick(head)
        return _build(head, fmt, roles, _fast_columns(path, spec, head, roles),
                      remap=do_remap, bipartite=bipartite, sort=sort, directed=directed)
    except (_Doubt, ValueError, TypeError, OSError, EOFError, zlib.error):
        table = _parse_table(path, spec)
        roles = pick(table)
        return _build(table, fmt, roles, _exact_columns(table, roles, do_remap),
                      remap=do_remap, bipartite=bipartite, sort=sort, directed=directed)


#: ReadInfo fields kept as arrays in a cache entry; the others go to its JSON record (path: the file read now)
_INFO_ARRAYS = ("node_ids", "node_names")


def _to_cache(data: TemporalData, info: ReadInfo) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and the JSON record of a cache entry."""
    arrays = {key: value.numpy() for key, value in data.to_dict().items()}
    if info.node_ids is not None:
        arrays["node_ids"] = info.node_ids.numpy()
    if info.node_names is not None:
        arrays["node_names"] = np.array(info.node_names, dtype=str)
    record = {f.name: getattr(info, f.name) for f in dataclass_fields(ReadInfo)
              if f.name not in (*_INFO_ARRAYS, "path", "cache")}
    return arrays, record


def _from_cache(path: PathLike, arrays: dict[str, np.ndarray],
                record: dict[str, Any]) -> tuple[TemporalData, ReadInfo]:
    """``(data, info)`` of a cache entry, checked by :func:`validate` and against its record (``ValueError``,
    ``TypeError`` or ``KeyError`` when they disagree)."""
    node_ids, node_names = arrays.pop("node_ids", None), arrays.pop("node_names", None)
    data = validate(TemporalData(**{key: torch.from_numpy(value) for key, value in arrays.items()}))
    if data.num_events != record["num_events"]:
        raise ValueError(f"{data.num_events} events, but the record says {record['num_events']}")
    tuples = {key: tuple(record[key]) for key in ("header", "msg_columns", "ignored_columns")
              if record[key] is not None}
    info = ReadInfo(**{**record, **tuples}, path=os.fspath(path), cache="hit",
                    node_ids=None if node_ids is None else torch.from_numpy(node_ids),
                    node_names=None if node_names is None else tuple(node_names.tolist()))
    return data, info


# ----------------------------------------------------------------------------- readers


def read_dgb(
    path: PathLike,
    *,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
) -> tuple[TemporalData, ReadInfo]:
    """Read a DGB / DyGLib ``ml_<name>.csv`` file.

    Layout: a header ``,u,i,ts,label,idx`` (the unnamed first column is a row index),
    then one comma-separated event per line. Columns are picked by header name
    (case-insensitive): ``u`` -> ``src``, ``i`` -> ``dst``, ``ts`` -> ``t``, ``label``
    (optional) -> ``y``; the row index and ``idx`` are ignored. Edge features, which DGB
    keeps in a separate ``.npy`` file, are not read.

    Args:
        path: the file (plain or gzip).
        remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``).
        bipartite: keep sources and destinations in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.

    Returns:
        tuple: ``(data, info)``; ``data.y`` int64 ``[E]`` when the file has ``label``.

    Raises:
        DataFormatError: missing header columns or a malformed line.
        TemporalDataError: unsorted events with ``sort=False``.
    """
    return _read(path, "dgb", _DGB, _dgb_roles, remap=remap, bipartite=bipartite, sort=sort, directed=directed)


_DGB = _Layout(delimiter=",", has_header=True, comments=(), min_cols=3, layout="header ',u,i,ts,label,idx'")


def _dgb_roles(table: _Table) -> _Roles:
    _refuse_other_format(table, "dgb")
    lowered = [h.lower() for h in table.names]
    missing = [name for name in ("u", "i", "ts") if name not in lowered]
    if missing:
        raise DataFormatError(
            f"{table.path}, line {table.header_line}: expected a DGB header with columns "
            f"'u', 'i', 'ts' (e.g. ',u,i,ts,label,idx'), found {','.join(table.names)!r} "
            f"(missing {missing}). Use format='csv' with an explicit column mapping."
        )
    return _Roles(src=lowered.index("u"), dst=lowered.index("i"), t=lowered.index("ts"),
                  y=lowered.index("label") if "label" in lowered else None)


def read_snap(
    path: PathLike,
    *,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
) -> tuple[TemporalData, ReadInfo]:
    """Read a SNAP temporal edge list: ``SRC DST TIME`` separated by whitespace.

    No header; lines starting with ``#`` or ``%`` are comments. Every line must have the
    same number of fields (at least 3); fields after the third are ignored (listed in
    ``info.ignored_columns``). Also reads ``ml_wikipedia.txt`` (``u i ts``).

    Args:
        path: the file (plain or gzip).
        remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``).
        bipartite: keep sources and destinations in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.

    Returns:
        tuple: ``(data, info)`` with ``src``, ``dst``, ``t`` ``[E]``.

    Raises:
        DataFormatError: a malformed line.
        TemporalDataError: unsorted events with ``sort=False``.
    """
    return _read(path, "snap", _SNAP, _snap_roles, remap=remap, bipartite=bipartite, sort=sort,
                 directed=directed)


_SNAP = _Layout(delimiter=None, has_header=False, comments=("#", "%"), min_cols=3, layout="SRC DST TIME",
                names=lambda num_cols: ("src", "dst", "t") + tuple(f"extra{k}" for k in range(num_cols - 3)))


def _snap_roles(table: _Table) -> _Roles:
    if table.num_cols == 5 and table.lines:  # SocioPatterns' layout: TIME i j class_i class_j, classes as text
        first = table.lines[0].split()
        if not _looks_numeric(first[3]) and not _looks_numeric(first[4]):
            raise DataFormatError(
                f"{table.path}, line {table.line_nos[0]}: 5 fields with text in the last two ({first[3]!r}, "
                f"{first[4]!r}) are a 'sociopatterns' file's (TIME i j class_i class_j), not 'snap' (SRC DST TIME): "
                f"read it with format='sociopatterns' (--format sociopatterns).")
    return _Roles(src=0, dst=1, t=2)


_SOCIOPATTERNS_COLUMNS = ("t", "i", "j", "class_i", "class_j")


def read_sociopatterns(
    path: PathLike,
    *,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
) -> tuple[TemporalData, ReadInfo]:
    """Read a SocioPatterns contact list: ``TIME<TAB>i<TAB>j[<TAB>class_i<TAB>class_j]``.

    No header. ``i`` -> ``src``, ``j`` -> ``dst``, ``TIME`` -> ``t``; the class columns
    (node attributes, not event features) are ignored. Contacts are undirected by
    nature: pass ``directed=False`` to record that (the endpoints are kept as written).

    Args:
        path: the file (plain or gzip).
        remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``).
        bipartite: keep sources and destinations in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.

    Returns:
        tuple: ``(data, info)`` with ``src``, ``dst``, ``t`` ``[E]``.

    Raises:
        DataFormatError: a malformed line.
        TemporalDataError: unsorted events with ``sort=False``.
    """
    return _read(path, "sociopatterns", _SOCIOPATTERNS, lambda table: _Roles(src=1, dst=2, t=0), remap=remap,
                 bipartite=bipartite, sort=sort, directed=directed)


_SOCIOPATTERNS = _Layout(
    delimiter="\t", has_header=False, comments=(), min_cols=3, layout="TIME i j class_i class_j",
    names=lambda num_cols: _SOCIOPATTERNS_COLUMNS[:num_cols]
    + tuple(f"extra{k}" for k in range(num_cols - len(_SOCIOPATTERNS_COLUMNS))))


_JODIE_COLUMNS = ("user_id", "item_id", "timestamp", "state_label")


def _looks_like(header: Optional[Sequence[str]]) -> Optional[str]:
    """The format a header line belongs to, judged from its names (``None``: not recognised)."""
    names = [h.strip().lower() for h in header or ()]
    if {"u", "i", "ts"} <= set(names) and (not names[0] or "idx" in names):
        return "dgb"  # DGB's ",u,i,ts,label,idx": an unnamed row index first, or an idx column
    if names[:3] == ["user_id", "item_id", "timestamp"]:
        return "jodie"
    return None


def _refuse_other_format(table: "_Table", fmt: str) -> None:
    """Raise when the header is that of another known format (not a guess from the data)."""
    other = _looks_like(table.header)
    if other is not None and other != fmt:
        raise DataFormatError(f"{table.path}, line {table.header_line}: the header {','.join(table.header or ())!r} "
                              f"is a {other!r} file's, not {fmt!r}: read it with format={other!r} "
                              f"(--format {other}).")


def read_jodie(
    path: PathLike,
    *,
    remap: Optional[bool] = None,
    bipartite: bool = True,
    sort: bool = False,
    directed: bool = True,
) -> tuple[TemporalData, ReadInfo]:
    """Read a JODIE CSV: ``user_id,item_id,timestamp,state_label,f_1,...,f_d``.

    One header line (skipped; its text varies between releases and it names the
    feature list as a single column), then comma-separated events with the same number
    of fields as the first event line (at least 4). Features -> ``msg`` float32
    ``[E, d]`` (omitted when ``d = 0``), ``state_label`` -> ``y`` int64 ``[E]``.

    JODIE numbers users and items separately from 0, so the default
    ``bipartite=True`` (with remap) places users in ``[0, n_users)`` and items in
    ``[n_users, n_users + n_items)``.

    Args:
        path: the file (plain or gzip).
        remap: renumber ids (default: only when ``bipartite``).
        bipartite: keep users and items in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.

    Returns:
        tuple: ``(data, info)``; ``info.header`` holds the header as written, the
        feature columns are named ``f0 .. f{d-1}`` in ``info.msg_columns``.

    Raises:
        DataFormatError: a malformed line, or a first line that is data, not a header.
        TemporalDataError: unsorted events with ``sort=False``.
    """
    def roles(table: _Table) -> _Roles:
        _refuse_other_format(table, "jodie")
        return _jodie_roles(table)

    return _read(path, "jodie", _JODIE, roles, remap=remap, bipartite=bipartite, sort=sort, directed=directed)


#: a JODIE CSV: its header names the feature list as one column
_JODIE = _Layout(delimiter=",", has_header=True, comments=(), min_cols=4,
                 layout="user_id,item_id,timestamp,state_label,features...",
                 names=lambda num_cols: _JODIE_COLUMNS + tuple(f"f{k}" for k in range(num_cols - 4)))


def _jodie_roles(table: _Table, *, items_after_sources: bool = False) -> _Roles:
    return _Roles(src=0, dst=1, t=2, msg=tuple(range(4, table.num_cols)), y=3,
                  items_after_sources=items_after_sources)


def _first_line(path: PathLike) -> str:
    """The first line of a text file (plain or gzip), without reading the rest."""
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    with (gzip.open if gzipped else open)(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as handle:
        return handle.readline().rstrip("\r\n")


_TGB_ROLES: dict[str, tuple[str, ...]] = {
    "t": ("ts", "timestamp", "time", "t", "day", "date"),
    "src": ("src", "source", "head", "u", "user_id", "sender", "from"),
    "dst": ("dst", "destination", "target", "tail", "i", "item_id", "receiver", "to"),
    "y": ("label", "state_label"),
}


def read_tgb(
    path: PathLike,
    *,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
    time_format: Optional[str] = None,
) -> tuple[TemporalData, ReadInfo]:
    """Read a TGB edge-list CSV, picking columns by header name (case-insensitive).

    Roles and the header names accepted for them:

    * ``t``: ``ts``, ``timestamp``, ``time``, ``t``, ``day``, ``date``;
    * ``src``: ``src``, ``source``, ``head``, ``u``, ``user_id``, ``sender``, ``from``;
    * ``dst``: ``dst``, ``destination``, ``target``, ``tail``, ``i``, ``item_id``,
      ``receiver``, ``to``;
    * ``y`` (optional): ``label``, ``state_label``.

    Every other column that is numeric on every line (e.g. ``w`` / ``weight``,
    ``relation_type``) becomes a ``msg`` column, in file order; textual columns (e.g.
    ``callsign``) are listed in ``info.ignored_columns``. Textual node ids (airport codes)
    need ``remap=True``.

    TGB ships its JODIE datasets (tgbl-wiki) as JODIE's own CSV (header ``user_id,item_id,
    timestamp,state_label,...``); such a file is read as TGB reads it: users keep their ids, items
    are numbered after them (``item_id + max(user_id) + 1``), the state label is ``y`` and the
    features are ``msg``, so ids, keys of TGB's negatives files and TGB's results match.

    Args:
        path: the file (plain or gzip).
        remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``).
        bipartite: keep sources and destinations in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.
        time_format: strptime format for textual timestamps (e.g. ``"%Y-%m-%d"``).

    Returns:
        tuple: ``(data, info)``; ``msg`` float32 ``[E, d]`` when ``d > 0`` extra numeric
        columns exist.

    Raises:
        DataFormatError: a role found in no column or in several, or a malformed line.
        TemporalDataError: unsorted events with ``sort=False``.
    """
    if _looks_like(_first_line(path).split(",")) == "jodie":
        if remap:
            raise DataFormatError(f"{os.fspath(path)}: a TGB file in JODIE's layout is numbered as TGB numbers it "
                                  f"(items after users); remap would renumber it. Drop remap (--remap), or read it "
                                  f"with format='jodie' (--format jodie) to renumber by first appearance.")
        return _read(path, "tgb", _JODIE, lambda table: _jodie_roles(table, items_after_sources=True),
                     remap=False, bipartite=True, sort=sort, directed=directed)
    return _read(path, "tgb", _TGB, lambda table: _tgb_roles(table, time_format), remap=remap, bipartite=bipartite,
                 sort=sort, directed=directed)


_TGB = _Layout(delimiter=",", has_header=True, comments=(), min_cols=3, layout="header such as 'ts,src,dst,w'")


def _tgb_roles(table: _Table, time_format: Optional[str]) -> _Roles:
    """Roles by header name; every other column numeric on every line of ``table`` is a feature."""
    _refuse_other_format(table, "tgb")
    lowered = [h.lower() for h in table.names]
    picked: dict[str, int] = {}
    for role, aliases in _TGB_ROLES.items():
        hits = [j for j, h in enumerate(lowered) if h in aliases]
        if len(hits) > 1 or (not hits and role != "y"):
            found = f"several columns {[table.names[j] for j in hits]}" if hits else "no column"
            raise DataFormatError(
                f"{table.path}, line {table.header_line}: expected exactly one column for "
                f"`{role}` (one of {list(aliases)}), found {found} in header {list(table.names)}. "
                f"Use format='csv' with src_col, dst_col and t_col."
            )
        if hits:
            picked[role] = hits[0]
    everything = table.fields(table.num_cols)
    msg_js = tuple(
        j
        for j in range(table.num_cols)
        if j not in picked.values() and _first_failure(everything.column(j), float) < 0
    )
    return _Roles(src=picked["src"], dst=picked["dst"], t=picked["t"], msg=msg_js, y=picked.get("y"),
                  time_format=time_format)


def read_csv_events(
    path: PathLike,
    *,
    src_col: Column,
    dst_col: Column,
    t_col: Column,
    feature_cols: Sequence[Column] = (),
    label_col: Optional[Column] = None,
    delimiter: Optional[str] = ",",
    has_header: bool = True,
    comment: Optional[str] = None,
    time_format: Optional[str] = None,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
) -> tuple[TemporalData, ReadInfo]:
    """Read any delimited event file with an explicit column mapping.

    Columns are header names (case-insensitive; needs ``has_header=True``) or 0-based
    indices (negative indices count from the end). Fields may be quoted (``"a,b"``).

    Args:
        path: the file (plain or gzip).
        src_col: column of source ids.
        dst_col: column of destination ids.
        t_col: column of timestamps: numbers, or text parsed with ``time_format``.
        feature_cols: numeric columns stacked, in this order, into ``msg`` float32
            ``[E, len(feature_cols)]``.
        label_col: integer column stored as ``y`` int64 ``[E]``.
        delimiter: one-character field separator; ``None`` splits on runs of
            whitespace.
        has_header: whether the first non-blank line names the columns.
        comment: prefix of comment lines to skip (e.g. ``"#"``); ``None`` for none.
        time_format: strptime format for textual timestamps, e.g.
            ``"%m/%d/%y %I:%M %p"`` for ``4/15/04 2:56 PM``. Times without a zone are
            read as UTC; the result is Unix seconds, int64 when whole.
        remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``); needed
            for textual ids.
        bipartite: keep sources and destinations in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.

    Returns:
        tuple: ``(data, info)``.

    Raises:
        TypeError: a column given as neither str nor int.
        ValueError: a column name or index that the file does not have.
        DataFormatError: a malformed line or an unparsable value.
        TemporalDataError: unsorted events with ``sort=False``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "msgs.csv"
        >>> _ = p.write_text("Source,Target,Timestamp\\n1,2,4/15/04 2:56 PM\\n")
        >>> data, info = read_csv_events(p, src_col="Source", dst_col="Target",
        ...     t_col="Timestamp", time_format="%m/%d/%y %I:%M %p")
        >>> data.t
        tensor([1082040960])
    """
    if delimiter is not None and len(delimiter) != 1:
        raise ValueError(
            f"`delimiter` must be one character or None (runs of whitespace), got {delimiter!r}."
        )
    spec = _Layout(delimiter=delimiter, has_header=has_header, comments=(comment,) if comment else (), min_cols=1,
                   layout="columns " + ", ".join(repr(c) for c in (src_col, dst_col, t_col)))

    def roles(table: _Table) -> _Roles:
        return _Roles(
            src=_resolve(table, src_col, "src_col"),
            dst=_resolve(table, dst_col, "dst_col"),
            t=_resolve(table, t_col, "t_col"),
            msg=tuple(_resolve(table, c, "feature_cols") for c in feature_cols),
            y=_resolve(table, label_col, "label_col") if label_col is not None else None,
            time_format=time_format,
        )
    return _read(path, "csv", spec, roles, remap=remap, bipartite=bipartite, sort=sort, directed=directed)


def read_events(
    path: PathLike,
    format: str,
    *,
    remap: Optional[bool] = None,
    bipartite: Optional[bool] = None,
    sort: bool = False,
    directed: bool = True,
    duplicates: str = "keep",
    cache_dir: Optional[PathLike] = None,
    **options: Any,
) -> tuple[TemporalData, ReadInfo]:
    """Read an event file in a registered format (:mod:`tgeval.data.formats`).

    Dispatches to the format's reader: :func:`read_dgb`, :func:`read_snap`,
    :func:`read_sociopatterns`, :func:`read_jodie`, :func:`read_tgb`, :func:`read_csv_events`
    or one registered by you; see those for each layout. ``options`` are that reader's own
    keywords (``time_format`` for ``"tgb"``; ``src_col``, ``dst_col``, ``t_col``, ... for
    ``"csv"``); an option the reader does not take raises :class:`TypeError`.

    Args:
        path: the file (plain or gzip).
        format: a registered format: ``"dgb"``, ``"snap"``, ``"sociopatterns"``, ``"jodie"``,
            ``"tgb"``, ``"csv"``, ...
        remap: renumber ids to ``0..n-1`` by first appearance in time order (default:
            only when ``bipartite``).
        bipartite: sources and destinations in disjoint id ranges (default: the reader's,
            ``True`` for ``"jodie"``, else ``False``).
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed`` for pair statistics.
        duplicates: ``"keep"`` (default) or ``"drop"`` the events equal in every field read
            to an earlier one (the first is kept); counted in ``info.num_duplicates`` either way.
        cache_dir: folder caching the parsed arrays, keyed by the file's sha256 and the options
            (:mod:`tgeval.data.cache`); default ``$TGEVAL_CACHE_DIR`` when set, else no cache.
            ``info.cache`` says whether it was used.

    Returns:
        tuple: ``(data, info)``: a validated ``TemporalData`` and a :class:`ReadInfo`.

    Raises:
        ValueError: an unknown ``format`` or ``duplicates`` rule.
        DataFormatError: a malformed line (file, line number, found, expected), or ids too
            sparse to keep without ``remap`` (module docstring).
        TemporalDataError: unsorted events with ``sort=False``.
    """
    registered = formats.entry(format)
    if duplicates not in DUPLICATE_RULES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_RULES}, got {duplicates!r}.")
    if bipartite is not None:  # else the reader's default
        options["bipartite"] = bipartite
    folder = cache.cache_folder(cache_dir)
    if folder is not None:
        target = registered.target if isinstance(registered.target, str) else repr(registered.target)
        key = cache.entry_key(path, {"format": format, "reader": target, "remap": remap, "sort": sort,
                                     "directed": directed, "duplicates": duplicates, **options})
        hit = cache.load_entry(folder, key, lambda arrays, record: _from_cache(path, arrays, record))
        if hit is not None:
            return hit
    data, info = registered.reader()(path, remap=remap, sort=sort, directed=directed, **options)
    if duplicates == "drop" and info.num_duplicates:
        first = _first_occurrences(data)
        data = TemporalData(**{key: value[first] for key, value in data.to_dict().items()})
    info = replace(info, duplicates=duplicates, num_events=data.num_events)
    if folder is None:
        return data, info
    cache.store_entry(folder, key, *_to_cache(data, info))
    return data, replace(info, cache="miss")
