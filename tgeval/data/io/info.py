"""What a reader did with a file: :class:`ReadInfo`, the second value every reader returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torch import Tensor


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
        parser (str, optional): what converted the file's fields, which never changes the result: ``"pandas"``
            (pandas' C reader, where pandas is installed, on the fast path of :mod:`tgeval.data.io`), ``"numpy"``
            (numpy's C parser, on the fast path, for some or all blocks), ``"python"`` (the exact path, field by
            field); ``None`` when the arrays came from the cache.
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
    parser: Optional[str] = None
