r"""Degree-corrected negatives: nodes drawn in proportion to their degree (docs/protocol.md §5).

A node of degree :math:`k_v` appears :math:`k_v` times in the draw list, so negatives have
the degree distribution of the positives' endpoints. For an event :math:`(u, v^+, t)` the pool
is

.. math::
    P = \{v : k_v > 0\} \setminus (\{u\} \cup S_{u,t} \cup N_u),

:math:`S_{u,t}` the simultaneous positives and :math:`N_u = \{v : (u, v) \text{ is an existing
edge}\}`; so self-loops, existing edges and duplicates are rejected (resampled), and one draw
has :math:`q(v) = k_v / \sum_{v' \in P} k_{v'}`. Degrees count events (an edge list entry;
repeated pairs count each time): ``count="total"`` counts both endpoints, ``count="in"``
only destinations (for bipartite data, where sources are never destinations).

* :class:`DegreeSampler` (static): degrees and existing edges from a given graph (typically
  the training segment); stateless, :meth:`observe` does nothing.
* :class:`TimeDegreeSampler` (time-aware): degrees and existing edges of the history observed
  before the batch, grown by :meth:`observe`.

Empty pools follow ``fallback`` and are counted. :meth:`log_q` reports :math:`\log q`.
"""

from __future__ import annotations

from typing import Optional, Union

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions
from tgeval.errors import SamplerError
from tgeval.samplers._draw import KeyPool, add_pair_exclusions, history_keys, insert_keys
from tgeval.samplers._pooled import PooledSampler
from tgeval.samplers.popularity import weighted_pool
from tgeval.stream.state import State

__all__ = ["DegreeSampler", "TimeDegreeSampler"]

_COUNTS = ("total", "in")


class _DegreeBase(PooledSampler):
    _what = "degree-corrected"

    def __init__(self, num_nodes: int, *, count: str, catalog: Optional[Catalog], replace: bool, directed: bool,
                 fallback: str, short: str) -> None:
        super().__init__(num_nodes, catalog=catalog, replace=replace, directed=directed, fallback=fallback,
                         short=short)
        if count not in _COUNTS:
            raise SamplerError(f"count must be one of {_COUNTS}, got {count!r}.")
        self.count = count
        self.degree = torch.zeros(self.num_nodes, dtype=torch.float64)
        self.pairs = torch.zeros(0, dtype=torch.long)
        self._cache: Optional[KeyPool] = None

    def _add(self, src: Tensor, dst: Tensor) -> None:
        degree = self.degree.to(dst.device)
        ones = torch.ones(dst.numel(), dtype=torch.float64, device=dst.device)
        degree = degree.index_add(0, dst, ones)
        if self.count == "total":
            degree = degree.index_add(0, src, ones)
        self.degree = degree
        self.pairs = insert_keys(self.pairs.to(dst.device), history_keys(src, dst, self.num_nodes,
                                                                         directed=self.directed))
        self._cache = None

    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        device = batch.src.device
        if self._cache is None or self._cache.keys.device != device:
            self.degree, self.pairs = self.degree.to(device), self.pairs.to(device)
            self._cache = weighted_pool(self.degree)
        return self._cache, torch.zeros_like(batch.src)

    def _more_exclusions(self, excl: Exclusions, batch: TemporalData) -> Exclusions:
        return add_pair_exclusions(excl, self.pairs.to(batch.src.device), batch.src, self.num_nodes)

    def _options(self) -> dict:
        return {"count": self.count, "num_existing_pairs": int(self.pairs.numel())}


class DegreeSampler(_DegreeBase):
    """Static degree-corrected negatives: degrees and existing edges of ``graph``.

    Args:
        num_nodes: exclusive upper bound of node ids.
        graph: a :class:`TemporalData` (its ``src``, ``dst``) or an ``edge_index`` (int64 ``[2, E]``).
        count: ``"total"`` (both endpoints) or ``"in"`` (destinations only).
        catalog, replace, directed, fallback, short: as :class:`~tgeval.samplers._pooled.PooledSampler`.
    """

    name = "degree"
    history_free = True  # degrees and existing edges of a fixed graph

    def __init__(self, num_nodes: int, *, graph: Union[TemporalData, Tensor], count: str = "total",
                 catalog: Optional[Catalog] = None, replace: bool = False, directed: bool = True,
                 fallback: str = "uniform", short: str = "fill") -> None:
        super().__init__(num_nodes, count=count, catalog=catalog, replace=replace, directed=directed,
                         fallback=fallback, short=short)
        if isinstance(graph, Tensor):
            if graph.dim() != 2 or graph.size(0) != 2:
                raise SamplerError(f"graph as a tensor must be an edge_index [2, E], got shape {tuple(graph.shape)}.")
            src, dst = graph[0].long(), graph[1].long()
        else:
            src, dst = graph.src, graph.dst
        self._add(src, dst)
        self.graph_edges = int(src.numel())

    def _options(self) -> dict:
        return {**super()._options(), "static": True, "graph_edges": self.graph_edges}


class TimeDegreeSampler(_DegreeBase):
    """Time-aware degree-corrected negatives: degrees and existing edges of the history before the batch.

    Args:
        num_nodes: exclusive upper bound of node ids.
        count: ``"total"`` (both endpoints) or ``"in"`` (destinations only).
        catalog, replace, directed, fallback, short: as :class:`~tgeval.samplers._pooled.PooledSampler`.
    """

    name = "degree_time"

    def __init__(self, num_nodes: int, *, count: str = "total", catalog: Optional[Catalog] = None,
                 replace: bool = False, directed: bool = True, fallback: str = "uniform",
                 short: str = "fill") -> None:
        super().__init__(num_nodes, count=count, catalog=catalog, replace=replace, directed=directed,
                         fallback=fallback, short=short)

    observe_batch_invariant = True  # integer counts and a set of pairs

    def observe(self, batch: TemporalData) -> None:
        """Add the batch's events to the degrees and its pairs to the existing edges."""
        self._add(batch.src, batch.dst)

    def _state(self) -> State:
        return {"degree": self.degree, "pairs": self.pairs}

    def _load(self, state: Optional[State]) -> None:
        if state is None:
            self.degree, self.pairs = torch.zeros_like(self.degree), self.pairs.new_zeros(0)
        else:
            self.degree, self.pairs = state["degree"], state["pairs"]
        self._cache = None
