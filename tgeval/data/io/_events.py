"""From converted columns to validated events: the time order, the id rules (remap, bipartite ranges,
dense ids) and the :class:`~tgeval.data.io.info.ReadInfo`; and :func:`read_file`, which every reader
calls: the fast path first, the exact path at any doubt.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Callable, Optional

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.io import _exact, _fast
from tgeval.data.io._columns import Columns, _Doubt, Roles
from tgeval.data.io._duplicates import first_occurrences
from tgeval.data.io._table import Layout, Table, parse_table
from tgeval.data.io._text import PathLike, check_event_file, head_text
from tgeval.data.io.info import ReadInfo
from tgeval.data.validation import validate
from tgeval.errors import DataFormatError, TemporalDataError

#: ids kept as written must be dense enough: the largest id + 1 (the node slots every model and
#: catalog allocates) may exceed SPARSE_ID_SLACK only up to SPARSE_ID_FACTOR times the distinct ids
SPARSE_ID_FACTOR = 16
SPARSE_ID_SLACK = 2**20

#: time column of each headerless format (named when an unsorted file is sorted in another column)
_HEADERLESS_TIME_COLUMN = {"snap": 2, "sociopatterns": 0}


@dataclass(frozen=True)
class Reading:
    """One read of a file: the format's name, its layout, how it picks its columns from the parsed table, and
    the shared keywords of every reader (``remap`` resolved: by default only when ``bipartite``)."""

    format: str
    layout: Layout
    pick: Callable[[Table], Roles]
    remap: bool
    bipartite: bool
    sort: bool
    directed: bool

    @classmethod
    def of(cls, format: str, layout: Layout, pick: Callable[[Table], Roles], *, remap: Optional[bool],
           bipartite: bool, sort: bool, directed: bool) -> Reading:
        """The reading a reader's keywords ask for; ``remap=None`` is ``bipartite``."""
        return cls(format, layout, pick, bipartite if remap is None else remap, bipartite, sort, directed)


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


def _num_present(ids: np.ndarray, size: int) -> int:
    """Distinct values of ids in ``[0, size)`` (``size`` is at most ``max(2^20, 32 E)`` once ids are dense)."""
    seen = np.zeros(size, dtype=bool)
    seen[ids] = True
    return int(np.count_nonzero(seen))


def _check_dense_ids(path: str, src: np.ndarray, dst: np.ndarray, line: Callable[[int], int]) -> None:
    """Refuse ids so sparse that ``num_nodes = largest + 1`` slots would waste memory (e.g. ids near
    2^40 for a few thousand nodes would make a model allocate terabytes); one id far beyond all others is named
    by its line (``line(row)``), as a row to fix."""
    largest = int(max(int(src.max()), int(dst.max()))) if src.size else -1
    if largest + 1 <= SPARSE_ID_SLACK:
        return
    ids = np.concatenate([src, dst])
    distinct = _num_distinct(ids)
    if largest + 1 > SPARSE_ID_FACTOR * distinct:
        rest = ids[ids != largest]
        if rest.size and int(rest.max()) + 1 <= SPARSE_ID_FACTOR * distinct:  # one id far beyond all others
            row = int(np.flatnonzero(ids == largest)[0]) % src.size
            raise DataFormatError(
                f"{path}, line {line(row)}: holds the id {largest:,}, far beyond every other id (the largest "
                f"of which is {int(rest.max()):,}; {distinct:,} distinct ids occur), so every model and catalog would "
                f"hold {largest + 1:,} node slots. Fix that line if the id is wrong; if the ids are names, pass "
                f"remap=True (--remap) to number them 0..{distinct - 1}.")
        raise DataFormatError(
            f"{path}: the ids are sparse: the largest is {largest:,} but only {distinct:,} distinct ids occur, so "
            f"every model and catalog would hold {largest + 1:,} node slots. Pass remap=True (--remap) to number "
            f"the ids 0..{distinct - 1} (the original ids are kept in info.node_ids).")


def _sorted_time_column(table: Table, fmt: str) -> Optional[tuple[str, int]]:
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


def _one_row_out_of_order(t: np.ndarray, decreasing: np.ndarray) -> Optional[int]:
    """The row whose removal leaves ``t`` sorted, when ``t`` descends once (at ``decreasing``) between sorted
    neighbours on both sides of that row; else ``None``."""
    if decreasing.size != 1:
        return None
    row = int(decreasing[0]) + 1  # t[row] < t[row - 1]
    for candidate in (row, row - 1):  # too small, or its predecessor too large
        if 0 < candidate < t.size - 1 and t[candidate - 1] <= t[candidate + 1]:
            return candidate
    return None


