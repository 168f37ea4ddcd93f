r"""Recommendation-style check of static link prediction (docs/protocol.md §10): top-C, VCMPR@C, RBO.

**Top-C.** For a node :math:`u` the candidates are every node :math:`v \ne u` with
:math:`(u, v)` not a training edge (on a bipartite graph, every such node of the other side).
Its top-:math:`C` list sorts them by score, descending, ties broken by the smaller node id.
It is computed exactly in blocks of sources x candidates (at most ``budget`` pairs per block):
a block's scores are merged into the running top-C of its sources by a stable sort of
``[best | block]``, which keeps the order (score desc, id asc) because blocks visit candidates
in increasing id order. With ``tie_seed``, ties follow a seeded
random key per (source, candidate) instead (two stable sorts per block).

**VCMPR@C** (vertex-centric max precision–recall). With :math:`T_u` the test edges at
:math:`u` and :math:`h_u` the number of them in :math:`u`'s top-C,

.. math::
    \mathrm{VCMPR}_u = \max\Big(\frac{h_u}{C}, \frac{h_u}{|T_u|}\Big) = \frac{h_u}{\min(C, |T_u|)},

averaged over the nodes with :math:`|T_u| \ge 1`.

**RBO** (rank-biased overlap, Webber, Moffat & Zobel 2010). For two rankings of length
:math:`k` with agreement :math:`A_d = |S_{:d} \cap T_{:d}| / d` at depth :math:`d`, the
extrapolated RBO (their eq. 30) is

.. math::
    \mathrm{RBO}_{ext}(S, T, p) = A_k\, p^k + (1 - p) \sum_{d=1}^{k} A_d\, p^{d-1}.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence, Union

import torch
from torch import Tensor

from tgeval.core.rng import counter_uniform
from tgeval.data.sorted_keys import is_member
from tgeval.errors import MetricInputError, ProtocolError, StaticGraphError
from tgeval.static.graph import edge_keys
from tgeval.static.heuristics import Adjacency, Heuristic, PairScorer, score_pairs

__all__ = ["top_c", "vcmpr_per_node", "agreement", "rank_biased_overlap", "method_ranking"]

_BUDGET = 1 << 20  # (source, candidate) pairs scored per block
_TIE_ROUND = 1 << 26  # counter round of the random tie keys


def top_c(adj: Adjacency, method: Union[Heuristic, PairScorer], sources: Tensor, c: int, *,
          exclude: Optional[Tensor] = None, tie_seed: Optional[int] = None, budget: int = _BUDGET) -> Tensor:
    """Each source's top-``c`` non-training candidates under ``method`` (module docstring).

    Args:
        adj: adjacency of the training graph (its edges are never candidates; bipartite: nor
            nodes of the source's own side).
        method: a heuristic of :mod:`tgeval.static.heuristics`, or a pair scorer (e.g. a trained GNN).
        sources: int64 ``[S]`` node ids.
        c: list length ``C >= 1``.
        exclude: sorted int64 undirected pair keys ``min * n + max`` that are never candidates
            either (e.g. every known edge), or ``None``.
        tie_seed: ``None``: ties go to the smaller id; a seed: ties in a seeded random order
            (counter-based keys of ``(source, candidate)``, independent of the blocks).
        budget: most pairs scored per block.

    Returns:
        Tensor: int64 ``[S, C]`` candidate ids, best first; ``-1`` where a source has fewer
        than ``C`` candidates.
    """
    if c < 1:
        raise ProtocolError(f"c must be >= 1, got {c}.")
    n, device = adj.num_nodes, sources.device
    rows = max(1, min(sources.numel(), budget // n))
    width = max(1, min(n, budget // rows))
    out = torch.full((sources.numel(), c), -1, dtype=torch.long, device=device)
    for r0 in range(0, sources.numel(), rows):
        src = sources[r0 : r0 + rows]
        best = torch.full((src.numel(), c), float("-inf"), dtype=torch.float64, device=device)
        best_id = torch.full((src.numel(), c), -1, dtype=torch.long, device=device)
        best_tie = torch.zeros((src.numel(), c), dtype=torch.float64, device=device)
        for c0 in range(0, n, width):
            cand = torch.arange(c0, min(n, c0 + width), device=device)
            u = src[:, None].expand(-1, cand.numel()).reshape(-1)
            v = cand.repeat(src.numel())
            scores = score_pairs(adj, method, u, v)
            invalid = (u == v) | adj.contains(u * n + v)
            if adj.dst_offset is not None:  # bipartite: candidates lie on the other side
                invalid |= (u >= adj.dst_offset) == (v >= adj.dst_offset)
            if exclude is not None:
                invalid |= is_member(exclude, edge_keys(u, v, n))
            scores = scores.masked_fill(invalid, float("-inf")).view(src.numel(), -1)
            merged = torch.cat([best, scores], dim=1)
            ids = torch.cat([best_id, cand.expand(src.numel(), -1)], dim=1)
            if tie_seed is None:  # blocks come in increasing id order: a stable sort keeps smaller ids first
                order = torch.sort(merged, dim=1, descending=True, stable=True).indices[:, :c]
            else:  # order by the random key, then stably by score: (score desc, key asc)
                tie = counter_uniform(tie_seed, u * n + v, _TIE_ROUND, 1).view(src.numel(), -1)
                ties = torch.cat([best_tie, tie], dim=1)
                by_tie = torch.argsort(ties, dim=1, stable=True)
                by_score = torch.sort(merged.gather(1, by_tie), dim=1, descending=True, stable=True).indices
                order = by_tie.gather(1, by_score)[:, :c]
                best_tie = ties.gather(1, order)
            best, best_id = merged.gather(1, order), ids.gather(1, order)
        out[r0 : r0 + rows] = best_id.masked_fill(torch.isinf(best), -1)
    return out


def vcmpr_per_node(top: Tensor, sources: Tensor, test: Tensor, num_nodes: int) -> Tensor:
    """VCMPR@C of each source (module docstring): float64 ``[S]``.

    Args:
        top: int64 ``[S, C]`` from :func:`top_c` (``-1`` = no candidate).
        sources: int64 ``[S]``, each with at least one test edge.
        test: int64 ``[2, T]`` test edges (either orientation).
        num_nodes: bound of the ids.

    Raises:
        StaticGraphError: a source has no test edge (VCMPR is averaged over nodes that have one).
    """
    test_keys = torch.unique(edge_keys(test[0], test[1], num_nodes))
    test_degree = torch.bincount(test.flatten(), minlength=num_nodes)[sources]
    if bool((test_degree == 0).any()):
        raise StaticGraphError("every source of vcmpr_per_node must have at least one test edge; select them with "
                               "`torch.nonzero(torch.bincount(test.flatten(), minlength=n)).flatten()`.")
    hit = is_member(test_keys, edge_keys(sources[:, None].expand_as(top), top.clamp(min=0), num_nodes)) & (top >= 0)
    return hit.sum(1).double() / test_degree.clamp(max=top.size(1)).double()


def agreement(first: Sequence[str], second: Sequence[str]) -> list[float]:
    """Agreement :math:`A_d = |S_{:d} \\cap T_{:d}| / d` for ``d = 1..k`` of two rankings of length ``k``.

    Raises:
        MetricInputError: the rankings differ in length, are empty, or repeat an item.
    """
    if len(first) != len(second) or not first:
        raise MetricInputError(f"the two rankings must be non-empty and of one length, got {len(first)} and "
                               f"{len(second)}.")
    if len(set(first)) != len(first) or len(set(second)) != len(second):
        raise MetricInputError(f"a ranking must not repeat an item, got {list(first)} and {list(second)}.")
    seen_first: set[str] = set()
    seen_second: set[str] = set()
    common, out = 0, []
    for d, (a, b) in enumerate(zip(first, second), start=1):
        common += (a in seen_second) + (b in seen_first) + (a == b)
        seen_first.add(a)
        seen_second.add(b)
        out.append(common / d)
    return out


def rank_biased_overlap(first: Sequence[str], second: Sequence[str], p: float) -> float:
    """Extrapolated RBO of two rankings of one length (module docstring), ``0 < p < 1``.

    Example:
        >>> rank_biased_overlap(["a", "b", "c"], ["a", "b", "c"], 0.5)
        1.0
        >>> round(rank_biased_overlap(["a", "b"], ["b", "a"], 0.5), 4)  # A = (0, 1): 0.25 + 0.5 * 0.5
        0.5
    """
    if not 0.0 < p < 1.0:
        raise ProtocolError(f"p must lie in (0, 1), got {p!r}.")
    a = agreement(first, second)
    return a[-1] * p ** len(a) + (1.0 - p) * sum(x * p**d for d, x in enumerate(a))


def method_ranking(values: Mapping[str, float]) -> list[str]:
    """Method names ordered by value, best (largest) first; ties by name, NaN values last."""
    return sorted(values, key=lambda name: (math.isnan(values[name]),
                                            0.0 if math.isnan(values[name]) else -values[name], name))
