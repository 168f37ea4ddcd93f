r"""Popularity negatives: destinations drawn in proportion to their (recent) in-degree (docs/protocol.md §5).

With :math:`c_v` the number of events with destination :math:`v` observed before the batch
(undirected: events touching :math:`v`), or with ``half_life=h`` the decayed count
:math:`c_v = \sum_{s} 2^{-(t_{ref} - s)/h}` over those events, the weight is
:math:`w_v = c_v^{\alpha}` (``power`` :math:`\alpha`, 1 by default). An event
:math:`(u, v^+, t)` draws from the pool :math:`P = \{v : c_v > 0\} \setminus (\{u\} \cup S_{u,t})`
with, for one draw,

.. math::
    q(v) = w_v \Big/ \sum_{v' \in P} w_{v'} ,

and without replacement by successive sampling (resample collisions). Decay multiplies every
count by the same factor, so :math:`q` does not depend on the time it is evaluated at; the
counts are stored as of the last observed time (the latest event weighs 1, so only counts
negligible next to it can underflow). :meth:`log_q` reports
:math:`\log q` of the draws for log-q corrected losses. Empty pools (nothing observed yet)
follow ``fallback`` and are counted.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.errors import SamplerError
from tgeval.models.base import time_store
from tgeval.samplers._draw import KeyPool
from tgeval.samplers._pooled import PooledSampler
from tgeval.stream.state import State

__all__ = ["PopularitySampler", "weighted_pool"]


def weighted_pool(weight: Tensor) -> KeyPool:
    """A pool shared by all rows (base ``0``) over the ids with positive ``weight`` (float64 ``[N]``)."""
    ids = torch.nonzero(weight > 0).flatten()
    cum = torch.zeros(ids.numel() + 1, dtype=torch.float64, device=weight.device)
    torch.cumsum(weight[ids], 0, out=cum[1:])
    return KeyPool(ids, weight.numel(), cum)


class PopularitySampler(PooledSampler):
    """Destinations proportional to :math:`c_v^{\\alpha}` (see the module docstring).

    Args:
        num_nodes: exclusive upper bound of node ids.
        half_life: ``None`` (all history counts equally) or a positive duration ``h``.
        power: exponent :math:`\\alpha > 0` of the counts.
        catalog, replace, directed, fallback, short: as :class:`~tgeval.samplers._pooled.PooledSampler`.

    Attributes:
        counts: float64 ``[N]``, (decayed, rescaled) in-degree of every node.
    """

    name = "popularity"
    _what = "popularity (destinations seen before)"

    def __init__(self, num_nodes: int, *, half_life: Optional[float] = None, power: float = 1.0,
                 catalog: Optional[Catalog] = None, replace: bool = False, directed: bool = True,
                 fallback: str = "uniform", short: str = "fill") -> None:
        super().__init__(num_nodes, catalog=catalog, replace=replace, directed=directed, fallback=fallback,
                         short=short)
        if half_life is not None and not float(half_life) > 0:
            raise SamplerError(f"half_life must be a positive duration or None, got {half_life}.")
        if not float(power) > 0:
            raise SamplerError(f"power must be > 0, got {power}.")
        self.half_life = None if half_life is None else float(half_life)
        self.power = float(power)
        self.observe_batch_invariant = self.half_life is None  # integer counts; decayed sums round per batch
        self.counts = torch.zeros(self.num_nodes, dtype=torch.float64)
        self.reference_time = torch.zeros((), dtype=torch.long)  # the stream's time kind (int64, or float64)
        self._cache: Optional[KeyPool] = None

    def observe(self, batch: TemporalData) -> None:
        """Add the batch's destinations (and sources, if undirected) to the counts."""
        device = batch.dst.device
        counts = self.counts.to(device)
        nodes = batch.dst if self.directed else torch.cat([batch.dst, batch.src])
        times = batch.t if self.directed else torch.cat([batch.t, batch.t])
        if self.half_life is None:
            counts = counts.index_add(0, nodes, torch.ones_like(times, dtype=torch.float64))
        else:  # elapsed times: differences in the stream's time kind (exact for int64 beyond 2^53), then float64
            reference = time_store(self.reference_time.to(device), times)
            now = times.max()
            factor = torch.exp2(-(now - reference).double() / self.half_life)
            counts = torch.where(counts > 0, counts * factor, counts)  # no 0 * inf before the first event
            counts = counts.index_add(0, nodes, torch.exp2(-(now - times).double() / self.half_life))
            self.reference_time = now
        self.counts = counts
        self._cache = None

    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        device = batch.src.device
        if self._cache is None or self._cache.keys.device != device:
            weight = self.counts.to(device)
            self._cache = weighted_pool(weight if self.power == 1.0 else weight.pow(self.power))
        return self._cache, torch.zeros_like(batch.src)

    def _state(self) -> State:
        return {"counts": self.counts, "reference_time": self.reference_time}

    def _load(self, state: Optional[State]) -> None:
        if state is None:
            self.counts = torch.zeros_like(self.counts)
            self.reference_time = torch.zeros_like(self.reference_time)
        else:
            self.counts, self.reference_time = state["counts"], state["reference_time"]
        self._cache = None

    def _options(self) -> dict:
        return {"half_life": self.half_life, "power": self.power}