def _time_sorted(table: Table, roles: Roles, columns: Columns, reading: Reading) -> tuple[Columns, bool]:
    """``columns`` in time order, and whether they had to be sorted (``reading.sort``; else unsorted events
    raise :class:`~tgeval.errors.TemporalDataError` naming the two lines)."""
    t = columns.t
    decreasing = np.flatnonzero(t[1:] < t[:-1])
    if not decreasing.size:
        return columns, False
    if not reading.sort:
        row = int(decreasing[0]) + 1
        line, previous = columns.line(row), columns.line(row - 1)
        other = _sorted_time_column(table, reading.format)
        if other is None:
            hint = "Pass sort=True to stable-sort the events by time."
        else:
            hint = (f"Column {other[1] + 1} is non-decreasing, where {other[0]!r} files hold time: if this is "
                    f"one, read it with format={other[0]!r} (--format {other[0]}); if it is unsorted, pass sort=True "
                    f"(--sort).")
        outlier = _one_row_out_of_order(t, decreasing) if other is None else None
        if outlier is not None:  # one line out of place among sorted ones: that line, not its neighbours
            before, after = (columns.line(i) for i in (outlier - 1, outlier + 1))
            raise TemporalDataError(
                f"{table.path}: `t` (column {table.names[roles.t]!r} of format {reading.format!r}) must be "
                f"non-decreasing, but line {columns.line(outlier)} (t={t[outlier]}) lies out of order between line "
                f"{before} (t={t[outlier - 1]}) and line {after} (t={t[outlier + 1]}), the rest being sorted. Fix "
                f"or remove that line; if its time is right, pass sort=True (--sort).")
        raise TemporalDataError(
            f"{table.path}: `t` (column {table.names[roles.t]!r} of format {reading.format!r}) must be "
            f"non-decreasing, but line {line} (t={t[row]}) follows line {previous} (t={t[row - 1]}). {hint}"
        )
    perm = np.argsort(t, kind="stable")
    return replace(
        columns, src=columns.src[perm], dst=columns.dst[perm], t=t[perm],
        msg=None if columns.msg is None else columns.msg[perm], y=None if columns.y is None else columns.y[perm],
        line_nos=None if columns.line_nos is None else [columns.line_nos[i] for i in perm.tolist()]), True


def build(table: Table, roles: Roles, columns: Columns, reading: Reading) -> tuple[TemporalData, ReadInfo]:
    """Check order, remap ids and validate (the package's rules) the converted columns of ``table`` (its first
    lines on the fast path: header, names). ``roles.items_after_sources`` (bipartite, no remap): destination
    ids are shifted past the largest source id, ``dst + max(src) + 1`` (TGB's numbering of JODIE's
    separately numbered users and items).

    Raises:
        TemporalDataError: unsorted events without ``reading.sort``.
        DataFormatError: negative or too sparse ids kept as written, or bipartite ids kept as written whose
            sources are not all below the destinations.
        _Doubt: on the fast path (``columns.line_nos is None``), where an error must name a line.
    """
    if roles.items_after_sources:
        columns = replace(columns, dst=columns.dst + (int(columns.src.max()) + 1 if columns.src.size else 0))
    columns, sorted_on_read = _time_sorted(table, roles, columns, reading)
    src, dst = columns.src, columns.dst

    node_ids: Optional[Tensor] = None
    node_names: Optional[tuple[str, ...]] = None
    dst_offset: Optional[int] = None
    if reading.remap:
        if reading.bipartite:
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
        _check_dense_ids(table.path, src, dst, columns.line)
        if reading.bipartite:
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
        t=torch.from_numpy(np.ascontiguousarray(columns.t)),
    )
    if columns.msg is not None:
        data.msg = torch.from_numpy(columns.msg)
    if columns.y is not None:
        data.y = torch.from_numpy(columns.y)
    data = validate(data)

    names = {"src": table.names[roles.src], "dst": table.names[roles.dst], "t": table.names[roles.t]}
    if roles.y is not None:
        names["y"] = table.names[roles.y]
    num_nodes = int(max(int(data.src.max()), int(data.dst.max())) + 1)
    info = ReadInfo(
        path=table.path,
        format=reading.format,
        num_events=int(data.t.numel()),
        num_lines=columns.num_lines,
        header=table.header,
        comment_lines=columns.comment_lines,
        blank_lines=columns.blank_lines,
        columns=names,
        msg_columns=tuple(table.names[j] for j in roles.msg),
        ignored_columns=tuple(table.names[j] for j in range(table.num_cols) if j not in roles.used),
        time_format=roles.time_format,
        sorted_on_read=sorted_on_read,
        remapped=reading.remap,
        bipartite=reading.bipartite,
        directed=reading.directed,
        num_nodes=num_nodes,
        num_sources=_num_present(data.src.numpy(), num_nodes),
        num_destinations=_num_present(data.dst.numpy(), num_nodes),
        dst_offset=dst_offset,
        node_ids=node_ids,
        node_names=node_names,
        num_duplicates=int(data.num_events - first_occurrences(data).sum()),
        num_merged_times=int(columns.merged_times),
        parser=columns.parser,
    )
    return data, info


def read_file(path: PathLike, reading: Reading) -> tuple[TemporalData, ReadInfo]:
    """Read ``path`` as ``reading`` says: on the fast path, and at any doubt or error of it on the exact path,
    which then accepts the file or raises the error that names the problem.

    The fast path's columns equal the exact path's, so an error :func:`build` raises from them (ids too
    sparse, data :func:`~tgeval.data.validation.validate` refuses) is the exact path's too, and is raised
    at once; only errors that name a line (or arise before the whole file was parsed) read the file again.

    Raises:
        InputPathError: ``path`` does not exist or is a folder (:func:`~tgeval.data.io._text.check_event_file`).
    """
    check_event_file(path)
    try:
        head = parse_table(path, reading.layout, head_text(path))
        roles = reading.pick(head)
        columns = _fast.fast_columns(path, reading.layout, head, roles)
    except (_Doubt, ValueError, TypeError, OSError, EOFError, zlib.error):
        pass
    else:
        try:
            return build(head, roles, columns, reading)
        except _Doubt:
            pass
    table = parse_table(path, reading.layout)
    roles = reading.pick(table)
    return build(table, roles, _exact.exact_columns(table, roles, reading.remap), reading)
