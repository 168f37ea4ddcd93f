"""What both parsing paths share: the column mapping a reader picks (:class:`Roles`), the converted
columns they produce (:class:`Columns`), and the fast path's way of giving up (:class:`_Doubt`).

The fast path (:mod:`tgeval.data.io._fast`) and the exact path (:mod:`tgeval.data.io._exact`) give equal
columns for every file the fast path accepts; only the exact path knows the line of each event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from tgeval.errors import DataFormatError

#: a column of a file: a header name (case-insensitive) or a 0-based index
Column = Union[str, int]

#: integers from here on are not all exact in float64
MAX_EXACT_FLOAT_INT = 2**53


class _Doubt(Exception):
    """The fast path cannot vouch for a file; the exact path reads it (and names any problem)."""


@dataclass(frozen=True)
class Roles:
    """The 0-based columns a reader takes each field from, and how it reads them."""

    src: int
    dst: int
    t: int
    msg: tuple[int, ...] = ()
    y: Optional[int] = None
    time_format: Optional[str] = None
    items_after_sources: bool = False  # bipartite without remap: dst + max(src) + 1 (TGB's numbering of JODIE)

    def __post_init__(self) -> None:
        roles = {"src_col": self.src, "dst_col": self.dst, "t_col": self.t}
        for a, b in (("src_col", "dst_col"), ("src_col", "t_col"), ("dst_col", "t_col")):
            if roles[a] == roles[b]:
                raise DataFormatError(f"{a} and {b} name the same column (index {roles[a]}), so every event would "
                                      f"take both from it (a source equal to its destination, or ids as times). "
                                      f"Map {a} and {b} to two different columns.")

    @property
    def integers(self) -> list[int]:
        """The columns of integers: ``src``, ``dst``, ``t`` and ``y`` when there is one."""
        return [self.src, self.dst, self.t] + ([] if self.y is None else [self.y])

    @property
    def used(self) -> set[int]:
        """Every column read."""
        return {*self.integers, *self.msg}


@dataclass(frozen=True)
class Columns:
    """The converted columns of a file and its line counts; ``line_nos`` (the 1-based line of each event)
    only on the exact path, the one that names lines in errors; ``parser``: what converted the fields
    (:attr:`~tgeval.data.io.info.ReadInfo.parser`)."""

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
    parser: str

    def line(self, row: int) -> int:
        """The 1-based line of event ``row``; raises :class:`_Doubt` on the fast path, which does not know it."""
        if self.line_nos is None:
            raise _Doubt
        return self.line_nos[row]


def non_whole(values: np.ndarray) -> np.ndarray:
    """Positions of a float64 array that are not exactly representable whole numbers."""
    return np.flatnonzero((np.floor(values) != values) | (np.abs(values) >= MAX_EXACT_FLOAT_INT))
