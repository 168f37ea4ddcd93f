"""The exact path: a whole :class:`~tgeval.data.io._table.Table` converted field by field.

It accepts what Python's ``int`` and ``float`` accept (and ``strptime`` with ``time_format``), except ``_``
digit separators in ids, times and labels (``1_0`` is no id 10), and names the file, line, column and fix of
every value it refuses. numpy's C parser is tried first where it
reads the same numbers (feature blocks), the field-by-field loop only to accept the rest or name the
failure.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Callable, Optional, Sequence

import numpy as np

from tgeval.data.io._columns import Column, Columns, Roles, non_whole
from tgeval.data.io._table import Fields, Table, looks_numeric
from tgeval.errors import DataFormatError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _written(convert: Callable[[str], object]) -> Callable[[str], object]:
    """``convert`` refusing ``_`` (Python's ``int`` and ``float`` read ``1_0`` as 10; no data file means that)."""
    def strict(text: str) -> object:
        if "_" in text:
            raise ValueError(f"{text!r} holds an underscore")
        return convert(text)
    return strict


#: the numbers of ids, times and labels as a data file writes them: ``int`` / ``float`` without ``_`` separators
_as_int, _as_float = _written(int), _written(float)


def first_failure(values: list[str], convert: Callable[[str], object]) -> int:
    """Index of the first value that ``convert`` rejects, ``-1`` if none (slow path)."""
    for i, value in enumerate(values):
        try:
            convert(value)
        except (ValueError, OverflowError):
            return i
    return -1


def _refused(fields: Fields, j: int, row: int, what: str, fix: str) -> DataFormatError:
    """The error of a field of column ``j`` that does not hold ``what``."""
    return DataFormatError(
        f"{fields.where(row)}: column {fields.name(j)!r} must hold {what}, found {fields.column(j)[row].strip()!r}. "
        f"{fix}"
    )


def _floats(fields: Fields, j: int, what: str, fix: str, convert: Callable[[str], float] = _as_float
            ) -> np.ndarray:
    """float64 ``[rows]`` of column ``j`` (read with ``convert``); raises on unparsable or non-finite fields
    (``fix``: the advice when most of the column fails, which then holds something else; a few failing rows among
    numbers are the rows to fix)."""
    values = fields.column(j)
    try:
        out = np.fromiter(map(convert, values), dtype=np.float64, count=len(values))
    except ValueError:
        bad = sum(1 for value in values if not looks_numeric(value))
        if 0 < 2 * bad < len(values):
            fix = (f"The column's other {len(values) - 1:,} values are numbers: fix or remove that line (rows are "
                   f"never skipped silently)." if bad == 1 else
                   f"{bad:,} of the column's {len(values):,} values are not numbers (the first is named), the others "
                   f"are: fix or remove those lines (rows are never skipped silently).")
        raise _refused(fields, j, first_failure(values, convert), what, fix) from None
    bad = ~np.isfinite(out)
    if bad.any():
        raise _refused(fields, j, int(np.flatnonzero(bad)[0]), f"finite {what}",
                       "Repair or remove events with missing values.")
    return out


def _feature_block(table: Table, columns: Sequence[int]) -> np.ndarray:
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
    return np.stack([_floats(fields, j, "numeric event features", fix, float) for j in columns], axis=1)


def _float32_features(table: Table, columns: Sequence[int]) -> np.ndarray:
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
        return np.fromiter(map(_as_int, values), dtype=np.int64, count=len(values))
    except (ValueError, OverflowError):
        return None


def _whole(fields: Fields, j: int, what: str, fix: str) -> np.ndarray:
    """int64 column; accepts ``12`` and ``12.0``, raises on anything else."""
    exact = _integers(fields.column(j))
    if exact is not None:
        return exact
    as_float = _floats(fields, j, what, fix)
    fractional = non_whole(as_float)
    if fractional.size:
        raise _refused(fields, j, int(fractional[0]), what, fix)
    return as_float.astype(np.int64)


def _names(fields: Fields, j: int) -> np.ndarray:
    """str array of the ids of column ``j`` as written."""
    return np.array([v.strip() for v in fields.column(j)])


def _ids(fields: Fields, j: int, *, allow_text: bool) -> np.ndarray:
    """int64 ids, or (``allow_text``) a str array of the ids as written when some id is not a number, or
    is an integer beyond int64 (ids to renumber: exact as names, where int64 or float64 would not be)."""
    values = fields.column(j)
    if allow_text and _integers(values) is None and (first_failure(values, _as_float) >= 0
                                                     or first_failure(values, _as_int) < 0):
        return _names(fields, j)
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


def _times(fields: Fields, j: int, time_format: Optional[str]) -> tuple[np.ndarray, int]:
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
        return (as_float if non_whole(as_float).size else as_float.astype(np.int64)), merged
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


def resolve(table: Table, column: Column, role: str) -> int:
    """0-based index of ``column`` (a header name, case-insensitive, or an index).

    Raises:
        TypeError: a column given as neither str nor int.
        DataFormatError: a column name or index that the file does not have.
    """
    if isinstance(column, bool) or not isinstance(column, (int, str)):
        raise TypeError(f"`{role}` must be a column name (str) or a 0-based index (int), got {column!r}.")
    if isinstance(column, int):
        if not -table.num_cols <= column < table.num_cols:
            raise DataFormatError(
                f"`{role}`={column} is out of range: {table.path} has {table.num_cols} columns "
                f"(indices 0..{table.num_cols - 1})."
            )
        return column % table.num_cols
    if table.header is None:
        raise DataFormatError(
            f"`{role}`={column!r} names a column, but {table.path} is read without a header "
            f"(has_header=False). Pass a 0-based index instead."
        )
    lowered = [h.lower() for h in table.header]
    if column.lower() not in lowered:
        raise DataFormatError(
            f"`{role}`={column!r} is not a column of {table.path}; the header has {list(table.header)}.")
    return lowered.index(column.lower())


def exact_columns(table: Table, roles: Roles, remap: bool) -> Columns:
    """The chosen columns of a whole table converted field by field; ``remap`` allows textual ids.

    Raises:
        DataFormatError: a field its column cannot hold (the message names line, column and fix).
    """
    fields = table.fields(max(roles.integers) + 1)
    src = _ids(fields, roles.src, allow_text=remap)
    dst = _ids(fields, roles.dst, allow_text=remap)
    if src.dtype.kind != dst.dtype.kind:  # one side textual: both are names, as written
        src, dst = _names(fields, roles.src), _names(fields, roles.dst)
    t, merged_times = _times(fields, roles.t, roles.time_format)
    return Columns(
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
        parser="python",
    )
