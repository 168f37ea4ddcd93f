"""Readers that turn event files into validated :class:`~torch_geometric.data.TemporalData`.

Every reader returns ``(data, info)``:

* ``data`` passes :func:`tgeval.data.validate.validate`: ``src``, ``dst`` int64 ``[E]``
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

Parsing needs only Python and numpy: the text is read once, ids, times and labels are
converted with ``np.fromiter`` over split fields, feature blocks with
:func:`numpy.loadtxt`; the field-by-field path runs only to locate a bad value.
``ml_wikipedia.txt`` (157k lines) loads in 0.15-0.35 s on a 2-core machine.
"""

from __future__ import annotations

import csv
import gzip
import os
import zlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.choices import DUPLICATE_RULES
from tgeval.data import formats
from tgeval.data.validate import validate
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




def _first_occurrences(data: TemporalData) -> Tensor:
    """bool ``[E]``: the event is the first in the file equal to it in every field read.

    Events are first grouped by ``(src, dst, t)``; only those whose group repeats are compared
    on every field (``msg``, ``y``), so wide features cost nothing when there are few repeats."""
    keys = torch.stack([data.src, data.dst, data.t.view(torch.int64) if data.t.is_floating_point() else data.t], 1)
    _, group, size = torch.unique(keys, dim=0, return_inverse=True, return_counts=True)
    repeated = torch.nonzero(size[group] > 1).flatten()
    columns = [group[repeated, None]]
    for key in ("msg", "y"):
        if key in data:
            value = data[key].reshape(data.num_events, -1)[repeated]
            bits = value.view(torch.int32) if value.dtype == torch.float32 else value.view(torch.int64)
            columns.append(bits.to(torch.int64))
    distinct, inverse = torch.unique(torch.cat(columns, 1), dim=0, return_inverse=True)
    first = torch.full((distinct.size(0),), repeated.numel(), dtype=torch.long)
    first.scatter_reduce_(0, inverse, torch.arange(repeated.numel()), reduce="amin")  # repeated is ascending
    keep = torch.ones(data.num_events, dtype=torch.bool)
    keep[repeated] = False
    keep[repeated[first]] = True
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


def _parse_table(
    path: PathLike,
    *,
    delimiter: Optional[str],
    has_header: bool,
    comments: tuple[str, ...],
    min_cols: int,
    layout: str,
    names: Optional[Callable[[int], tuple[str, ...]]] = None,
) -> _Table:
    """Split a file into fields; every data line must have the same number of fields.

    The expected count is the header's when there is one and ``names`` is not given,
    else the first data line's. ``names(num_cols)`` names the columns of formats whose
    header does not match the fields (JODIE). ``layout`` describes the expected fields
    in error messages.
    """
    name = os.fspath(path)
    lines = _read_text(path).split("\n")
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


# ------------------------------------------------------------------------ event layer


