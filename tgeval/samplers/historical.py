r"""Historical negatives (DGB, Poursafaei et al. 2022), conditioned on the source (docs/protocol.md §5).

DGB's historical sampler corrupts a batch with pairs observed before the batch but absent
from it. tgeval's samplers keep the source of each positive and return destinations, so the
definition is applied per source. With :math:`H_{<B}` the pairs observed before the batch
:math:`B` (what :meth:`observe` was given) and :math:`B_u = \{v : (u, v) \in B\}`, the
negatives of an event :math:`(u, v^+, t) \in B` are drawn uniformly from

.. math::
    \mathcal{P}(u) = \{v : (u, v) \in H_{<B}\} \setminus (B_u \cup \{u\}),

i.e. the destinations the source met before the batch, minus every destination it has in
the current batch (DGB's "not among the current batch's positives"; this contains the true
destination and the simultaneous positives). Undirected: :math:`(u, v)` and :math:`(v, u)`
are the same pair, and :math:`B_u` also holds every :math:`a` of an event :math:`(a, u)`.

Difference with :class:`~tgeval.samplers.source_history.SourceHistorySampler`: that one
removes only :math:`v^+` and the simultaneous positives (same ``t``), not the source's other
destinations of the batch; the two coincide when a batch is one timestamp group. DGB's
original edge-level version (whole corrupted pairs drawn from every earlier pair of the
graph) is an *edge* sampler and is not this class.

State: the sorted distinct pair keys ``u * n + v`` of the history (both orientations when
undirected), grown by :meth:`observe` with a sorted merge. Events whose pool is empty (a
source with no history) follow ``fallback`` and are counted.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.samplers._draw import KeyPool, history_keys, insert_keys
from tgeval.samplers._pooled import PooledSampler
from tgeval.stream.state import State

__all__ = ["HistoricalSampler", "PairHistorySampler"]


class PairHistorySampler(PooledSampler):
    """Destinations of the source's earlier pairs (shared by historical and source-history).

    Args:
        num_nodes: exclusive upper bound of node ids.
        catalog: candidates of the uniform fallback (required with ``fallback="uniform"``).
        replace: i.i.d. draws from the pool instead of distinct negatives.
        directed: if ``False``, ``(u, v)`` and ``(v, u)`` are one pair.
        fallback: ``"uniform"`` (default) or ``"error"``, for events whose pool is empty.
        short: ``"fill"`` (default, DGB's and DyGLib's behaviour), ``"replace"`` or ``"error"``,
            for events whose pool holds fewer than ``K`` valid items (see
            :class:`~tgeval.samplers._pooled.PooledSampler`).

    Attributes:
        keys: int64 ``[P]``, sorted distinct pair keys ``u * num_nodes + v`` of the history.
    """

    name = "pair_history"
    _what = "history"

    def __init__(self, num_nodes: int, *, catalog: Optional[Catalog] = None, replace: bool = False,
                 directed: bool = True, fallback: str = "uniform", short: str = "fill") -> None:
        super().__init__(num_nodes, catalog=catalog, replace=replace, directed=directed, fallback=fallback,
                         short=short)
        self.keys = torch.zeros(0, dtype=torch.long)

    observe_batch_invariant = True  # a set of pairs

    def observe(self, batch: TemporalData) -> None:
        """Add the batch's pairs to the history (sorted merge, O(P + B log B))."""
        new = history_keys(batch.src, batch.dst, self.num_nodes, directed=self.directed)
        self.keys = insert_keys(self.keys.to(new.device), new)

    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        if self.keys.device != batch.src.device:
            self.keys = self.keys.to(batch.src.device)
        return KeyPool(self.keys, self.num_nodes), batch.src

    def _state(self) -> State:
        return {"keys": self.keys}

    def _load(self, state: Optional[State]) -> None:
        self.keys = self.keys.new_zeros(0) if state is None else state["keys"]

    def _options(self) -> dict:
        return {"num_pairs": int(self.keys.numel())}


class HistoricalSampler(PairHistorySampler):
    """DGB historical negatives per source: :math:`\\{v : (u, v) \\in H_{<B}\\} \\setminus (B_u \\cup \\{u\\})`.

    See the module docstring for the definition, the fallback and the difference with
    source-history negatives.

    Example:
        >>> import torch
        >>> from torch_geometric.data import TemporalData
        >>> from tgeval.data.catalog import Catalog
        >>> s = HistoricalSampler(6, catalog=Catalog("custom", torch.arange(6), None, 6))
        >>> s.observe(TemporalData(src=torch.tensor([0, 0]), dst=torch.tensor([1, 2]), t=torch.tensor([1, 2])))
        >>> batch = TemporalData(src=torch.tensor([0]), dst=torch.tensor([1]), t=torch.tensor([3]))
        >>> batch.position = torch.tensor([2])  # replay positions key the draws
        >>> s.sample(batch, 1).dst  # 1 is the positive: 2 is the only other earlier destination of 0
        tensor([[2]])
    """

    name = "historical"
    scope = "batch"
