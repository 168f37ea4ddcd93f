r"""Common machinery of the samplers that draw from a per-row pool (historical, popularity, degree, ...).

A subclass says which pool each row draws from (:meth:`PooledSampler._pool`, a
:class:`~tgeval.samplers._draw.KeyPool` and a base per row) and, optionally, what else to
exclude; this class applies the rules every sampler obeys (docs/protocol.md §5):

* excluded items: the source, the simultaneous positives (``scope="group"``: same source,
  same ``t``) or every destination of the source in the batch (``scope="batch"``), plus any
  subclass exclusions; collisions are resampled (:mod:`tgeval.samplers._draw`);
* a **short** pool, holding some valid items but fewer than ``K`` (without replacement),
  follows ``short``: ``"fill"`` (the default, as DGB and DyGLib do: the row takes every valid
  pool item and is topped up with distinct uniform draws from ``catalog`` under the uniform
  fallback's rules, never repeating a pool item of the row), ``"replace"`` (that row draws
  its ``K`` from the pool with replacement) or ``"error"`` (a
  :class:`~tgeval.errors.SamplerError`). Short events and filled slots are counted
  (``num_short_events``, ``num_filled_slots`` in :meth:`describe`), so a result says how much
  of a hard sampler's negatives were uniform;
* an **empty** pool (no valid item at all) falls back explicitly: ``fallback="uniform"``
  draws that event's negatives with :class:`~tgeval.samplers.uniform.UniformSampler` over
  ``catalog`` (source and simultaneous positives excluded, same ``replace``), from a seed
  derived from the generator's; ``fallback="error"`` raises. Fallback events are counted
  (``num_fallback_events`` in :meth:`describe`; counters restart at :meth:`reset_state`,
  which the replay engine calls before each evaluation).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions, build_exclusions
from tgeval.data.hashing import BuiltFrom
from tgeval.data.strata import MAX_PAIR_KEY_NODES
from tgeval.errors import ProtocolError, SamplerError
from tgeval.core.rng import derived_seed
from tgeval.samplers._draw import (FALLBACKS, SHORT_RULES, KeyPool, batch_exclusions, batch_position, check_ids,
                                   draw_from_pools, every_valid_item, short_pool_error)
from tgeval.samplers.base import NegativeSampler, Negatives, SampledNegatives, as_negatives
from tgeval.samplers.uniform import UniformSampler
from tgeval.stream.state import State, clone_state

__all__ = ["PooledSampler"]

_FALLBACK_SALT = 1
_SHORT_RULE = {"fill": "a pool with fewer than K valid items gives all of them, topped up with distinct uniform "
                       "catalog draws (the fallback's rules)",
               "replace": "a pool with fewer than K valid items is drawn with replacement",
               "error": "a pool with fewer than K valid items raises"}


class PooledSampler(NegativeSampler):
    """Base of the pool samplers (see the module docstring).

    Args:
        num_nodes: exclusive upper bound of node ids.
        catalog: candidates of the uniform fallback (required with ``fallback="uniform"``).
        replace: i.i.d. draws from the pool instead of distinct negatives.
        directed: if ``False``, pairs are unordered and an event ``(a, b, t)`` also makes
            ``a`` a simultaneous positive of source ``b``.
        fallback: ``"uniform"`` or ``"error"``, for events whose pool is empty.
        short: ``"fill"``, ``"replace"`` or ``"error"``, for events whose pool is short (see the
            module docstring); ``"fill"`` and ``"replace"`` need ``catalog`` / nothing more.
    """

    name = "pooled"
    uses_whole_stream = False
    scope = "group"  # "group": simultaneous positives excluded; "batch": all batch positives of the source
    _what = "pool"

    def __init__(self, num_nodes: int, *, catalog: Optional[Catalog] = None, replace: bool = False,
                 directed: bool = True, fallback: str = "uniform", short: str = "fill") -> None:
        if fallback not in FALLBACKS:
            raise SamplerError(f"fallback must be one of {FALLBACKS}, got {fallback!r}.")
        if short not in SHORT_RULES:
            raise SamplerError(f"short must be one of {SHORT_RULES}, got {short!r}.")
        if short == "fill" and catalog is None:
            raise SamplerError(f"{type(self).__name__} with short='fill' needs a `catalog` to top up short pools "
                               f"from. Pass catalog=..., or short='replace' / 'error'.")
        if fallback == "uniform" and catalog is None:
            raise SamplerError(f"{type(self).__name__} with fallback='uniform' needs a `catalog` to draw from when "
                               f"an event's pool is empty. Pass catalog=..., or fallback='error'.")
        if num_nodes < 1 or num_nodes > MAX_PAIR_KEY_NODES:
            raise SamplerError(f"num_nodes must lie in [1, {MAX_PAIR_KEY_NODES}] (int64 pair keys), got {num_nodes}.")
        self.num_nodes = int(num_nodes)
        self.catalog = catalog
        self.replace = bool(replace)
        self.directed = bool(directed)
        self.fallback = fallback
        self.short = short
        self._fallback_sampler = (UniformSampler(catalog, replace=replace, directed=directed)
                                  if catalog is not None else None)
        self._everything: Optional[Catalog] = None
        self.reset_counters()

    # ---- what subclasses provide -------------------------------------------------------
    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        """The pools and the base of each row (int64 ``[B]``)."""
        raise NotImplementedError

    def _more_exclusions(self, excl: Exclusions, batch: TemporalData) -> Exclusions:
        return excl

    def _state(self) -> State:
        return {}

    def _load(self, state: Optional[State]) -> None:
        """Set the history from a snapshot, or to the empty history when ``state`` is ``None``."""

    def _options(self) -> dict:
        return {}

    # ---- shared rules ------------------------------------------------------------------
    def reset_counters(self) -> None:
        """Zero ``num_events``, ``num_fallback_events``, ``num_short_events`` and ``num_filled_slots``."""
        self._num_events = torch.zeros((), dtype=torch.long)
        self._num_fallback = torch.zeros((), dtype=torch.long)
        self._num_short = torch.zeros((), dtype=torch.long)
        self._num_filled = torch.zeros((), dtype=torch.long)

    def _exclusions(self, batch: TemporalData) -> Exclusions:
        device = batch.src.device
        if self._everything is None or self._everything.device != device:
            ids = torch.arange(self.num_nodes, device=device)
            self._everything = Catalog("custom", ids, None, self.num_nodes, {"rule": "every node id"})
        excl = batch_exclusions(batch, self._everything, directed=self.directed, scope=self.scope)
        return self._more_exclusions(excl, batch)

    def _draw_inputs(self, batch: TemporalData) -> tuple[KeyPool, Tensor, Exclusions]:
        """The pools, each row's base and the exclusions of one batch."""
        pool, base = self._pool(batch)
        return pool, base, self._exclusions(batch)

    def _decode(self, batch: TemporalData, items: Tensor) -> SampledNegatives:
        """Negatives from the drawn items ``[B, K]`` (destinations by default)."""
        return items

    def _fallback_rows(self, batch: TemporalData, k: int, generator: torch.Generator,
                       rows: Tensor) -> tuple[Tensor, Tensor]:
        """Uniform-fallback ``(src, dst)`` ``[B, K]`` for the ``rows`` (bool ``[B]``) that need it."""
        assert self._fallback_sampler is not None
        dst = self._fallback_sampler.draw_destinations(batch, k, generator, rows=rows)
        return batch.src[:, None].expand_as(dst), dst

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Negatives:
        """``K`` negatives per positive (see the class and module docstrings)."""
        src = batch.src
        device = src.device
        b, k = src.numel(), int(num_negatives)
        if k < 0:
            raise ProtocolError(f"num_negatives must be >= 0, got {num_negatives}.")
        if k == 0 or b == 0:
            return as_negatives(self._decode(batch, torch.zeros(b, k, dtype=torch.long, device=device)))
        check_ids(batch.src, batch.dst, self.num_nodes)
        seed = 0 if generator is None else generator.initial_seed()
        pool, base, excl = self._draw_inputs(batch)
        position = batch_position(batch)
        result = draw_from_pools(pool, base, excl, k, replace=self.replace, seed=seed, position=position)
        need = 1 if self.replace else k
        short = (result.size > 0) & (result.size < need)
        empty = result.size == 0
        items = result.negatives
        any_short = bool(short.any())
        if any_short:
            i = int(torch.nonzero(short)[0, 0])
            if self.short == "error":
                raise short_pool_error(batch, i, int(result.size[i]), need, k, self.replace, self._what)
            if self.short == "replace":
                redrawn = draw_from_pools(pool, base, excl, k, replace=True, seed=seed, position=position)
                items = torch.where(short[:, None], redrawn.negatives, items)
            else:
                rows = torch.nonzero(short).flatten()
                items = items.index_put((rows,), every_valid_item(pool, base, excl, rows, k, seed=seed,
                                                                   position=position))
            self._num_short = self._num_short + short.sum().cpu()
        if bool(empty.any()) and (self.fallback == "error" or self._fallback_sampler is None):
            i = int(torch.nonzero(empty)[0, 0])
            raise SamplerError(
                f"event {i} of the batch (src={int(src[i])}, dst={int(batch.dst[i])}, t={batch.t[i].tolist()}) "
                f"has an empty {self._what} pool after exclusions and fallback='error'. Use fallback='uniform' "
                f"(counted in the result) or a MixtureSampler with a uniform component."
            )
        out = as_negatives(self._decode(batch, items))
        filling = empty | short if any_short and self.short == "fill" else empty
        if bool(filling.any()):
            sub = torch.Generator(device=generator.device if generator is not None else "cpu")
            sub.manual_seed(derived_seed(seed, _FALLBACK_SALT))
            fb_src, fb_dst = self._fallback_rows(batch, k, sub, filling)
            out = self._top_up(batch, out, fb_src, fb_dst, filling, torch.where(short, result.size, 0))
            self._num_fallback = self._num_fallback + empty.sum().cpu()
            if any_short and self.short == "fill":
                self._num_filled = self._num_filled + torch.where(short, k - result.size, 0).sum().cpu()
        self._num_events = self._num_events + b
        return out

    @staticmethod
    def _top_up(batch: TemporalData, out: Negatives, fb_src: Tensor, fb_dst: Tensor, rows: Tensor,
                kept: Tensor) -> Negatives:
        """Each of the ``rows`` (bool ``[B]``) keeps its first ``kept`` negatives (int64 ``[B]``) and
        takes the rest, in order, from its uniform draws ``(fb_src, fb_dst)`` (``K`` distinct per
        row) that repeat no kept negative (at least ``K - kept`` of them do not)."""
        k = out.dst.size(1)
        src = out.src if out.src is not None else batch.src[:, None].expand_as(out.dst)
        keep = torch.arange(k, device=out.dst.device)[None, :] < kept[:, None]
        repeats = ((fb_dst[:, :, None] == out.dst[:, None, :]) & (fb_src[:, :, None] == src[:, None, :])
                   & keep[:, None, :]).any(-1)
        fresh = ~repeats & rows[:, None]
        slot = kept[:, None] + torch.cumsum(fresh.long(), 1) - 1
        use = fresh & (slot < k)
        target = (torch.nonzero(use, as_tuple=True)[0], slot[use])
        dst, new_src = out.dst.clone(), src.clone()
        dst[target], new_src[target] = fb_dst[use], fb_src[use]
        return Negatives(dst, new_src if out.src is not None else None, out.mask)

    def log_q(self, batch: TemporalData, negatives: Tensor) -> Tensor:
        r"""Log-probability of each negative under one draw of the row's proposal: float64 ``[B, K]``.

        :math:`\log q_i(v) = \log w_v - \log \sum_{v' \in P_i \setminus X_i} w_{v'}` (uniform
        pools: :math:`-\log |P_i \setminus X_i|`); for fallback rows, minus the log of the
        uniform catalog pool size; so are the filled slots of short rows (negatives outside the
        row's pool). Call it before :meth:`observe` (it reads the same history as
        :meth:`sample`). Without replacement this is the proposal of the first draw, the
        quantity a log-q (sampled softmax) correction uses.
        """
        pool, base = self._pool(batch)
        excl = self._exclusions(batch)
        result = draw_from_pools(pool, base, excl, 0, replace=True, seed=0, position=batch_position(batch))
        pos, found = pool.index(base[:, None], negatives)
        weight = torch.where(found, pool.weight(pos), torch.zeros_like(pos, dtype=torch.float64))
        out = torch.log(weight) - torch.log(result.mass)[:, None]
        uniform = (result.size == 0)[:, None] | ~found  # fallback rows, filled slots
        if bool(uniform.any()) and self.catalog is not None:
            catalog = self.catalog.to(batch.src.device) if self.catalog.device != batch.src.device else self.catalog
            cat_excl = build_exclusions(batch.src, batch.dst, batch.t, catalog, directed=self.directed)
            size = (catalog.num_available(batch.t) - cat_excl.count).double()
            out = torch.where(uniform, -torch.log(size)[:, None].expand_as(out), out)
        return out

    def reset_state(self) -> None:
        """Forget all history and zero the counters."""
        self._load(None)
        self.reset_counters()

    def snapshot(self) -> State:
        return clone_state(self._state())

    def restore(self, state: State) -> None:
        self._load(clone_state(state))

    #: the stream a whole-stream sampler was built from (``None``: built from none)
    built_from: Optional[BuiltFrom] = None

    def describe(self) -> dict:
        return {"name": self.name, "built_from": None if self.built_from is None else self.built_from.to_dict(),
                "replace": self.replace, "directed": self.directed, "fallback": self.fallback,
                "short": self.short, "short_rule": _SHORT_RULE[self.short],
                "uses_whole_stream": self.uses_whole_stream, **self._options(),
                "fallback_catalog": None if self.catalog is None else self.catalog.describe(),
                "collisions": "resample (first K distinct accepted draws)",
                "randomness": "counter-based: (generator seed, replay position, draw index)",
                "num_events": int(self._num_events), "num_fallback_events": int(self._num_fallback),
                "num_short_events": int(self._num_short), "num_filled_slots": int(self._num_filled)}
