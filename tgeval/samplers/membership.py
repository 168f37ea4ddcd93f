r"""Seen and unseen negatives: the two negative sets of the pair-membership factorial
(:mod:`tgeval.diagnostics.membership`).

For an event :math:`(u, v^+, t)` of a batch, with :math:`H_u` the destinations :math:`u` met in
the history observed before the batch, :math:`C` a fixed catalog and :math:`P_{u,t}` the
simultaneous positives (which hold :math:`v^+`):

* :class:`SeenSampler` draws uniformly from :math:`S_u = H_u \setminus (\{u\} \cup P_{u,t})`
  (the source-history pool);
* :class:`UnseenSampler` draws uniformly from :math:`U_u = C \setminus (H_u \cup \{u\} \cup P_{u,t})`.

``K`` distinct negatives are drawn without replacement (the shared pool kernel, counter-based
randomness keyed by replay position: :mod:`tgeval.core.rng`). Unlike the other samplers, a pool
with fewer than ``K`` valid items is never an error nor a fallback: it contributes all of them,
and the padding slots are masked (:class:`~tgeval.samplers.base.Negatives`); an empty pool
masks every slot. :meth:`~SeenSampler.draw` also returns each event's pool size, and
:meth:`~SeenSampler.pools` the pools themselves (for exhaustive ranking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions
from tgeval.data.sorted_keys import expand_ranges
from tgeval.errors import CatalogError
from tgeval.samplers._draw import KeyPool, add_pair_exclusions, batch_position, draw_from_pools
from tgeval.samplers._pooled import PooledSampler
from tgeval.samplers.base import NegativeSampler, Negatives
from tgeval.samplers.historical import PairHistorySampler
from tgeval.samplers.source_history import SourceHistorySampler
from tgeval.stream.state import State

__all__ = ["SeenSampler", "UnseenSampler", "PoolSample", "BatchPools", "require_fixed_catalog"]


@dataclass(frozen=True)
class PoolSample:
    """Masked draws of one batch.

    Attributes:
        negatives: :class:`Negatives` with ``dst`` int64 ``[B, K]`` and ``mask`` bool ``[B, K]``
            (``False`` on padding; padded slots hold the source id).
        size: int64 ``[B]``, valid items of each event's pool after exclusions.
    """

    negatives: Negatives
    size: Tensor


@dataclass(frozen=True)
class BatchPools:
    """The pools of the events of one batch.

    Attributes:
        pool: every pool as one sorted key array ``base * n + item``.
        base: int64 ``[B]``, the block of ``pool`` holding each event's pool (its source, or ``0``
            for one shared pool).
        exclusions: the items each event excludes (itself, the simultaneous positives, ...).
    """

    pool: KeyPool
    base: Tensor
    exclusions: Exclusions

    def bounds(self, rows: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        """Slice ``[lo, hi)`` of the pool keys of each event (of ``rows``), exclusions included: int64 each."""
        return self.pool.bounds(self.base if rows is None else self.base[rows])

    def holds(self, items: Tensor) -> Tensor:
        """Whether ``items[i]`` is in event ``i``'s pool (exclusions ignored): bool ``[B]``."""
        return self.pool.index(self.base, items)[1]

    def valid_items(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """Every non-excluded item of the pools of ``rows``: ``(row, item)`` int64 ``[R]`` each, grouped by row."""
        lo, hi = self.bounds(rows)
        which, index = expand_ranges(lo, hi - lo)
        row = rows[which]
        item = self.pool.keys[index] - self.base[row] * self.pool.n
        keep = ~self.exclusions.contains(row, item[:, None])[:, 0]
        return row[keep], item[keep]


def require_fixed_catalog(catalog: Catalog) -> None:
    """Raise :class:`~tgeval.errors.CatalogError` for a time-available catalog (``available_from`` set)."""
    if catalog.available_from is not None:
        raise CatalogError(f"the membership diagnostics need a fixed catalog, but the {catalog.kind!r} catalog is "
                           f"time-available (available_from is set). Build it with kind='train' or 'custom'.")


class _MaskedPoolSampler(NegativeSampler):
    """Wraps a pool sampler; short pools are returned whole and masked, never an error or a fallback."""

    _pools: PooledSampler

    def pools(self, batch: TemporalData) -> BatchPools:
        """The pools of ``batch``'s events given the history observed so far."""
        pool, base = self._pools._pool(batch)
        return BatchPools(pool, base, self._pools._exclusions(batch))

    def draw(self, batch: TemporalData, num_negatives: int, generator: Optional[torch.Generator] = None) -> PoolSample:
        """``K`` distinct negatives per event and its pool size (see :class:`PoolSample`); short pools give
        all their items, masked. The randomness is keyed by ``generator``'s seed (``0`` without one)."""
        seed = 0 if generator is None else generator.initial_seed()
        k = int(num_negatives)
        pools = self.pools(batch)
        result = draw_from_pools(pools.pool, pools.base, pools.exclusions, k, replace=False, seed=seed,
                                 position=batch_position(batch))
        out = result.negatives.clone()
        short = (result.size > 0) & (result.size < k)
        if bool(short.any()):
            row, item = pools.valid_items(torch.nonzero(short).flatten())
            _, counts = torch.unique_consecutive(row, return_counts=True)
            out[row, expand_ranges(torch.zeros_like(counts), counts)[1]] = item  # column = rank within its row
        mask = out >= 0
        out = torch.where(mask, out, batch.src[:, None].expand_as(out))
        return PoolSample(Negatives(out, None, mask), result.size)

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Negatives:
        """:class:`Negatives` ``[B, K]`` with a mask (short or empty pools are padded)."""
        return self.draw(batch, num_negatives, generator).negatives

    def observe(self, batch: TemporalData) -> None:
        self._pools.observe(batch)

    def reset_state(self) -> None:
        self._pools.reset_state()

    def snapshot(self) -> State:
        return self._pools.snapshot()

    def restore(self, state: State) -> None:
        self._pools.restore(state)

    @property
    def keys(self) -> Tensor:
        """int64 ``[P]``: sorted distinct pair keys ``u * n + v`` of the observed history."""
        return self._pools.keys  # type: ignore[attr-defined, no-any-return]

    def describe(self) -> dict:
        return {"name": self.name, "replace": False, "short_pools": "all valid items, padding masked",
                "empty_pools": "all slots masked (no fallback)", "directed": self._pools.directed,
                "randomness": "counter-based: (generator seed, replay position, draw index)"}


class SeenSampler(_MaskedPoolSampler):
    r"""Seen negatives: uniform over :math:`H_u \setminus (\{u\} \cup P_{u,t})` (source-history pool).

    Args:
        num_nodes: exclusive upper bound of node ids.
        directed: if ``False``, ``(u, v)`` and ``(v, u)`` are one pair.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> seen = SeenSampler(4)
        >>> seen.observe(TemporalData(src=torch.tensor([0, 0]), dst=torch.tensor([1, 2]), t=torch.tensor([0, 1])))
        >>> batch = TemporalData(src=torch.tensor([0]), dst=torch.tensor([1]), t=torch.tensor([2]))
        >>> batch.position = torch.tensor([2])
        >>> drawn = seen.draw(batch, 3)
        >>> drawn.negatives.dst.tolist(), drawn.negatives.mask.tolist(), drawn.size.tolist()
        ([[2, 0, 0]], [[True, False, False]], [1])
    """

    name = "seen"

    def __init__(self, num_nodes: int, *, directed: bool = True) -> None:
        self._pools = SourceHistorySampler(num_nodes, directed=directed, fallback="error", short="error")


class _UnseenPool(PairHistorySampler):
    """The catalog as one shared pool (base 0), minus the source's history pairs."""

    name = "unseen_pool"
    scope = "group"
    _what = "unseen catalog"

    def __init__(self, catalog: Catalog, num_nodes: int, *, directed: bool = True) -> None:
        super().__init__(num_nodes, directed=directed, fallback="error", short="error")
        self.items = torch.sort(catalog.items).values

    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        device = batch.src.device
        if self.items.device != device:
            self.items = self.items.to(device)
        if self.keys.device != device:
            self.keys = self.keys.to(device)
        return KeyPool(self.items, self.num_nodes), torch.zeros_like(batch.src)

    def _more_exclusions(self, excl: Exclusions, batch: TemporalData) -> Exclusions:
        return add_pair_exclusions(excl, self.keys, batch.src, self.num_nodes)


class UnseenSampler(_MaskedPoolSampler):
    r"""Unseen negatives: uniform over :math:`C \setminus (H_u \cup \{u\} \cup P_{u,t})`.

    Args:
        catalog: a fixed catalog (``available_from is None``).
        num_nodes: exclusive upper bound of node ids.
        directed: if ``False``, ``(u, v)`` and ``(v, u)`` are one pair.

    Raises:
        CatalogError: for a time-available catalog.
    """

    name = "unseen"

    def __init__(self, catalog: Catalog, num_nodes: int, *, directed: bool = True) -> None:
        require_fixed_catalog(catalog)
        self._pools = _UnseenPool(catalog, num_nodes, directed=directed)
