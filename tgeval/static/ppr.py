r"""Personalized PageRank (PPR) of a static graph, as a pair scorer (HeaRT's third heuristic).

The PPR vector of a source :math:`u` with teleport probability :math:`\alpha` is the fixed point

.. math::
    \pi_u = \alpha\, e_u + (1 - \alpha)\,\big(A D^{-1} \pi_u + e_u \textstyle\sum_{k_w = 0} \pi_u[w]\big),

a random walk from :math:`u` that steps to a uniform neighbour and restarts at :math:`u` with
probability :math:`\alpha` at each step; a node without neighbours sends its mass back to
:math:`u` (networkx's ``pagerank`` with ``personalization={u: 1}`` and ``alpha = 1 - \alpha``).
The pair score is :math:`\mathrm{PPR}(u, v) = \pi_u[v]`, which is not symmetric.

Power iteration from :math:`e_u` contracts the :math:`L_1` error by :math:`1 - \alpha` per step
from at most 2, so a **fixed** number of steps :math:`K = \lceil \log(\mathrm{tol}/2) /
\log(1 - \alpha) \rceil` bounds it by ``tol`` for every source. Being fixed (not a stopping
test over a block), :math:`K` makes each source's vector independent of which sources share
its block. Sources are iterated together as the columns of a dense ``[n, S]`` block, one sparse
product per step, at most ``budget`` entries per block, on the graph's device.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from tgeval.errors import ProtocolError
from tgeval.static.heuristics import Adjacency

__all__ = ["personalized_pagerank", "PageRankScorer", "pagerank_steps", "ALPHA", "TOL"]

ALPHA = 0.15  # teleport probability (networkx's damping 0.85)
TOL = 1e-7  # L1 error bound of each vector
_BUDGET = 1 << 22  # entries of one [n, S] block of PPR vectors (32 MiB of float64)


def pagerank_steps(alpha: float, tol: float) -> int:
    """Power-iteration steps ``K`` that bound every vector's L1 error by ``tol`` (module docstring)."""
    if not 0.0 < alpha < 1.0:
        raise ProtocolError(f"alpha (the teleport probability) must lie in (0, 1), got {alpha}.")
    if not 0.0 < tol < 2.0:
        raise ProtocolError(f"tol must lie in (0, 2), got {tol}.")
    return max(1, math.ceil(math.log(tol / 2.0) / math.log(1.0 - alpha)))


def personalized_pagerank(adj: Adjacency, sources: Tensor, *, alpha: float = ALPHA, tol: float = TOL,
                          budget: int = _BUDGET) -> Tensor:
    r"""The PPR vectors :math:`\pi_u` of ``sources``: float64 ``[S, n]``, each row summing to 1.

    Args:
        adj: the graph's :class:`~tgeval.static.heuristics.Adjacency`.
        sources: int64 ``[S]`` node ids on the graph's device.
        alpha: teleport (restart) probability.
        tol: bound on each vector's L1 error.
        budget: most entries of one block of vectors.

    Example:
        >>> from tgeval.static.graph import StaticGraph
        >>> from tgeval.static.heuristics import adjacency
        >>> g = StaticGraph(torch.tensor([[0, 1], [1, 2]]), 3)  # the path 0-1-2
        >>> personalized_pagerank(adjacency(g), torch.tensor([1]), tol=1e-12).round(decimals=4)
        tensor([[0.2297, 0.5405, 0.2297]], dtype=torch.float64)
    """
    n, device = adj.num_nodes, adj.matrix.device
    steps = pagerank_steps(alpha, tol)
    out = torch.empty(sources.numel(), n, dtype=torch.float64, device=device)
    if sources.numel() == 0:
        return out
    # A D^-1: the entry (v, w) of an edge is 1 / k_w (every w here has k_w >= 1)
    walk = torch.sparse_coo_tensor(adj.matrix.indices(), 1.0 / adj.degree[adj.col], (n, n), is_coalesced=True,
                                   check_invariants=False)
    dangling = torch.nonzero(adj.degree == 0).flatten()
    width = max(1, min(sources.numel(), budget // max(n, 1)))
    for s0 in range(0, sources.numel(), width):
        block = sources[s0 : s0 + width]
        columns = torch.arange(block.numel(), device=device)
        x = torch.zeros(n, block.numel(), dtype=torch.float64, device=device)
        x[block, columns] = 1.0
        for _ in range(steps):
            back = torch.index_select(x, 0, dangling).sum(0)  # [S] mass at nodes without neighbours, back to the source
            x = (1.0 - alpha) * (walk @ x)
            x[block, columns] += alpha + (1.0 - alpha) * back
        out[s0 : s0 + width] = x.T
    return out


class PageRankScorer:
    r"""A :data:`~tgeval.static.heuristics.PairScorer`: ``(u, v) -> PPR(u, v)`` (module docstring).

    Each call computes the vectors of its distinct sources (:func:`personalized_pagerank`), so
    callers such as :func:`~tgeval.static.recommend.top_c` that score one block of sources
    against many candidates pay once per block.
    """

    def __init__(self, adj: Adjacency, *, alpha: float = ALPHA, tol: float = TOL) -> None:
        pagerank_steps(alpha, tol)  # validates
        self.adj, self.alpha, self.tol = adj, float(alpha), float(tol)

    def __call__(self, src: Tensor, dst: Tensor) -> Tensor:
        distinct, where = torch.unique(src, return_inverse=True)
        vectors = personalized_pagerank(self.adj, distinct, alpha=self.alpha, tol=self.tol)
        return vectors[where, dst]
