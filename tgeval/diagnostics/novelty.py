r"""Novelty of a stream: the per-timestamp novelty ratio and the strata shares of segments (docs/protocol.md §3).

With :math:`E_t` the set of **distinct** pairs at timestamp :math:`t` and :math:`E_{<t}` the
union of all earlier :math:`E_s`,

.. math::
    \nu_t = \frac{|E_t \setminus E_{<t}|}{|E_t|}.

The denominator counts distinct pairs, not event records (an event-weighted ratio is a
different quantity and is not offered here). Pair :math:`x` is new at :math:`t` exactly when
its birth :math:`b_x = t`, so the series comes from one ``unique`` over (pair, timestamp)
without a Python loop. Events need not be time-sorted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.split import Split
from tgeval.data.strata import NEW_NODE, NEW_PAIR, REPEATED, event_strata, pair_keys
from tgeval.errors import TemporalDataError

__all__ = ["NoveltySeries", "novelty_series", "segment_strata_shares", "novelty_summary"]


@dataclass(frozen=True)
class NoveltySeries:
    r"""The novelty ratio per distinct timestamp.

    Attributes:
        t: ``[T]`` sorted distinct timestamps (dtype of the stream's ``t``).
        novelty: float64 ``[T]``, :math:`\nu_t`.
        num_pairs: int64 ``[T]``, :math:`|E_t|` (distinct pairs at ``t``).
        num_new_pairs: int64 ``[T]``, :math:`|E_t \setminus E_{<t}|`.
    """

    t: Tensor
    novelty: Tensor
    num_pairs: Tensor
    num_new_pairs: Tensor

    def to_rows(self) -> list[tuple[float, float, int]]:
        """``(t, nu_t, |E_t|)`` per timestamp, as Python numbers."""
        return list(zip(self.t.tolist(), self.novelty.tolist(), self.num_pairs.tolist()))


def _num_nodes(data: TemporalData, num_nodes: Optional[int]) -> int:
    largest = int(torch.maximum(data.src.max(), data.dst.max())) + 1 if data.src.numel() else 1
    n = largest if num_nodes is None else int(num_nodes)
    if n < largest:
        raise TemporalDataError(f"num_nodes={n} is smaller than the largest node id + 1 ({largest}) of the stream.")
    return n


def novelty_series(data: TemporalData, num_nodes: Optional[int] = None, *, directed: bool) -> NoveltySeries:
    r"""The novelty ratio :math:`\nu_t` of every distinct timestamp of ``data``.

    Args:
        data: ``src``, ``dst`` int64 ``[E]``, ``t`` ``[E]`` (any order).
        num_nodes: id bound for pair keys (default ``max(src, dst) + 1``).
        directed: if ``False`` a pair is ``(min(u, v), max(u, v))``.

    Returns:
        NoveltySeries: one entry per distinct timestamp.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> d = TemporalData(src=torch.tensor([0, 0, 0, 1]), dst=torch.tensor([1, 1, 1, 2]),
        ...                  t=torch.tensor([1, 1, 2, 2]))
        >>> novelty_series(d, directed=True).novelty.tolist()  # t=1: {(0,1)} new; t=2: {(0,1),(1,2)}, one new
        [1.0, 0.5]
    """
    n = _num_nodes(data, num_nodes)
    times, group = torch.unique(data.t, return_inverse=True)
    pairs, pair = torch.unique(pair_keys(data.src, data.dst, n, directed=directed), return_inverse=True)
    num_groups = max(times.numel(), 1)
    cells = torch.unique(pair * num_groups + group)  # distinct (pair, timestamp), sorted by pair then time
    cell_pair, cell_group = cells // num_groups, cells % num_groups
    first = torch.ones_like(cells, dtype=torch.bool)
    first[1:] = cell_pair[1:] != cell_pair[:-1]  # the earliest timestamp of each pair: its birth
    size = torch.bincount(cell_group, minlength=times.numel())
    new = torch.bincount(cell_group[first], minlength=times.numel())
    return NoveltySeries(times, new.double() / size.double(), size, new)


def segment_strata_shares(data: TemporalData, split: Split, num_nodes: Optional[int] = None, *,
                          directed: bool) -> dict:
    """Shares of repeated-pair / new-pair / new-node events in each segment of a chronological split.

    The history of a segment is every event before its start (for ``test``: train and
    validation), as in :func:`tgeval.eval.engine.evaluate`; the strata are
    :func:`tgeval.data.strata.event_strata`. ``data`` must be time-sorted (as ``split`` indexes it).

    Returns:
        dict: ``{"val": {...}, "test": {...}}``, each ``{"events", "repeated", "new_pair",
        "new_node"}`` (event counts) plus the three shares ``"repeated_share"``,
        ``"new_pair_share"``, ``"new_node_share"`` (``None`` for an empty segment).
    """
    n = _num_nodes(data, num_nodes)
    out = {}
    for name in ("val", "test"):
        segment = split[name]
        hist, events = data[: segment.start], data[segment.start: segment.end]
        strata = event_strata(hist.src, hist.dst, events.src, events.dst, n, directed=directed)
        counts = torch.bincount(strata, minlength=3).tolist()
        total = int(strata.numel())
        entry: dict = {"events": total, "repeated": counts[REPEATED], "new_pair": counts[NEW_PAIR],
                       "new_node": counts[NEW_NODE]}
        for key in ("repeated", "new_pair", "new_node"):
            entry[f"{key}_share"] = entry[key] / total if total else None
        out[name] = entry
    return out


def novelty_summary(series: NoveltySeries) -> dict:
    r"""Summary of a series: timestamps, mean :math:`\nu_t` over timestamps, and the overall
    share of (pair, timestamp) cells that are new (:math:`\sum |E_t \setminus E_{<t}| / \sum |E_t|`)."""
    count = int(series.t.numel())
    cells = int(series.num_pairs.sum())
    return {"timestamps": count,
            "mean_novelty": float(series.novelty.mean()) if count else None,
            "new_pair_cell_share": int(series.num_new_pairs.sum()) / cells if cells else None,
            "distinct_pairs": int(series.num_new_pairs.sum())}
