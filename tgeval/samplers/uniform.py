r"""Uniform negatives over a destination catalog (docs/protocol.md §5).

For event :math:`i` the pool is the catalog items available at :math:`t_i` minus the
excluded items (source, simultaneous positives, true destination). Without replacement the
``K`` negatives are a uniformly random ordered ``K``-subset of the pool; with replacement
they are ``K`` independent uniform draws from it.

Collision rule: draws that hit an excluded item (or, without replacement, repeat an
earlier draw of the same row) are rejected and redrawn. Keeping the first ``K`` accepted
draws of an i.i.d. uniform sequence is exactly sequential sampling without replacement,
so the rule does not bias the distribution. Rows that keep failing (pools barely larger
than ``K``) are finished exactly by ranking random keys over the whole pool.

Randomness is counter-based (:mod:`tgeval.core.rng`): an event's negatives are
a pure function of the generator's seed, the event's position (``batch.position``, attached
by :class:`~tgeval.stream.loader.TimestampBatchLoader`; a batch without it is refused) and its own
draws. They do not depend on
the other events of the batch, on later events, on the batch size or on the device; the
same seed gives the same negatives on every call (reseed, e.g. per epoch, for fresh ones).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions, build_exclusions
from tgeval.errors import ProtocolError, SamplerError
from tgeval.samplers._draw import batch_position, rejection_rounds
from tgeval.samplers.base import NegativeSampler, Negatives
from tgeval.core.rng import counter_uniform

__all__ = ["UniformSampler"]

_MAX_DRAWS_PER_ITEM = 16  # rejection reads at most this many draws per pool item, then finishes exactly
_EXACT_ROUND = 1 << 20  # counter rounds of the exact finish (distinct from rejection rounds)
_EXACT_BUDGET = 1 << 22  # most (row, pool item) keys held at once by the exact finish


class UniformSampler(NegativeSampler):
    """Uniform negatives over ``catalog`` (items available at each event's time).

    Args:
        catalog: candidate destinations.
        replace: draw with replacement (duplicates allowed) instead of distinct negatives.
        directed: if ``False``, an event ``(a, b, t)`` also makes ``a`` a simultaneous
            positive (never a negative) of source ``b``.
        fallback: catalog for events whose pool is *empty* (e.g. the first events of a
            time-available catalog): their negatives are drawn uniformly from it and counted
            (``num_fallback_events`` in :meth:`describe`); ``None`` raises instead.

    Raises (from :meth:`sample`):
        SamplerError: if an event's pool holds fewer than ``K`` items without
            replacement, or none at all with replacement.
    """

    name = "uniform"
    history_free = True

    def __init__(self, catalog: Catalog, *, replace: bool = False, directed: bool = True,
                 fallback: Optional[Catalog] = None) -> None:
        self.catalog = catalog
        self.replace = replace
        self.directed = directed
        self._fallback = None if fallback is None else UniformSampler(fallback, replace=replace, directed=directed)
        self._num_fallback = torch.zeros((), dtype=torch.long)

    def reset_state(self) -> None:
        """Zero the fallback counter (the sampler has no history)."""
        self._num_fallback = torch.zeros((), dtype=torch.long)

    def log_q(self, batch: TemporalData, negatives: Tensor) -> Tensor:
        """``-log |pool|`` of each row's uniform pool, for every negative: float64 ``[B, K]``."""
        catalog = self.catalog if self.catalog.device == batch.src.device else self.catalog.to(batch.src.device)
        excl = build_exclusions(batch.src, batch.dst, batch.t, catalog, directed=self.directed)
        size = (catalog.num_available(batch.t) - excl.count).double()
        return (-torch.log(size))[:, None].expand(negatives.shape).clone()

    def describe(self) -> dict:
        return {"name": self.name, "replace": self.replace, "directed": self.directed,
                "catalog": self.catalog.describe(),
                "fallback": None if self._fallback is None else self._fallback.catalog.describe(),
                "num_fallback_events": int(self._num_fallback),
                "randomness": "counter-based: (generator seed, replay position, draw index)"}

    def sample(self, batch: TemporalData, num_negatives: int, generator: Optional[torch.Generator] = None) -> Negatives:
        """Uniform negative destinations ``[B, K]`` (every slot a negative: no mask)."""
        return Negatives(self.draw_destinations(batch, num_negatives, generator))

    def draw_destinations(self, batch: TemporalData, num_negatives: int, generator: Optional[torch.Generator] = None,
                          *, rows: Optional[Tensor] = None) -> Tensor:
        """Uniform negatives: int64 ``[B, K]``; with ``rows`` (bool ``[B]``) only those rows are drawn
        and checked, the others hold 0 (used by samplers that fall back to uniform for some rows)."""
        src, dst, t = batch.src, batch.dst, batch.t
        device = src.device
        b, k = src.numel(), int(num_negatives)
        if k < 0:
            raise ProtocolError(f"num_negatives must be >= 0, got {num_negatives}.")
        if k == 0 or b == 0:
            return torch.zeros(b, k, dtype=torch.long, device=device)
        if self.catalog.device != device:  # move once; later batches reuse it
            self.catalog = self.catalog.to(device)
        catalog = self.catalog
        seed = 0 if generator is None else generator.initial_seed()
        position = batch_position(batch)
        excl = build_exclusions(src, dst, t, catalog, directed=self.directed)
        pool_size = catalog.num_available(t)  # items available (a prefix of catalog.items)
        pool = pool_size - excl.count
        need = 1 if self.replace else k
        wanted = torch.ones(b, dtype=torch.bool, device=device) if rows is None else rows
        fallback_rows = None
        if self._fallback is not None:
            fallback_rows = wanted & (pool == 0)
            wanted = wanted & ~fallback_rows
        short = (pool < need) & wanted
        if bool(short.any()):
            i = int(torch.nonzero(short)[0, 0])
            raise SamplerError(
                f"event {i} of the batch (src={int(src[i])}, t={t[i].tolist()}) has {int(pool[i])} candidate "
                f"negatives in the {catalog.kind!r} catalog after exclusions, fewer than the {need} required "
                f"({k} negatives, replace={self.replace}). Lower K, use a larger catalog, or pass replace=True."
            )

        if fallback_rows is not None and bool(fallback_rows.any()):
            self._num_fallback = self._num_fallback + int(fallback_rows.sum())
            fallback_out = self._fallback.draw_destinations(  # type: ignore[union-attr]
                batch, k, generator, rows=fallback_rows)
            return torch.where(fallback_rows[:, None], fallback_out,
                               self.draw_destinations(batch, k, generator, rows=wanted))
        # The pool of a row is the available prefix of the catalog's items; pools too tight
        # for rejection are finished exactly.
        out = torch.zeros(b, k, dtype=torch.long, device=device)
        rejection_rounds(
            out, wanted.clone(), pool_size, excl, replace=self.replace, seed=seed, position=position,
            max_draws_per_item=_MAX_DRAWS_PER_ITEM,
            pick=lambda rows, u: catalog.items[(u * pool_size[rows, None]).long().clamp(max=catalog.size - 1)],
            finish=lambda rows: self._finish_exactly(out, rows, position, seed, pool_size, pool, excl, k))
        return out

    def _finish_exactly(self, out: Tensor, rows: Tensor, position: Tensor, seed: int, pool_size: Tensor,
                        pool: Tensor, excl: Exclusions, k: int) -> None:
        """Rows the rejection rounds did not finish: order the whole pool by random keys,
        excluded items last, in chunks of at most ``_EXACT_BUDGET`` keys."""
        device = out.device
        width = int(pool_size[rows].max())
        step = max(1, _EXACT_BUDGET // max(width, 1))
        for start in range(0, rows.numel(), step):
            chunk = rows[start : start + step]
            items = self.catalog.items[:width].expand(chunk.numel(), width)
            keys = counter_uniform(seed, position[chunk], _EXACT_ROUND, width)
            beyond = torch.arange(width, device=device)[None, :] >= pool_size[chunk, None]
            invalid = excl.contains(chunk, items) | beyond
            order = torch.argsort(keys.masked_fill(invalid, 2.0), dim=1)  # valid items first, shuffled
            if self.replace:
                u = counter_uniform(seed, position[chunk], _EXACT_ROUND + 1, k)
                cols = order.gather(1, (u * pool[chunk, None]).long())
            else:
                cols = order[:, :k]
            out[chunk] = items.gather(1, cols)
