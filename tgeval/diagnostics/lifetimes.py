r"""Lifetime classes and the surprise index of a time split (docs/protocol.md §4). **Uses the whole stream.**

Births and deaths come from :func:`tgeval.samplers.lifespans.node_lifetimes` and
:func:`~tgeval.samplers.lifespans.pair_lifetimes` (one ``scatter_reduce`` each). For a
split time :math:`t_{split}` each node (or pair) :math:`x` is historical (``H``:
:math:`d_x < t_{split}`), overlap (``O``: :math:`b_x < t_{split} \le d_x`) or inductive
(``I``: :math:`b_x \ge t_{split}`); an event exactly at :math:`t_{split}` counts as after the
split. The **surprise index** is

.. math::
    \mathrm{surprise} = \frac{|\{x : b_x \ge t_{split}\}|}{|\{x : d_x \ge t_{split}\}|} = \frac{I}{O + I},

``nan`` when no node (pair) lives at or after the split. :func:`surprise_table` reports it for
test ratios :math:`\alpha \in \{0.10, 0.15, \dots, 0.50\}` with :math:`t_{split}` the
:math:`(1 - \alpha)` quantile of the per-event timestamps (numpy's linear interpolation,
:func:`~tgeval.samplers.lifespans.split_time`). Events need not be time-sorted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch
from torch_geometric.data import TemporalData

from tgeval.samplers.lifespans import Lifetimes, node_lifetimes, pair_lifetimes, split_time

__all__ = ["SURPRISE_RATIOS", "ClassCounts", "class_counts", "surprise_index", "lifetime_summary", "surprise_table"]

Number = Union[int, float]

#: Test ratios of :func:`surprise_table`: 0.10, 0.15, ..., 0.50.
SURPRISE_RATIOS: tuple[float, ...] = tuple(round(0.10 + 0.05 * i, 2) for i in range(9))


@dataclass(frozen=True)
class ClassCounts:
    """How many nodes (or pairs) fall in each lifetime class for one split time.

    Attributes:
        historical (int): :math:`|\\{x : d_x < t_{split}\\}|`.
        overlap (int): :math:`|\\{x : b_x < t_{split} \\le d_x\\}|`.
        inductive (int): :math:`|\\{x : b_x \\ge t_{split}\\}|`.
    """

    historical: int
    overlap: int
    inductive: int

    @property
    def surprise(self) -> float:
        """``inductive / (overlap + inductive)``; ``nan`` when the denominator is 0."""
        alive = self.overlap + self.inductive
        return self.inductive / alive if alive else math.nan

    def to_dict(self) -> dict:
        """``{"historical", "overlap", "inductive", "surprise"}``; an undefined surprise is ``None`` (JSON null)."""
        s = self.surprise
        return {"historical": self.historical, "overlap": self.overlap, "inductive": self.inductive,
                "surprise": None if math.isnan(s) else s}


def class_counts(lifetimes: Lifetimes, t_split: Number) -> ClassCounts:
    """Counts of the H / O / I classes of ``lifetimes`` for ``t_split``.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> d = TemporalData(src=torch.tensor([0, 1, 2]), dst=torch.tensor([1, 2, 3]), t=torch.tensor([1, 2, 3]))
        >>> class_counts(node_lifetimes(d), 2)  # node 0 dies at 1; 1 lives 1..2; 2 lives 2..3; 3 born at 3
        ClassCounts(historical=1, overlap=1, inductive=2)
    """
    counts = torch.bincount(lifetimes.classes(t_split), minlength=3).tolist()
    return ClassCounts(int(counts[0]), int(counts[1]), int(counts[2]))


def surprise_index(lifetimes: Lifetimes, t_split: Number) -> float:
    """``I / (O + I)`` of ``lifetimes`` for ``t_split`` (``nan`` when ``O + I = 0``)."""
    return class_counts(lifetimes, t_split).surprise


def lifetime_summary(data: TemporalData, t_split: Number, *, directed: bool,
                     num_nodes: Optional[int] = None) -> dict:
    """Class counts and surprise of nodes and of pairs for one split time.

    Args:
        data: the whole stream (``src``, ``dst`` int64 ``[E]``, ``t`` ``[E]``; any order).
        t_split: the split time.
        directed: if ``False`` a pair is ``(min(u, v), max(u, v))``.
        num_nodes: id bound for pair keys (default ``max(src, dst) + 1``).

    Returns:
        dict: ``{"t_split", "nodes": {...}, "pairs": {...}}``, each inner dict as
        :meth:`ClassCounts.to_dict`.
    """
    nodes = class_counts(node_lifetimes(data), t_split)
    pairs = class_counts(pair_lifetimes(data, num_nodes, directed=directed), t_split)
    return {"t_split": float(t_split), "nodes": nodes.to_dict(), "pairs": pairs.to_dict()}


def surprise_table(data: TemporalData, *, directed: bool, ratios: Sequence[float] = SURPRISE_RATIOS,
                   num_nodes: Optional[int] = None) -> list[dict]:
    r"""Node and pair class counts and surprise for each test ratio :math:`\alpha` in ``ratios``.

    The lifetimes are computed once; :math:`t_{split}(\alpha)` is
    :func:`~tgeval.samplers.lifespans.split_time` ``(data, alpha)``.

    Returns:
        list of dict: one row per ratio, ``{"test_ratio", "t_split", "nodes": {...}, "pairs": {...}}``.
    """
    node_lt = node_lifetimes(data)
    pair_lt = pair_lifetimes(data, num_nodes, directed=directed)
    rows = []
    for alpha in ratios:
        t_split = split_time(data, float(alpha))
        rows.append({"test_ratio": float(alpha), "t_split": t_split,
                     "nodes": class_counts(node_lt, t_split).to_dict(),
                     "pairs": class_counts(pair_lt, t_split).to_dict()})
    return rows
