r"""HeaRT-style hard negatives: per positive, the top-scoring non-edges that keep one endpoint.

For a positive :math:`(u, v)` and :math:`M` negatives, :math:`\lceil M/2 \rceil` negatives keep
:math:`u` and corrupt :math:`v`, the other :math:`\lfloor M/2 \rfloor` keep :math:`v` and
corrupt :math:`u`. The corrupting nodes of an endpoint :math:`x` are its top-scoring
candidates :math:`w` under a heuristic (``"cn"``, ``"ra"``, or ``"ppr"``: :math:`\pi_x[w]`,
:mod:`tgeval.static.ppr`) computed on the training graph,
among the **non-edges** (:math:`w \ne x` and :math:`(x, w)` not an edge of the whole graph;
on a bipartite graph :math:`w` lies on the other side of :math:`x`, as the corrupted endpoint did),
ties in a seeded random order (:func:`~tgeval.static.recommend.top_c`). An endpoint with
fewer than the needed non-edges raises :class:`~tgeval.errors.SamplerError`, unless
``replace=True``: its list then repeats cyclically (counted).

Each positive is ranked against its own :math:`M` negatives (:func:`heart_ranking`): MRR and
Hits@k under a tie convention of :mod:`tgeval.eval.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import torch
from torch import Tensor

from tgeval.core.choices import HEART_HEURISTICS, HeartHeuristic
from tgeval.errors import ProtocolError, SamplerError
from tgeval.eval.metrics import TiePolicy, count_above_equal, hits_at_k, rank_from_counts
from tgeval.static.graph import StaticGraph
from tgeval.static.heuristics import Adjacency, Heuristic, PairScorer, score_pairs
from tgeval.static.ppr import ALPHA, TOL, PageRankScorer, pagerank_steps
from tgeval.static.recommend import top_c

__all__ = ["HeartHeuristic", "HEART_HEURISTICS", "HeartNegatives", "heart_negatives", "heart_ranking"]



@dataclass(frozen=True)
class HeartNegatives:
    """Hard negatives of a set of positives.

    Attributes:
        pairs: int64 ``[2, P, M]``; ``pairs[:, i, j]`` is negative ``j`` of positive ``i``
            (the first ``ceil(M/2)`` keep the first endpoint, the rest the second).
        num_short: endpoints whose non-edges were fewer than needed (lists repeated; ``replace=True``).
        heuristic, seed: how they were chosen.
    """

    pairs: Tensor
    num_short: int
    heuristic: str
    seed: int

    def describe(self) -> dict:
        out = {"name": "heart", "heuristic": self.heuristic, "per_positive": int(self.pairs.size(2)),
               "num_short_endpoints": self.num_short, "seed": self.seed,
               "rule": "half keep each endpoint; the top-scoring non-edges of that endpoint under the heuristic on "
                       "the training graph, ties in a seeded random order"}
        if self.heuristic == "ppr":
            out["ppr"] = {"alpha": ALPHA, "tol": TOL, "steps": pagerank_steps(ALPHA, TOL)}
        return out


def _corruptions(adj: Adjacency, nodes: Tensor, k: int, heuristic: HeartHeuristic, graph: StaticGraph, seed: int,
                 replace: bool) -> tuple[Tensor, int]:
    """Top-``k`` non-edge candidates of each node in ``nodes``: int64 ``[len(nodes), k]``, and the short count."""
    if k == 0:
        return torch.zeros(nodes.numel(), 0, dtype=torch.long, device=nodes.device), 0
    distinct, where = torch.unique(nodes, return_inverse=True)
    if graph.dst_offset is None:
        available = graph.num_nodes - 1 - graph.degree()[distinct]
    else:  # the other side's nodes
        d = graph.dst_offset
        available = torch.where(distinct < d, graph.num_nodes - d, d) - graph.degree()[distinct]
    short = available < k
    if bool(short.any()) and not replace:
        x = int(distinct[torch.nonzero(short)[0, 0]])
        raise SamplerError(f"node {x} has {int(available[short][0])} non-edges, fewer than the {k} hard negatives "
                           f"asked for on its side. Lower M, or pass replace=True (lists repeat cyclically).")
    if bool((available == 0).any()):
        raise SamplerError("a positive's endpoint has no non-edge at all: it cannot get hard negatives.")
    method = PageRankScorer(adj) if heuristic == "ppr" else heuristic
    top = top_c(adj, method, distinct, k, exclude=graph.keys(), tie_seed=seed)
    cols = torch.arange(k, device=nodes.device)[None, :] % torch.clamp(available, max=k)[:, None]
    return top.gather(1, cols)[where], int(short.sum())


def heart_negatives(adj: Adjacency, graph: StaticGraph, positives: Tensor, num: int, *, heuristic: HeartHeuristic = "cn",
                    seed: int = 0, replace: bool = False) -> HeartNegatives:
    """``num`` hard negatives per positive (module docstring).

    Args:
        adj: adjacency of the training graph (the heuristic's input).
        graph: the whole graph (its edges are never negatives).
        positives: int64 ``[2, P]``.
        num: M >= 1.

    Raises:
        SamplerError: an endpoint has fewer non-edges than its half of M (without ``replace``).
    """
    if heuristic not in HEART_HEURISTICS:
        raise ProtocolError(f"heuristic must be one of {HEART_HEURISTICS}, got {heuristic!r}.")
    if num < 1:
        raise ProtocolError(f"num must be >= 1, got {num}.")
    first, second = (num + 1) // 2, num // 2
    u, v = positives
    keep_u, short_u = _corruptions(adj, u, first, heuristic, graph, seed, replace)
    keep_v, short_v = _corruptions(adj, v, second, heuristic, graph, seed, replace)
    src = torch.cat([u[:, None].expand(-1, first), keep_v], dim=1)
    dst = torch.cat([keep_u, v[:, None].expand(-1, second)], dim=1)
    return HeartNegatives(torch.stack([src, dst]), short_u + short_v, heuristic, int(seed))


def heart_ranking(adj: Adjacency, positives: Tensor, negatives: HeartNegatives,
                  method: Union[Heuristic, PairScorer], *, ties: TiePolicy = "average",
                  hits: Sequence[int] = (1, 10, 20, 50, 100)) -> dict[str, float]:
    """MRR and Hits@k of ``method`` ranking each positive against its own negatives.

    Returns:
        dict: ``"mrr"`` and ``"hits@k"`` for each ``k`` of ``hits`` that is at most M.
    """
    pos = score_pairs(adj, method, positives[0], positives[1])
    pairs = negatives.pairs
    neg = score_pairs(adj, method, pairs[0].reshape(-1), pairs[1].reshape(-1)).view(pairs.shape[1:])
    above, equal = count_above_equal(pos, neg)
    ranks = rank_from_counts(above, equal, ties=ties)
    out = {"mrr": float(torch.mean(1.0 / ranks))}
    for k in hits:
        if k <= pairs.size(2):
            out[f"hits@{k}"] = float(hits_at_k(ranks, k).mean())
    return out
