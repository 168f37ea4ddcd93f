r"""Time-available negatives: uniform over the destinations that appeared before ``t`` (docs/protocol.md §5).

This is :class:`~tgeval.samplers.uniform.UniformSampler` over the ``"time-available"``
catalog (:func:`~tgeval.data.catalog.build_catalog`): an event :math:`(u, v^+, t)` draws
uniformly from :math:`\{v : v \text{ is the destination of an event at } s < t\} \setminus
(\{u\} \cup S_{u,t})`. The catalog is built from the whole stream, but an item is offered
only strictly after its first appearance, so the draws for an event depend only on events
before it (changing later events changes nothing). The first events of a stream have an
empty pool: with ``fallback`` (e.g. the training catalog) they draw from it and are counted,
without it they raise :class:`~tgeval.errors.SamplerError`; a pool that is not empty but
smaller than ``K`` always raises (as for every uniform sampler).
"""

from __future__ import annotations

from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog, build_catalog
from tgeval.samplers.uniform import UniformSampler

__all__ = ["TimeAvailableSampler"]


class TimeAvailableSampler(UniformSampler):
    """Uniform sampler over ``build_catalog(data, "time-available")`` (a thin named constructor).

    Args:
        data: the whole time-sorted stream (only first appearance times are used).
        num_nodes: id bound (default ``max(src, dst) + 1``).
        replace: draw with replacement.
        directed: as :class:`~tgeval.samplers.uniform.UniformSampler`.
        fallback: catalog for events whose pool is empty (counted), or ``None`` to raise.
    """

    name = "time_available"

    def __init__(self, data: TemporalData, *, num_nodes: Optional[int] = None, replace: bool = False,
                 directed: bool = True, fallback: Optional[Catalog] = None) -> None:
        super().__init__(build_catalog(data, "time-available", num_nodes=num_nodes), replace=replace,
                         directed=directed, fallback=fallback)