def _first_appearance(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ids in order of first occurrence, and the new id of every element."""
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return unique[order], rank[inverse.reshape(-1)]


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
    distinct = int(np.unique(np.concatenate([src, dst])).size)
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
    *,
    src_j: int,
    dst_j: int,
    t_j: int,
    msg_js: Sequence[int],
    y_j: Optional[int],
    time_format: Optional[str],
    remap: Optional[bool],
    bipartite: bool,
    sort: bool,
    directed: bool,
    items_after_sources: bool = False,
) -> tuple[TemporalData, ReadInfo]:
    """Convert the chosen columns, check order, remap ids and validate (module rules).
    ``items_after_sources`` (bipartite, no remap): destination ids are shifted past the largest source
    id, ``dst + max(src) + 1`` (TGB's numbering of JODIE's separately numbered users and items)."""
    do_remap = bipartite if remap is None else remap
    fields = table.fields(max(src_j, dst_j, t_j, -1 if y_j is None else y_j) + 1)
    src = _ids(fields, src_j, allow_text=do_remap)
    dst = _ids(fields, dst_j, allow_text=do_remap)
    if items_after_sources:
        dst = dst + (int(src.max()) + 1 if src.size else 0)
    if src.dtype.kind != dst.dtype.kind:  # one side textual: both are names, as written
        src, dst = (np.array([v.strip() for v in fields.column(j)]) for j in (src_j, dst_j))
    t, merged_times = _times(fields, t_j, time_format)
    msg = _float32_features(table, msg_js) if msg_js else None
    y = _whole(fields, y_j, "integer labels", "Labels are stored as int64 `y`.") if y_j is not None else None

    decreasing = np.flatnonzero(t[1:] < t[:-1])
    if decreasing.size and not sort:
        row = int(decreasing[0]) + 1
        other = _sorted_time_column(table, fmt)
        if other is None:
            hint = "Pass sort=True to stable-sort the events by time."
        else:
            hint = (f"Column {other[1] + 1} is non-decreasing, where {other[0]!r} files hold time: if this is "
                    f"one, read it with format={other[0]!r} (--format {other[0]}); if it is unsorted, pass sort=True "
                    f"(--sort).")
        raise TemporalDataError(
            f"{table.path}: `t` (column {table.names[t_j]!r} of format {fmt!r}) must be non-decreasing, but line "
            f"{table.line_nos[row]} (t={t[row]}) follows line {table.line_nos[row - 1]} (t={t[row - 1]}). {hint}"
        )
    if decreasing.size:
        perm = np.argsort(t, kind="stable")
        src, dst, t = src[perm], dst[perm], t[perm]
        msg = msg[perm] if msg is not None else None
        y = y[perm] if y is not None else None
        line_nos = [table.line_nos[i] for i in perm.tolist()]
    else:
        line_nos = table.line_nos

    node_ids: Optional[Tensor] = None
    node_names: Optional[tuple[str, ...]] = None
    dst_offset: Optional[int] = None
    if do_remap:
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
                    f"{table.path}, line {line_nos[row]}: {role} ids must be >= 0, found "
                    f"{int(ids[row])}. Pass remap=True to number ids 0..n-1."
                )
        _check_dense_ids(table.path, src, dst)
        if bipartite:
            top_src = int(np.argmax(src))
            low_dst = int(np.argmin(dst))
            if src[top_src] >= dst[low_dst]:
                raise DataFormatError(
                    f"{table.path}: bipartite=True with remap=False needs every source id below "
                    f"every destination id, but source {int(src[top_src])} (line {line_nos[top_src]}) "
                    f">= destination {int(dst[low_dst])} (line {line_nos[low_dst]}). Pass remap=True "
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

    columns = {"src": table.names[src_j], "dst": table.names[dst_j], "t": table.names[t_j]}
    if y_j is not None:
        columns["y"] = table.names[y_j]
    used = {src_j, dst_j, t_j, *msg_js, *([y_j] if y_j is not None else [])}
    info = ReadInfo(
        path=table.path,
        format=fmt,
        num_events=int(data.t.numel()),
        num_lines=table.num_lines,
        header=table.header,
        comment_lines=table.comment_lines,
        blank_lines=table.blank_lines,
        columns=columns,
        msg_columns=tuple(table.names[j] for j in msg_js),
        ignored_columns=tuple(table.names[j] for j in range(table.num_cols) if j not in used),
        time_format=time_format,
        sorted_on_read=bool(decreasing.size),
        remapped=do_remap,
        bipartite=bipartite,
        directed=directed,
        num_nodes=int(max(int(data.src.max()), int(data.dst.max())) + 1),
        num_sources=int(np.unique(data.src.numpy()).size),
        num_destinations=int(np.unique(data.dst.numpy()).size),
        dst_offset=dst_offset,
        node_ids=node_ids,
        node_names=node_names,
        num_duplicates=int(data.num_events - _first_occurrences(data).sum()),
        num_merged_times=int(merged_times),
    )
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
    table = _parse_table(
        path, delimiter=",", has_header=True, comments=(), min_cols=3, layout="header ',u,i,ts,label,idx'"
    )
    _refuse_other_format(table, "dgb")
    lowered = [h.lower() for h in table.names]
    missing = [name for name in ("u", "i", "ts") if name not in lowered]
    if missing:
        raise DataFormatError(
            f"{table.path}, line {table.header_line}: expected a DGB header with columns "
            f"'u', 'i', 'ts' (e.g. ',u,i,ts,label,idx'), found {','.join(table.names)!r} "
            f"(missing {missing}). Use format='csv' with an explicit column mapping."
        )
    return _build(
        table,
        "dgb",
        src_j=lowered.index("u"),
        dst_j=lowered.index("i"),
        t_j=lowered.index("ts"),
        msg_js=(),
        y_j=lowered.index("label") if "label" in lowered else None,
        time_format=None,
        remap=remap,
        bipartite=bipartite,
        sort=sort,
        directed=directed,
    )


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
    table = _parse_table(
        path,
        delimiter=None,
        has_header=False,
        comments=("#", "%"),
        min_cols=3,
        layout="SRC DST TIME",
        names=lambda num_cols: ("src", "dst", "t") + tuple(f"extra{k}" for k in range(num_cols - 3)),
    )
    if table.num_cols == 5 and table.lines:  # SocioPatterns' layout: TIME i j class_i class_j, classes as text
        first = table.lines[0].split()
        if not _looks_numeric(first[3]) and not _looks_numeric(first[4]):
            raise DataFormatError(
                f"{table.path}, line {table.line_nos[0]}: 5 fields with text in the last two ({first[3]!r}, "
                f"{first[4]!r}) are a 'sociopatterns' file's (TIME i j class_i class_j), not 'snap' (SRC DST TIME): "
                f"read it with format='sociopatterns' (--format sociopatterns).")
    return _build(
        table,
        "snap",
        src_j=0,
        dst_j=1,
        t_j=2,
        msg_js=(),
        y_j=None,
        time_format=None,
        remap=remap,
        bipartite=bipartite,
        sort=sort,
        directed=directed,
    )


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
    table = _parse_table(
        path,
        delimiter="\t",
        has_header=False,
        comments=(),
        min_cols=3,
        layout="TIME i j class_i class_j",
        names=lambda num_cols: _SOCIOPATTERNS_COLUMNS[:num_cols]
        + tuple(f"extra{k}" for k in range(num_cols - len(_SOCIOPATTERNS_COLUMNS))),
    )
    return _build(
        table,
        "sociopatterns",
        src_j=1,
        dst_j=2,
        t_j=0,
        msg_js=(),
        y_j=None,
        time_format=None,
        remap=remap,
        bipartite=bipartite,
        sort=sort,
        directed=directed,
    )


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
    table = _jodie_table(path)
    _refuse_other_format(table, "jodie")
    return _build(
        table,
        "jodie",
        src_j=0,
        dst_j=1,
        t_j=2,
        msg_js=tuple(range(4, table.num_cols)),
        y_j=3,
        time_format=None,
        remap=remap,
        bipartite=bipartite,
        sort=sort,
        directed=directed,
    )


def _jodie_table(path: PathLike) -> "_Table":
    """A JODIE CSV split into fields: its header names the feature list as one column."""
    return _parse_table(
        path,
        delimiter=",",
        has_header=True,
        comments=(),
        min_cols=4,
        layout="user_id,item_id,timestamp,state_label,features...",
        names=lambda num_cols: _JODIE_COLUMNS + tuple(f"f{k}" for k in range(num_cols - 4)),
    )


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
        table = _jodie_table(path)
        return _build(table, "tgb", src_j=0, dst_j=1, t_j=2, msg_js=tuple(range(4, table.num_cols)), y_j=3,
                      time_format=None, remap=False, bipartite=True, sort=sort, directed=directed,
                      items_after_sources=True)
    table = _parse_table(
        path, delimiter=",", has_header=True, comments=(), min_cols=3, layout="header such as 'ts,src,dst,w'"
    )
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
    return _build(
        table,
        "tgb",
        src_j=picked["src"],
        dst_j=picked["dst"],
        t_j=picked["t"],
        msg_js=msg_js,
        y_j=picked.get("y"),
        time_format=time_format,
        remap=remap,
        bipartite=bipartite,
        sort=sort,
        directed=directed,
    )


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
    table = _parse_table(
        path,
        delimiter=delimiter,
        has_header=has_header,
        comments=(comment,) if comment else (),
        min_cols=1,
        layout="columns " + ", ".join(repr(c) for c in (src_col, dst_col, t_col)),
    )
    return _build(
        table,
        "csv",
        src_j=_resolve(table, src_col, "src_col"),
        dst_j=_resolve(table, dst_col, "dst_col"),
        t_j=_resolve(table, t_col, "t_col"),
        msg_js=tuple(_resolve(table, c, "feature_cols") for c in feature_cols),
        y_j=_resolve(table, label_col, "label_col") if label_col is not None else None,
        time_format=time_format,
        remap=remap,
        bipartite=bipartite,
        sort=sort,
        directed=directed,
    )


def read_events(
    path: PathLike,
    format: str,
    *,
    remap: Optional[bool] = None,
    bipartite: Optional[bool] = None,
    sort: bool = False,
    directed: bool = True,
    duplicates: str = "keep",
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

    Returns:
        tuple: ``(data, info)``: a validated ``TemporalData`` and a :class:`ReadInfo`.

    Raises:
        ValueError: an unknown ``format`` or ``duplicates`` rule.
        DataFormatError: a malformed line (file, line number, found, expected), or ids too
            sparse to keep without ``remap`` (module docstring).
        TemporalDataError: unsorted events with ``sort=False``.
    """
    reader = formats.entry(format).reader()
    if duplicates not in DUPLICATE_RULES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_RULES}, got {duplicates!r}.")
    if bipartite is not None:  # else the reader's default
        options["bipartite"] = bipartite
    data, info = reader(path, remap=remap, sort=sort, directed=directed, **options)
    if duplicates == "drop" and info.num_duplicates:
        first = _first_occurrences(data)
        data = TemporalData(**{key: value[first] for key, value in data.to_dict().items()})
    return data, replace(info, duplicates=duplicates, num_events=data.num_events)
