r"""Static undirected graphs for link prediction (docs/protocol.md §10): from PyG ``Data``, from a temporal
stream, and the seeded random edge split.

A :class:`StaticGraph` holds each undirected edge once, as :math:`(u, v)` with :math:`u < v`,
sorted by the pair key :math:`u n + v` (``n = num_nodes``). Self-loops never appear; what the
cleaning removed or merged is counted on the graph.

A graph is **bipartite** when it has a ``dst_offset`` :math:`d`: ids :math:`< d` are the source
side, ids :math:`\ge d` the destination side (the layout of the readers' ``bipartite=True``,
``ReadInfo.dst_offset``), and every edge joins the two sides, so :math:`u < d \le v`. Without
one it is unipartite: any two nodes may be linked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional, Union

import torch
from torch import Tensor
from torch_geometric.data import Data, TemporalData

from tgeval.data.strata import MAX_PAIR_KEY_NODES, pair_keys
from tgeval.errors import SplitError, StaticGraphError
from tgeval.core.rng import counter_uniform

__all__ = ["StaticGraph", "EdgeSplit", "from_pyg", "static_graph", "random_edge_split", "edge_keys", "before"]


def edge_keys(src: Tensor, dst: Tensor, num_nodes: int) -> Tensor:
    """Undirected pair keys :math:`\\min(u, v) n + \\max(u, v)`: int64, the shape of ``src``."""
    return pair_keys(src, dst, num_nodes, directed=False)


@dataclass(frozen=True)
class StaticGraph:
    """An undirected simple graph.

    Attributes:
        edge_index: int64 ``[2, E]``, each edge once with ``edge_index[0] < edge_index[1]``,
            sorted by the key ``u * num_nodes + v``.
        num_nodes: node ids lie in ``[0, num_nodes)``.
        weight: float64 ``[E]`` multiplicities (events per pair for :func:`static_graph`), or ``None``.
        self_loops: columns (or events) with ``u == v`` removed while building.
        duplicates: columns (events) repeating an earlier ``(u, v)`` in the same direction, merged.
        reverse: distinct directed pairs ``(v, u)`` merged into the edge of an earlier ``(u, v)``.
        dst_offset: bipartite graphs: the first id of the destination side (module docstring);
            ``None``: unipartite.

    Raises:
        StaticGraphError: ``dst_offset`` outside ``[1, num_nodes)``, or an edge within one side.
    """

    edge_index: Tensor
    num_nodes: int
    weight: Optional[Tensor] = None
    self_loops: int = 0
    duplicates: int = 0
    reverse: int = 0
    dst_offset: Optional[int] = None

    def __post_init__(self) -> None:
        d = self.dst_offset
        if d is None:
            return
        if not 1 <= d < self.num_nodes:
            raise StaticGraphError(f"dst_offset={d} leaves a side empty: it must lie in [1, num_nodes="
                                   f"{self.num_nodes}) (sources below it, destinations from it on).")
        within = torch.nonzero((self.edge_index[0] >= d) | (self.edge_index[1] < d)).flatten()
        if within.numel():
            u, v = self.edge_index[:, within[0]].tolist()
            raise StaticGraphError(f"{within.numel()} edges join two nodes of one side of the bipartite graph "
                                   f"(dst_offset={d}), e.g. {u}-{v}. Pass dst_offset=None for a unipartite graph, or "
                                   f"read the file with bipartite=True so that the sides get disjoint id ranges.")

    @property
    def bipartite(self) -> bool:
        return self.dst_offset is not None

    def side(self) -> Tensor:
        """bool ``[num_nodes]``: ``True`` on the destination side (all ``False`` when unipartite)."""
        ids = torch.arange(self.num_nodes, device=self.device)
        return ids >= self.dst_offset if self.dst_offset is not None else torch.zeros_like(ids, dtype=torch.bool)

    def describe_sides(self) -> dict:
        """Whether the graph is bipartite and, if so, its sides (sizes count the nodes of degree ``>= 1``)."""
        if self.dst_offset is None:
            return {"kind": "unipartite"}
        active = self.degree() > 0
        return {"kind": "bipartite", "dst_offset": self.dst_offset,
                "source_nodes": int(active[: self.dst_offset].sum()),
                "destination_nodes": int(active[self.dst_offset:].sum())}

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.size(1))

    @property
    def device(self) -> torch.device:
        return self.edge_index.device

    def keys(self) -> Tensor:
        """Sorted pair keys ``u * num_nodes + v``: int64 ``[E]``."""
        return self.edge_index[0] * self.num_nodes + self.edge_index[1]

    def degree(self) -> Tensor:
        """Number of edges at each node: int64 ``[num_nodes]``."""
        return torch.bincount(self.edge_index.flatten(), minlength=self.num_nodes)

    def removals(self) -> dict[str, int]:
        """What building the graph removed or merged: ``self_loops``, ``duplicates``, ``reverse``."""
        return {"self_loops": self.self_loops, "duplicates": self.duplicates, "reverse": self.reverse}

    def to_pyg(self) -> Data:
        """PyG ``Data`` with both directions of every edge (``edge_index`` ``[2, 2E]``), ``num_nodes`` set."""
        ei = torch.cat([self.edge_index, self.edge_index.flip(0)], dim=1)
        return Data(edge_index=ei, num_nodes=self.num_nodes)


def _build(src: Tensor, dst: Tensor, num_nodes: int, *, weighted: bool, what: str,
           dst_offset: Optional[int]) -> StaticGraph:
    """Clean directed pairs ``(src, dst)`` into a :class:`StaticGraph` (counting every removal)."""
    if src.numel() and (int(src.min()) < 0 or int(dst.min()) < 0 or int(torch.maximum(src.max(), dst.max())) >= num_nodes):
        raise StaticGraphError(f"{what}: node ids must lie in [0, num_nodes={num_nodes}), got "
                               f"[{int(torch.minimum(src.min(), dst.min()))}, {int(torch.maximum(src.max(), dst.max()))}]. "
                               f"Pass the right num_nodes.")
    if num_nodes > MAX_PAIR_KEY_NODES:
        raise StaticGraphError(f"{what}: num_nodes={num_nodes} is too large for int64 pair keys "
                               f"(at most {MAX_PAIR_KEY_NODES}).")
    loop = src == dst
    src, dst = src[~loop], dst[~loop]
    directed = torch.unique(src * num_nodes + dst)
    keys, count = torch.unique(edge_keys(src, dst, num_nodes), return_counts=True)
    if keys.numel() == 0:
        raise StaticGraphError(f"{what} has no edge left after removing {int(loop.sum())} self-loops: link "
                               f"prediction needs at least one edge. Check the input (or the `end` time).")
    edge_index = torch.stack([keys // num_nodes, keys % num_nodes])
    return StaticGraph(edge_index, num_nodes, weight=count.double() if weighted else None,
                       self_loops=int(loop.sum()), duplicates=int(src.numel() - directed.numel()),
                       reverse=int(directed.numel() - keys.numel()), dst_offset=dst_offset)


def from_pyg(data: Data, *, dst_offset: Optional[int] = None) -> StaticGraph:
    """The undirected simple graph of a PyG ``Data`` with ``edge_index``.

    Directions are merged (``(u, v)`` and ``(v, u)`` are one edge), self-loops and repeated
    columns are removed; the counts are on the result (:meth:`StaticGraph.removals`).

    Args:
        data: with ``edge_index`` int64 ``[2, E]``; ``data.num_nodes`` (set, or from ``x``) bounds
            the ids, else ``max(edge_index) + 1``.
        dst_offset: a bipartite graph's first destination-side id (module docstring), or ``None``.

    Raises:
        StaticGraphError: no edge is left, an id lies outside ``[0, num_nodes)``, or an edge
            lies within one side.
        TypeError: ``data`` has no integer ``edge_index``.
    """
    edge_index = getattr(data, "edge_index", None)
    if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise TypeError(f"from_pyg needs a Data with edge_index [2, E], got "
                        f"{None if edge_index is None else tuple(getattr(edge_index, 'shape', ()))}.")
    if edge_index.dtype.is_floating_point or edge_index.dtype == torch.bool:
        raise TypeError(f"edge_index must hold integer ids, got dtype {edge_index.dtype}.")
    edge_index = edge_index.long()
    if "num_nodes" in data.keys() or getattr(data, "x", None) is not None:
        num_nodes = int(data.num_nodes)
    else:  # as PyG would infer it, without its warning
        num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
    return _build(edge_index[0], edge_index[1], num_nodes, weighted=False, what="the graph", dst_offset=dst_offset)


#: a time bound: a number, or its text (``"1.5e18"``, read exactly)
TimeBound = Union[int, float, Fraction, str]


def before(t: Tensor, end: TimeBound) -> Tensor:
    """bool ``[E]``: ``t < end``, exactly. ``end`` is read as an exact rational (text too, so ``"4611686018427387904"``
    is that integer): integer times compare with ``ceil(end)`` in int64, float times (as float64) with the nearest
    float64 (and its own value when it lies below ``end``). Neither a float bound near 2^62 nor torch's float32 promotion of a
    Python float moves an event across it.

    Raises:
        StaticGraphError: ``end`` is NaN, infinite or no number.

    Example:
        >>> before(torch.tensor([2**62, 2**62 + 1]), str(2**62 + 1)).tolist()
        [True, False]
    """
    try:
        bound = Fraction(end)
    except (ValueError, OverflowError, TypeError):
        raise StaticGraphError(f"the time bound end={end!r} is no finite number: give a time (events with t < end "
                               f"are projected), or no bound for every event.") from None
    if not t.dtype.is_floating_point:
        limit = math.ceil(bound)  # for integers, t < end iff t < ceil(end)
        info = torch.iinfo(t.dtype)
        if not info.min < limit <= info.max:
            return torch.full_like(t, limit > info.max, dtype=torch.bool)
        return t < torch.tensor(limit, dtype=t.dtype, device=t.device)
    times = t.double()  # every float time is exact in float64; a float32 comparison would round the bound to float32
    nearest = float(bound) if abs(bound) < Fraction(torch.finfo(torch.float64).max) else math.copysign(math.inf, bound)
    return times <= nearest if Fraction(nearest) < bound else times < nearest


def static_graph(data: TemporalData, end: Optional[TimeBound] = None, *, num_nodes: Optional[int] = None,
                 dst_offset: Optional[int] = None) -> StaticGraph:
    """Project the events with ``t < end`` (all events when ``end`` is ``None``; compared exactly, :func:`before`)
    onto a static graph.

    Every undirected pair with at least one such event (self-loops removed and counted) is an
    edge; ``weight`` holds its number of events (both directions together).

    Args:
        data: events ``src``, ``dst``, ``t`` (in any order).
        end: exclusive time bound (a number or its text).
        num_nodes: bound of the ids (default ``max(src, dst) + 1``).
        dst_offset: bipartite data (the reader's ``ReadInfo.dst_offset``): the first id of the
            destination side; ``None``: unipartite.

    Raises:
        StaticGraphError: no edge before ``end``, a NaN or infinite ``end``, or an event within one side.
    """
    src, dst = data.src.long(), data.dst.long()
    n = int(num_nodes) if num_nodes is not None else (int(torch.maximum(src.max(), dst.max())) + 1 if src.numel() else 0)
    if end is not None:
        keep = before(data.t, end)
        src, dst = src[keep], dst[keep]
    return _build(src, dst, n, weighted=True, what=f"the events before t={end}" if end is not None else "the events",
                  dst_offset=dst_offset)


@dataclass(frozen=True)
class EdgeSplit:
    """A random edge split of a graph.

    Attributes:
        graph: the whole graph (training and test edges).
        train: the training graph: ``graph`` without the test edges (same ``num_nodes``).
        test: int64 ``[2, T]`` test edges (``u < v``, sorted by key), none of them in ``train``.
        test_fraction: β; ``seed``: the seed of the split.
    """

    graph: StaticGraph
    train: StaticGraph
    test: Tensor
    test_fraction: float
    seed: int

    def test_keys(self) -> Tensor:
        """Sorted keys of the test edges: int64 ``[T]``."""
        return self.test[0] * self.graph.num_nodes + self.test[1]

    def describe(self) -> dict:
        """The split's definition, for result files."""
        return {"split": "random", "test_fraction": self.test_fraction, "seed": self.seed,
                "rule": "the round(beta * E) edges with the smallest counter-based keys (seed, edge key) are test edges"}


#: counter round of the split's random keys (distinct from the samplers' rounds)
_SPLIT_ROUND = 1 << 24


def random_edge_split(graph: StaticGraph, test_fraction: float = 0.25, *, seed: int = 0) -> EdgeSplit:
    r"""Hold out :math:`T = \mathrm{round}(\beta E)` edges chosen uniformly at random as test edges.

    The choice is counter-based: edge :math:`e` gets the key :math:`u_e` of
    :func:`~tgeval.core.rng.counter_uniform` (seed, key of the edge), and the
    :math:`T` smallest keys are the test edges, so the split depends only on the seed and the
    edge set (not on the device). Weights follow their edges.

    Raises:
        StaticGraphError: ``T`` would be ``0`` or ``E`` (an empty test set or training graph).
        SplitError: ``test_fraction`` outside ``(0, 1)``.
    """
    if not 0.0 < float(test_fraction) < 1.0:
        raise SplitError(f"test_fraction must lie in (0, 1), got {test_fraction!r}.")
    e = graph.num_edges
    t = int(round(float(test_fraction) * e))
    if t < 1 or t >= e:
        raise StaticGraphError(f"test_fraction={test_fraction} of {e} edges leaves {t} test and {e - t} training "
                               f"edges; both must be >= 1. Use a graph with more edges or another fraction.")
    u = counter_uniform(seed, graph.keys(), _SPLIT_ROUND, 1)[:, 0]
    order = torch.argsort(u, stable=True)
    is_test = torch.zeros(e, dtype=torch.bool, device=graph.device)
    is_test[order[:t]] = True
    weight = None if graph.weight is None else graph.weight[~is_test]
    train = replace(graph, edge_index=graph.edge_index[:, ~is_test], weight=weight)
    return EdgeSplit(graph, train, graph.edge_index[:, is_test], float(test_fraction), int(seed))
