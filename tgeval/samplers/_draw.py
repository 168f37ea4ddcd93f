r"""Shared kernel of the history-based samplers: K distinct draws from per-row (weighted) pools.

A family of pools is stored as **one sorted key array** ``keys`` of distinct int64
``base * n + item``: the pool of a row with base :math:`b` is the slice of keys in
:math:`[b n, (b + 1) n)`. Source-conditional pools (the destinations a source met before)
use the source as base; a pool shared by all rows (popularity, degree) uses base ``0``. An
optional weight per key (``cum``, the prefix sums of positive weights, ``[P + 1]``) makes the
draws proportional to the weights; without it they are uniform over the slice.

For row :math:`i` with pool :math:`P_i`, excluded items :math:`X_i` and weights :math:`w`,
one draw takes :math:`v \in P_i \setminus X_i` with probability

.. math::
    q_i(v) = w_v \Big/ \sum_{v' \in P_i \setminus X_i} w_{v'} .

**Collision rule (resample).** Draws from the whole slice that hit an excluded item (or,
without replacement, repeat an earlier draw of the row) are rejected and redrawn; keeping
the first ``K`` accepted draws of an i.i.d. sequence from :math:`w` restricted to the slice
is exactly successive sampling without replacement from :math:`q_i` (i.i.d. draws from
:math:`q_i` with replacement). Each row reads one continuous sequence, in longer and longer
prefixes, so stopping early never conditions the result. A row that has not finished after
``64 x |slice|`` draws (only with extremely skewed weights) is finished by the exact
successive-sampling law instead: every valid item gets the key :math:`E_v / w_v` with
:math:`E_v \sim \mathrm{Exp}(1)` and the ``K`` smallest keys are taken
(Efraimidis–Spirakis); with replacement, ``K`` inverse-CDF draws over the valid items. The
law is therefore exact up to the probability of such a row (a total-variation bound).

Randomness is counter-based (:func:`~tgeval.core.rng.counter_uniform`) on the
event's replay position, as in :class:`~tgeval.samplers.uniform.UniformSampler`: a row's
draws depend only on the seed, its position, its pool and its exclusions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions, build_exclusions
from tgeval.data.sorted_keys import expand_ranges, merge_slots
from tgeval.data.strata import pair_keys
from tgeval.errors import SamplerError
from tgeval.core.rng import counter_uniform

__all__ = ["KeyPool", "PoolDraw", "draw_from_pools", "rejection_rounds", "batch_exclusions", "add_pair_exclusions",
           "insert_keys", "history_keys", "check_ids", "batch_position", "first_distinct_mask",
           "every_valid_item", "FALLBACKS", "SHORT_RULES"]

FALLBACKS = ("uniform", "error")
#: what a row whose pool holds some valid items but fewer than ``K`` gets
#: (see :class:`~tgeval.samplers._pooled.PooledSampler`)
SHORT_RULES = ("fill", "replace", "error")

#: Rejection stops once a row has read this many draws per item of its pool slice; the
#: rows left then (only with extremely skewed weights) are finished exactly.
_MAX_DRAWS_PER_ITEM = 64
_EXACT_ROUND = 1 << 21  # counter rounds of the exact finish (distinct from UniformSampler's)
_EXACT_BUDGET = 1 << 22  # most (row, pool item) keys held at once by the exact finish


def first_distinct_mask(draws: Tensor) -> Tensor:
    """True at the first occurrence of each value in each row of ``draws`` (int64 ``[B, M]``)."""
    sorted_vals, order = torch.sort(draws, dim=1, stable=True)
    first_sorted = torch.ones_like(sorted_vals, dtype=torch.bool)
    first_sorted[:, 1:] = sorted_vals[:, 1:] != sorted_vals[:, :-1]
    return torch.zeros_like(first_sorted).scatter_(1, order, first_sorted)


def batch_position(batch: TemporalData) -> Tensor:
    """The batch's replay positions, ``batch.position``: int64 ``[B]``.

    Raises:
        SamplerError: if the batch has none (draws would repeat for every batch).
    """
    position = getattr(batch, "position", None)
    if position is None:
        raise SamplerError("the batch has no `position`: samplers key each event's draws on its position in the "
                           "stream, so without it every batch would get the same negatives. Iterate with "
                           "tgeval.TimestampBatchLoader (it attaches positions), or set "
                           "batch.position = torch.arange(first, first + batch.num_events).")
    if position.shape != batch.src.shape:
        raise SamplerError(f"batch.position must hold one index per event {tuple(batch.src.shape)}, "
                           f"got {tuple(position.shape)}.")
    return position


def check_ids(src: Tensor, dst: Tensor, num_nodes: int) -> None:
    """Raise :class:`SamplerError` if an id lies outside ``[0, num_nodes)`` (pair keys would alias)."""
    if src.numel() and (int(torch.maximum(src.max(), dst.max())) >= num_nodes
                        or int(torch.minimum(src.min(), dst.min())) < 0):
        raise SamplerError(f"node ids must lie in [0, num_nodes={num_nodes}) for this sampler, got "
                           f"[{int(torch.minimum(src.min(), dst.min()))}, {int(torch.maximum(src.max(), dst.max()))}]. "
                           f"Build it with the data's num_nodes.")


def history_keys(src: Tensor, dst: Tensor, num_nodes: int, *, directed: bool) -> Tensor:
    """Sorted distinct keys ``u * n + v`` of the pairs of some events (both directions if undirected): int64."""
    check_ids(src, dst, num_nodes)
    if not directed:
        src, dst = torch.cat([src, dst]), torch.cat([dst, src])
    return torch.unique(pair_keys(src, dst, num_nodes))


def insert_keys(keys: Tensor, new: Tensor) -> Tensor:
    """Sorted union of sorted distinct ``keys`` ``[P]`` and any ``new`` keys: a merge, O(P + M log M)."""
    new = torch.unique(new)
    if keys.numel() == 0:
        return new
    pos = torch.searchsorted(keys, new)
    found = keys[pos.clamp(max=keys.numel() - 1)] == new
    new, pos = new[~found], pos[~found]
    old_slot, new_slot = merge_slots(keys.numel(), pos)
    out = torch.empty(keys.numel() + new.numel(), dtype=keys.dtype, device=keys.device)
    out[old_slot], out[new_slot] = keys, new
    return out


@dataclass(frozen=True)
class KeyPool:
    """Pools of many rows as one sorted key array (see the module docstring).

    Attributes:
        keys: int64 ``[P]``, sorted distinct ``base * n + item``.
        n: key stride (number of node ids).
        cum: float64 ``[P + 1]`` prefix sums of the (positive) weights of ``keys``, starting at
            ``0``; ``None`` for uniform pools.
    """

    keys: Tensor
    n: int
    cum: Optional[Tensor] = None

    def bounds(self, base: Tensor) -> tuple[Tensor, Tensor]:
        """Slice ``[lo, hi)`` of ``keys`` holding the pool of each base: int64 ``[B]`` each."""
        return torch.searchsorted(self.keys, base * self.n), torch.searchsorted(self.keys, base * self.n + self.n)

    def index(self, base: Tensor, items: Tensor) -> tuple[Tensor, Tensor]:
        """Position in ``keys`` of ``(base, item)`` and whether it is there (broadcast shapes)."""
        key = base * self.n + items
        if self.keys.numel() == 0:
            return torch.zeros_like(key), torch.zeros_like(key, dtype=torch.bool)
        pos = torch.searchsorted(self.keys, key).clamp(max=self.keys.numel() - 1)
        return pos, self.keys[pos] == key

    def weight(self, pos: Tensor) -> Tensor:
        """Weight of the keys at ``pos``: float64, shape of ``pos`` (``1`` for uniform pools)."""
        if self.cum is None:
            return torch.ones(pos.shape, dtype=torch.float64, device=pos.device)
        if self.keys.numel() == 0:
            return torch.zeros(pos.shape, dtype=torch.float64, device=pos.device)
        return self.cum[pos + 1] - self.cum[pos]

    def mass(self, lo: Tensor, hi: Tensor) -> Tensor:
        """Total weight of the slices ``[lo, hi)``: float64 ``[B]``."""
        if self.cum is None:
            return (hi - lo).double()
        return self.cum[hi] - self.cum[lo]


@dataclass(frozen=True)
class PoolDraw:
    """Result of :func:`draw_from_pools`.

    Attributes:
        negatives: int64 ``[B, K]``; rows with ``size < need`` are ``-1`` (the caller falls back or raises).
        size: int64 ``[B]``, valid items of each row's pool, :math:`|P_i \\setminus X_i|`.
        mass: float64 ``[B]``, their total weight (the normaliser of :math:`q_i`).
    """

    negatives: Tensor
    size: Tensor
    mass: Tensor


def batch_exclusions(batch: TemporalData, everything: Catalog, *, directed: bool, scope: str) -> Exclusions:
    """Excluded items of each event, as :func:`~tgeval.data.exclusions.build_exclusions` over all nodes.

    ``scope="group"``: the source and the simultaneous positives (same source, same ``t``).
    ``scope="batch"``: the source and every destination of the source anywhere in the batch
    (DGB's "not among the current batch's positives"); groups are then per source.
    """
    t = batch.t if scope == "group" else torch.zeros_like(batch.t)
    return build_exclusions(batch.src, batch.dst, t, everything, directed=directed)


def _group_rows(excl: Exclusions) -> tuple[Tensor, int]:
    """One row of each exclusion group (``-1`` for groups without a row, e.g. undirected owners that are
    never a source of the batch): int64 ``[G]``, and ``G``."""
    device = excl.group.device
    num_groups = 0
    if excl.group.numel():
        num_groups = int(excl.group.max()) + 1
    if excl.keys.numel():
        num_groups = max(num_groups, int(excl.keys[-1]) // excl.num_nodes + 1)
    rep = torch.full((num_groups,), -1, dtype=torch.long, device=device)
    rep.scatter_(0, excl.group, torch.arange(excl.group.numel(), device=device))
    return rep, num_groups


def add_pair_exclusions(excl: Exclusions, pairs: Tensor, src: Tensor, n: int) -> Exclusions:
    """Also exclude every ``v`` with ``src * n + v`` in the sorted key array ``pairs`` ("existing edges").

    Groups of ``excl`` must share their source. Vectorised ragged expansion of each group's
    slice of ``pairs``.
    """
    rep, _ = _group_rows(excl)
    if rep.numel() == 0 or pairs.numel() == 0:
        return excl
    base = src[rep.clamp(min=0)]
    lo, hi = torch.searchsorted(pairs, base * n), torch.searchsorted(pairs, base * n + n)
    lengths = torch.where(rep >= 0, hi - lo, torch.zeros_like(lo))
    if int(lengths.sum()) == 0:
        return excl
    group, index = expand_ranges(lo, lengths)
    items = pairs[index] - base[group] * n
    keys = torch.unique(torch.cat([excl.keys, group * n + items]))
    return Exclusions(excl.group, keys, excl.count, n)


def _excluded_in_pool(pool: KeyPool, base: Tensor, excl: Exclusions) -> tuple[Tensor, Tensor]:
    """Count and weight of each row's excluded items that lie in its pool: int64 / float64 ``[B]``."""
    rep, num_groups = _group_rows(excl)
    group, item = excl.items()
    row = rep[group]
    pos, inside = pool.index(base[row.clamp(min=0)], item)
    inside &= row >= 0
    count = torch.zeros(num_groups, dtype=torch.long, device=base.device).index_add_(0, group, inside.long())
    mass = torch.zeros(num_groups, dtype=torch.float64, device=base.device)
    mass.index_add_(0, group, torch.where(inside, pool.weight(pos), torch.zeros_like(pos, dtype=torch.float64)))
    return count[excl.group], mass[excl.group]


def _pick(pool: KeyPool, u: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
    """Key positions for uniforms ``u`` ``[b, M]`` inside slices ``[lo, hi)`` (uniform or by weight)."""
    if pool.cum is None:
        idx = lo[:, None] + (u * (hi - lo)[:, None]).long()
    else:
        start = pool.cum[lo]
        target = start[:, None] + u * (pool.cum[hi] - start)[:, None]
        idx = torch.searchsorted(pool.cum, target.contiguous(), right=True) - 1
        idx = torch.maximum(idx, lo[:, None])  # zero-width keys are never hit; guard the slice start
    return torch.minimum(idx, (hi - 1)[:, None])


def draw_from_pools(pool: KeyPool, base: Tensor, excl: Exclusions, k: int, *, replace: bool, seed: int,
                    position: Tensor) -> PoolDraw:
    """``K`` draws per row from :math:`P_i \\setminus X_i` (see the module docstring).

    Args:
        pool: the pools; row ``i`` uses the slice of base ``base[i]``.
        base: int64 ``[B]``; rows of one exclusion group must share their base.
        excl: excluded items per row (:class:`~tgeval.data.exclusions.Exclusions`).
        k: draws per row.
        replace: i.i.d. draws (duplicates allowed) instead of distinct ones.
        seed: generator seed; ``position``: int64 ``[B]`` replay positions keying the draws.

    Returns:
        PoolDraw: rows whose pool holds fewer than ``need`` (``1`` with replacement, ``K``
        without) valid items are left at ``-1``.
    """
    device = base.device
    b = base.numel()
    lo, hi = pool.bounds(base)
    excluded, excluded_mass = _excluded_in_pool(pool, base, excl)
    size = hi - lo - excluded
    mass = (pool.mass(lo, hi) - excluded_mass).clamp(min=0.0)
    out = torch.full((b, k), -1, dtype=torch.long, device=device)
    if k:
        rejection_rounds(
            out, size >= (1 if replace else k), hi - lo, excl, replace=replace, seed=seed, position=position,
            max_draws_per_item=_MAX_DRAWS_PER_ITEM,
            pick=lambda rows, u: pool.keys[_pick(pool, u, lo[rows], hi[rows])] - base[rows, None] * pool.n,
            finish=lambda rows: _finish_exactly(out, rows, pool, base, lo, hi, excl, k, replace, seed, position))
    return PoolDraw(out, size, mass)


def rejection_rounds(out: Tensor, todo: Tensor, slice_size: Tensor, excl: Exclusions, *, replace: bool, seed: int,
                     position: Tensor, max_draws_per_item: int, pick: Callable[[Tensor, Tensor], Tensor],
                     finish: Callable[[Tensor], None]) -> None:
    """Fill the rows ``todo`` (bool ``[B]``) of ``out`` (int64 ``[B, K]``) with the first ``K``
    accepted draws of each row's i.i.d. sequence (the collision rule of the module docstring).

    Each row reads one continuous sequence (counter round 0) in longer and longer prefixes,
    so its result is the first ``K`` accepted draws of a single sequence, whatever round it
    finishes in; only unfinished rows are computed. ``pick(rows, u)`` maps uniforms ``[R, D]``
    to items; a row that would read more than ``max_draws_per_item * slice_size`` draws is
    handed to ``finish(rows)`` (an exact method) instead.
    """
    k = out.size(1)
    draws = 2 * k + 8
    while True:
        rows = torch.nonzero(todo).flatten()
        exhausted = draws > max_draws_per_item * slice_size[rows]  # per row: depends on its own slice only
        if bool(exhausted.any()):
            finish(rows[exhausted])
            todo[rows[exhausted]] = False
            rows = rows[~exhausted]
        if rows.numel() == 0:
            return
        items = pick(rows, counter_uniform(seed, position[rows], 0, draws))
        ok = ~excl.contains(rows, items)
        if not replace:
            ok &= first_distinct_mask(items)
        rank = torch.cumsum(ok.long(), 1)
        done = rank[:, -1] >= k
        out[rows[done]] = items[done][(ok & (rank <= k))[done]].view(-1, k)
        todo[rows[done]] = False
        draws *= 4


def _slices(rows: Tensor, pool: KeyPool, base: Tensor, lo: Tensor, hi: Tensor,
            excl: Exclusions) -> Iterator[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """The whole pool slice of each of ``rows``, in chunks of at most :data:`_EXACT_BUDGET` keys:
    ``(chunk, items, invalid, weight)`` with ``[c, width]`` items, bool ``invalid`` (padding or
    excluded) and float64 ``weight`` (``0`` where invalid)."""
    width = max(1, int((hi - lo)[rows].max()))
    step = max(1, _EXACT_BUDGET // width)
    columns = torch.arange(width, device=base.device)
    for start in range(0, rows.numel(), step):
        chunk = rows[start : start + step]
        idx = lo[chunk, None] + columns[None, :]
        invalid = idx >= hi[chunk, None]
        idx = torch.minimum(idx, (hi[chunk] - 1).clamp(min=0)[:, None])
        items = pool.keys[idx] - base[chunk, None] * pool.n if pool.keys.numel() else torch.zeros_like(idx)
        invalid |= excl.contains(chunk, items)
        yield chunk, items, invalid, pool.weight(idx).masked_fill(invalid, 0.0)


def _successive_order(seed: int, position: Tensor, invalid: Tensor, weight: Tensor) -> Tensor:
    """Column order of exact successive sampling without replacement (Efraimidis–Spirakis keys
    :math:`E_v / w_v`, invalid columns last): int64, the shape of ``weight``."""
    u = counter_uniform(seed, position, _EXACT_ROUND, weight.size(1))
    keys = (-torch.log1p(-u) / weight).masked_fill(invalid, float("inf"))
    return torch.argsort(keys, dim=1, stable=True)


def _finish_exactly(out: Tensor, rows: Tensor, pool: KeyPool, base: Tensor, lo: Tensor, hi: Tensor,
                    excl: Exclusions, k: int, replace: bool, seed: int, position: Tensor) -> None:
    """Exact successive sampling over the whole slice of each remaining row, in chunks."""
    for chunk, items, invalid, weight in _slices(rows, pool, base, lo, hi, excl):
        if replace:
            cw = torch.cumsum(weight, 1)
            u = counter_uniform(seed, position[chunk], _EXACT_ROUND + 1, k)
            cols = torch.searchsorted(cw, (u * cw[:, -1:]).contiguous(), right=True).clamp(max=weight.size(1) - 1)
        else:
            cols = _successive_order(seed, position[chunk], invalid, weight)[:, :k]
        out[chunk] = items.gather(1, cols)


def every_valid_item(pool: KeyPool, base: Tensor, excl: Exclusions, rows: Tensor, k: int, *, seed: int,
                     position: Tensor) -> Tensor:
    """Every valid item of the pools of ``rows`` (int64 ``[R]``, rows holding fewer than ``k``
    valid items), in the random order of successive sampling by weight, then ``-1``: int64
    ``[R, k]`` (the first ``size`` columns of a row are its pool; the caller fills the rest)."""
    out = torch.full((rows.numel(), k), -1, dtype=torch.long, device=base.device)
    if rows.numel() == 0:
        return out
    lo, hi = pool.bounds(base)
    where = torch.full((base.numel(),), -1, dtype=torch.long, device=base.device)
    where[rows] = torch.arange(rows.numel(), device=base.device)
    for chunk, items, invalid, weight in _slices(rows, pool, base, lo, hi, excl):
        cols = _successive_order(seed, position[chunk], invalid, weight)[:, :k]
        taken = torch.where(invalid.gather(1, cols), -1, items.gather(1, cols))
        out[where[chunk], : taken.size(1)] = taken
    return out


def short_pool_error(batch: TemporalData, row: int, size: int, need: int, k: int, replace: bool,
                     what: str) -> SamplerError:
    """The typed error for a pool that holds fewer than ``need`` items (but not none), under ``short="error"``."""
    return SamplerError(
        f"event {row} of the batch (src={int(batch.src[row])}, t={batch.t[row].tolist()}) has {size} candidate "
        f"negatives in its {what} pool after exclusions, fewer than the {need} required ({k} negatives, "
        f"replace={replace}, short='error'). Use short='fill' (top the row up with uniform catalog draws, as DGB "
        f"and DyGLib do; counted) or short='replace', lower K, or pass replace=True."
    )
