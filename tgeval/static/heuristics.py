r"""Neighbourhood heuristics of static link prediction, for batches of pairs (docs/protocol.md §10).

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

**Bipartite graphs** (:attr:`Adjacency.dst_offset`). Two nodes of different sides never share a
neighbour, so CN, AA and RA would score every candidate link 0. They count the **paths of
length 3** :math:`u - a - b - v` instead (:math:`a \in \Gamma(u)`, :math:`b \in \Gamma(v)`,
:math:`a b` an edge: the usual bipartite variant), each path weighted by its two inner nodes,

.. math::
    \mathrm{CN}_3 = \sum_{u - a - b - v} 1, \quad
    \mathrm{AA}_3 = \sum_{u - a - b - v} \frac{1}{\log k_a \log k_b}, \quad
    \mathrm{RA}_3 = \sum_{u - a - b - v} \frac{1}{k_a k_b},

i.e. the entry :math:`(u, v)` of :math:`A F A F A` with :math:`F = \mathrm{diag}(f)` (the walks of
length 3) less, when :math:`uv` is itself an edge, the walks that revisit an endpoint:
:math:`f_v s_v + f_u s_u - f_u f_v` with :math:`s_x = \sum_{y \in \Gamma(x)} f_y`. They are
computed per block of distinct sources :math:`u`, whose dense rows of :math:`A F A` (at most
``budget`` entries) are summed from expanded neighbour lists; each pair then gathers that row
over :math:`\Gamma(v)`. Pairs within one
side have no path of odd length and score 0. Jaccard has no such variant (its union of
neighbourhoods lies on two different sides): on a bipartite graph it does not apply
(:data:`BIPARTITE_UNDEFINED`) and :func:`heuristic_scores` refuses it. PA needs no change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import torch
from torch import Tensor

from tgeval.core.choices import STATIC_HEURISTICS as HEURISTICS
from tgeval.core.choices import StaticHeuristic as Heuristic
from tgeval.data.sorted_keys import expand_ranges, is_member
from tgeval.errors import ProtocolError, StaticGraphError
from tgeval.static.graph import StaticGraph

__all__ = ["Heuristic", "HEURISTICS", "BIPARTITE_UNDEFINED", "PairScorer", "Adjacency", "adjacency",
           "heuristic_scores", "score_pairs", "not_applicable"]

#: any other scorer of pairs (e.g. a trained GNN): int64 ``[B]`` twice -> float64 ``[B]``
PairScorer = Callable[[Tensor, Tensor], Tensor]

_BUDGET = 1 << 22  # neighbours expanded at once
_MAP_LIMIT = 1 << 26  # bytes of the largest pair map (64 MiB: graphs up to 8,192 nodes)

#: heuristics without a definition on a bipartite graph -> why (module docstring)
BIPARTITE_UNDEFINED: dict[str, str] = {
    "jaccard": "does not apply to a bipartite graph: the two endpoints' neighbourhoods lie on different sides, so "
               "their intersection is always empty and no length-3 variant keeps Jaccard's meaning"}


@dataclass(frozen=True)
class Adjacency:
    """The symmetric adjacency of a :class:`StaticGraph`.

    Attributes:
        matrix: float32 sparse COO ``[n, n]``, coalesced, ``1`` at ``(u, v)`` and ``(v, u)`` per edge.
        rowptr: int64 ``[n + 1]``; the neighbours of ``u`` are ``col[rowptr[u]:rowptr[u + 1]]``, sorted.
        keys: int64 ``[2E]`` sorted ``row * n + col`` of the stored entries.
        degree: float64 ``[n]``.
        pair_map: bool ``[n^2]``, true at the keys, or ``None`` (the graph is too large for it).
        dst_offset: the graph's :attr:`~tgeval.static.graph.StaticGraph.dst_offset` (``None``: unipartite).
    """

    matrix: Tensor
    rowptr: Tensor
    keys: Tensor
    degree: Tensor
    pair_map: Optional[Tensor] = None
    dst_offset: Optional[int] = None

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
    return Adjacency(matrix, rowptr, keys, (rowptr[1:] - rowptr[:-1]).double(), pair_map, graph.dst_offset)


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


def _path3_sums(adj: Adjacency, src: Tensor, dst: Tensor, weight: Optional[Tensor], budget: int) -> Tensor:
    r""":math:`\sum_{u - a - b - v} f(a) f(b)` over the paths of length 3 of each pair, ``weight[w] = f(w)``
    (``None``: :math:`f = 1`, the path count): float64 ``[B]`` (module docstring).

    Per block of distinct sources :math:`u`, the dense rows :math:`W_u[b] = \sum_{a \in \Gamma(u) \cap
    \Gamma(b)} f(a)` (walks :math:`u - a - b`) are summed from the expanded neighbour lists of
    :math:`\Gamma(u)`; each pair then sums :math:`f(b) W_u[b]` over :math:`b \in \Gamma(v)`, per pair in
    order (exact for counts, the same whatever the blocks). The rows are built for whichever
    endpoint has fewer distinct nodes in the batch (the score is symmetric)."""
    n, device = adj.num_nodes, src.device
    out = torch.zeros(src.numel(), dtype=torch.float64, device=device)
    if src.numel() == 0:
        return out
    f = torch.ones(n, dtype=torch.float64, device=device) if weight is None else weight
    rowptr, col = adj.rowptr, adj.col
    length = rowptr[1:] - rowptr[:-1]
    present = torch.zeros(2, n, dtype=torch.bool, device=device)
    present[0, src] = True
    present[1, dst] = True
    if int(present[1].sum()) < int(present[0].sum()):  # the score is symmetric: build the fewer rows
        src, dst, present = dst, src, present.flip(0)
    distinct = torch.nonzero(present[0]).flatten()
    where = torch.cumsum(present[0], 0)[src] - 1  # the rank of src[i] among the distinct sources
    width = max(1, budget // max(n, 1))
    for s0 in range(0, distinct.numel(), width):
        block = distinct[s0 : s0 + width]
        owner, index = expand_ranges(rowptr[block], length[block])  # a in Gamma(u)
        a = col[index]
        hop, second = expand_ranges(rowptr[a], length[a])  # b in Gamma(a)
        walks = torch.zeros(block.numel() * n, dtype=torch.float64, device=device)
        walks.index_add_(0, owner[hop] * n + col[second], f[a][hop])
        mine = torch.nonzero((where >= s0) & (where < s0 + block.numel())).flatten()
        pair, third = expand_ranges(rowptr[dst[mine]], length[dst[mine]])  # b in Gamma(v)
        b = col[third]
        terms = f[b] * walks[(where[mine][pair] - s0) * n + b]
        out[mine] = torch.bincount(pair, weights=terms, minlength=mine.numel())
    # an edge uv also has the walks u-v-b-v and u-a-u-v, which are not paths
    edge = adj.contains(src * n + dst)
    if bool(edge.any()):
        s = torch.bincount(adj.matrix.indices()[0], weights=f[col], minlength=n)
        u, v = src[edge], dst[edge]
        out[edge] -= f[v] * s[v] + f[u] * s[u] - f[u] * f[v]
    return out.clamp(min=0.0)  # rounding of the weighted sums, never below the true value 0


def not_applicable(adj: Adjacency, method: Union[str, PairScorer]) -> Optional[str]:
    """Why ``method`` does not apply to the graph of ``adj`` (:data:`BIPARTITE_UNDEFINED`), or ``None`` if it does."""
    if adj.dst_offset is None or callable(method):
        return None
    return BIPARTITE_UNDEFINED.get(method)


def heuristic_scores(adj: Adjacency, src: Tensor, dst: Tensor, method: Heuristic, *, budget: int = _BUDGET) -> Tensor:
    """Scores of the pairs ``(src[i], dst[i])`` under ``method`` (module docstring): float64 ``[B]``.

    Args:
        adj: the graph's :class:`Adjacency`; bipartite: the length-3 variants (module docstring).
        src, dst: int64 ``[B]`` node ids on the graph's device.
        method: ``"cn"``, ``"jaccard"``, ``"aa"``, ``"ra"`` or ``"pa"``.
        budget: most neighbours expanded at once, or bipartite: most entries of a dense block
            (bounds the memory).

    Raises:
        StaticGraphError: ``method`` does not apply to a bipartite graph (:data:`BIPARTITE_UNDEFINED`).

    Example:
        >>> from tgeval.static.graph import StaticGraph
        >>> g = StaticGraph(torch.tensor([[0, 0, 1], [1, 2, 2]]), 4)  # a triangle 0-1-2 and node 3
        >>> heuristic_scores(adjacency(g), torch.tensor([0, 0]), torch.tensor([1, 3]), "cn")
        tensor([1., 0.], dtype=torch.float64)
        >>> g = StaticGraph(torch.tensor([[0, 1, 1], [2, 2, 3]]), 4, dst_offset=2)  # the path 0-2-1-3
        >>> heuristic_scores(adjacency(g), torch.tensor([0]), torch.tensor([3]), "cn")  # one path of length 3
        tensor([1.], dtype=torch.float64)
    """
    if method not in HEURISTICS:
        raise ProtocolError(f"method must be one of {HEURISTICS}, got {method!r}.")
    if src.shape != dst.shape or src.dim() != 1:
        raise StaticGraphError(f"src and dst must be 1-D of one shape, got {tuple(src.shape)} and {tuple(dst.shape)}.")
    reason = not_applicable(adj, method)
    if reason is not None:
        raise StaticGraphError(f"{method} {reason}. Use cn, aa, ra (counted over paths of length 3) or pa instead.")
    deg = adj.degree
    if method == "pa":
        return deg[src] * deg[dst]
    weight: Optional[Tensor] = None  # cn and jaccard count the common neighbours
    if method == "ra":
        weight = torch.where(deg > 0, 1.0 / deg, torch.zeros_like(deg))
    elif method == "aa":
        weight = torch.where(deg > 1, 1.0 / torch.log(deg.clamp(min=2.0)), torch.zeros_like(deg))
    if adj.dst_offset is not None:
        return _path3_sums(adj, src, dst, weight, int(budget))
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
