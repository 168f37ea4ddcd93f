r"""Neighbourhood heuristics of static link prediction, for batches of pairs (SPEC §10).

With :math:`\Gamma(u)` the neighbours of :math:`u` in the (training) graph and :math:`k_u = |\Gamma(u)|`:

.. math::
    \mathrm{CN} = |\Gamma(u) \cap \Gamma(v)|, \quad
    \mathrm{Jaccard} = \frac{\mathrm{CN}}{|\Gamma(u) \cup \Gamma(v)|}\ (0 \text{ if the union is empty}), \quad
    \mathrm{AA} = \sum_{w \in \Gamma(u) \cap \Gamma(v)} \frac{1}{\log k_w}, \quad
    \mathrm{RA} = \sum_{w \in \Gamma(u) \cap \Gamma(v)} \frac{1}{k_w}, \quad
    \mathrm{PA} = k_u k_v .

The graph is a symmetric binary sparse COO tensor (:class:`Adjacency`), coalesced, so its
indices are sorted by ``row * n + col``. A batch of pairs is scored without per-pair Python:
each pair expands the neighbour list of its endpoint of smaller degree (a ragged range of the
sorted indices) and tests every neighbour :math:`w` for the edge :math:`(\text{other}, w)`;
the work is :math:`\sum \min(k_u, k_v)`, done in chunks of at most ``budget`` neighbours.
Edge tests read a bool map of the :math:`n^2` pairs when it fits in ``map_limit`` bytes,
else ``searchsorted`` on the sorted keys; both give the same answers. Everything stays on the
graph's device. Pairs with :math:`u = v` are scored like others (a common neighbour of degree
1 then adds 0 to AA, whose term is undefined).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import torch
from torch import Tensor

from tgeval.choices import STATIC_HEURISTICS as HEURISTICS
from tgeval.choices import StaticHeuristic as Heuristic
from tgeval.data.sorted_keys import expand_ranges, is_member
from tgeval.static.graph import StaticGraph

__all__ = ["Heuristic", "HEURISTICS", "PairScorer", "Adjacency", "adjacency", "heuristic_scores", "score_pairs"]

#: any other scorer of pairs (e.g. a trained GNN): int64 ``[B]`` twice -> float64 ``[B]``
PairScorer = Callable[[Tensor, Tensor], Tensor]

_BUDGET = 1 << 22  # neighbours expanded at once
_MAP_LIMIT = 1 << 26  # bytes of the largest pair map (64 MiB: graphs up to 8,192 nodes)


@dataclass(frozen=True)
class Adjacency:
    """The symmetric adjacency of a :class:`StaticGraph`.

    Attributes:
        matrix: float32 sparse COO ``[n, n]``, coalesced, ``1`` at ``(u, v)`` and ``(v, u)`` per edge.
        rowptr: int64 ``[n + 1]``; the neighbours of ``u`` are ``col[rowptr[u]:rowptr[u + 1]]``, sorted.
        keys: int64 ``[2E]`` sorted ``row * n + col`` of the stored entries.
        degree: float64 ``[n]``.
        pair_map: bool ``[n^2]``, true at the keys, or ``None`` (the graph is too large for it).
    """

    matrix: Tensor
    rowptr: Tensor
    keys: Tensor
    degree: Tensor
    pair_map: Optional[Tensor] = None

    @property
    def num_nodes(self) -> int:
        return int(self.matrix.size(0))

    @property
    def col(self) -> Tensor:
        return self.matrix.indices()[1]

    def contains(self, keys: Tensor) -> Tensor:
        """Whether each pair key ``u * n + v`` is an edge: bool, the shape of ``keys``."""
        if self.pair_map is None:
            return is_member(self.keys, keys.long())
        return torch.index_select(self.pair_map, 0, keys.flatten()).view(keys.shape)


def adjacency(graph: StaticGraph, *, map_limit: int = _MAP_LIMIT) -> Adjacency:
    """Build the :class:`Adjacency` of ``graph`` on its device (ignores weights: heuristics are binary).

    ``map_limit``: most bytes of the pair map (``0``: never build it, test edges by ``searchsorted``).
    """
    n = graph.num_nodes
    ei = torch.cat([graph.edge_index, graph.edge_index.flip(0)], dim=1)
    keys, order = torch.sort(ei[0] * n + ei[1])
    ei = ei[:, order]
    matrix = torch.sparse_coo_tensor(ei, torch.ones(ei.size(1), device=graph.device), (n, n),
                                     is_coalesced=True, check_invariants=False)
    rowptr = torch.searchsorted(ei[0], torch.arange(n + 1, device=graph.device))
    pair_map = None
    if n * n <= map_limit:
        pair_map = torch.zeros(n * n, dtype=torch.bool, device=graph.device)
        pair_map[keys] = True
    return Adjacency(matrix, rowptr, keys, (rowptr[1:] - rowptr[:-1]).double(), pair_map)


def _common_neighbour_sums(adj: Adjacency, src: Tensor, dst: Tensor, weight: Optional[Tensor], budget: int) -> Tensor:
    r""":math:`\sum_{w \in \Gamma(u) \cap \Gamma(v)} f(w)` for each pair, ``weight[w] = f(w)``: float64 ``[B]``.

    ``weight=None`` counts the common neighbours (:math:`f = 1`).

    Per chunk of expanded neighbours: their pair keys, then the edge test. Counts are differences
    of the hits' running count at the pairs' range ends. Weighted sums gather and sum only the
    hits (few: most neighbours of one endpoint are not the other's) per pair, in order, so the
    sums are exact whatever the chunking. Indices are int32 when the keys fit (half the memory
    traffic of int64); gathers use ``index_select`` (several times faster than advanced indexing
    on CPU), and endpoint choices use arithmetic (``torch.where`` on int32 is several times slower)."""
    n = adj.num_nodes
    out = torch.zeros(src.numel(), dtype=torch.float64, device=src.device)
    if src.numel() == 0:
        return out
    small = n * n < 2**31 and adj.col.numel() < 2**31
    dtype = torch.int32 if small else torch.int64
    rowptr, col = adj.rowptr.to(dtype), adj.col.to(dtype)
    start_src, start_dst = torch.index_select(rowptr, 0, src), torch.index_select(rowptr, 0, dst)
    length_src = torch.index_select(rowptr, 0, src + 1) - start_src
    length_dst = torch.index_select(rowptr, 0, dst + 1) - start_dst
    swap = (length_src > length_dst).to(dtype)  # expand dst's neighbours when its list is shorter
    lo = start_src + (start_dst - start_src) * swap
    other = (dst.to(dtype) + (src - dst).to(dtype) * swap) * n
    length = torch.minimum(length_src, length_dst).long()
    ends = torch.cumsum(length, 0)  # int64: the total may pass 2^31 even when every index fits
    total = int(ends[-1])
    # chunk boundaries: the first pair whose cumulative length passes each multiple of the budget
    cuts = torch.searchsorted(ends, torch.arange(1, total // budget + 1, device=src.device) * budget, right=True)
    bounds = [0] + cuts.tolist() + [src.numel()]
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b <= a:
            continue
        first = ends[a - 1] if a else ends.new_zeros(())
        count = int(ends[b - 1] - first)
        owner, index = expand_ranges(lo[a:b], length[a:b], total=count)
        hit = adj.contains(torch.index_select(col, 0, index) + torch.index_select(other[a:b], 0, owner))
        if weight is None:
            running = torch.cat([hit.new_zeros(1, dtype=torch.long), torch.cumsum(hit, 0)])
            out[a:b] = (torch.index_select(running, 0, ends[a:b] - first)
                        - torch.index_select(running, 0, ends[a:b] - first - length[a:b])).double()
            continue
        found = torch.nonzero(hit).flatten()
        w = torch.index_select(col, 0, torch.index_select(index, 0, found))
        out[a:b] = torch.bincount(torch.index_select(owner, 0, found), weights=torch.index_select(weight, 0, w),
                                  minlength=b - a)
    return out


def heuristic_scores(adj: Adjacency, src: Tensor, dst: Tensor, method: Heuristic, *, budget: int = _BUDGET) -> Tensor:
    """Scores of the pairs ``(src[i], dst[i])`` under ``method`` (module docstring): float64 ``[B]``.

    Args:
        adj: the graph's :class:`Adjacency`.
        src, dst: int64 ``[B]`` node ids on the graph's device.
        method: ``"cn"``, ``"jaccard"``, ``"aa"``, ``"ra"`` or ``"pa"``.
        budget: most neighbours expanded at once (bounds the memory).

    Example:
        >>> from tgeval.static.graph import StaticGraph
        >>> g = StaticGraph(torch.tensor([[0, 0, 1], [1, 2, 2]]), 4)  # a triangle 0-1-2 and node 3
        >>> heuristic_scores(adjacency(g), torch.tensor([0, 0]), torch.tensor([1, 3]), "cn")
        tensor([1., 0.], dtype=torch.float64)
    """
    if method not in HEURISTICS:
        raise ValueError(f"method must be one of {HEURISTICS}, got {method!r}.")
    if src.shape != dst.shape or src.dim() != 1:
        raise ValueError(f"src and dst must be 1-D of one shape, got {tuple(src.shape)} and {tuple(dst.shape)}.")
    deg = adj.degree
    if method == "pa":
        return deg[src] * deg[dst]
    weight: Optional[Tensor] = None  # cn and jaccard count the common neighbours
    if method == "ra":
        weight = torch.where(deg > 0, 1.0 / deg, torch.zeros_like(deg))
    elif method == "aa":
        weight = torch.where(deg > 1, 1.0 / torch.log(deg.clamp(min=2.0)), torch.zeros_like(deg))
    sums = _common_neighbour_sums(adj, src, dst, weight, int(budget))
    if method != "jaccard":
        return sums
    union = deg[src] + deg[dst] - sums
    return torch.where(union > 0, sums / union.clamp(min=1.0), torch.zeros_like(sums))


def score_pairs(adj: Adjacency, method: Union[Heuristic, PairScorer], src: Tensor, dst: Tensor) -> Tensor:
    """``method(src, dst)`` for a :data:`PairScorer`, else :func:`heuristic_scores` on ``adj``: float64 ``[B]``."""
    if callable(method):
        return method(src, dst)
    return heuristic_scores(adj, src, dst, method)
