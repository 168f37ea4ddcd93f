"""Two vectorised idioms on sorted int64 key arrays, shared by models, samplers and diagnostics."""

from __future__ import annotations

import functools
from typing import Optional

import torch
from torch import Tensor

__all__ = ["PAD", "expand_ranges", "merge_slots", "is_member", "Occurrences"]

#: Padding of fixed-capacity sorted key arrays: the largest int64, above every pair key
#: ``u * n + v`` (``n ** 2 < 2 ** 63``), so padded arrays stay sorted.
PAD = torch.iinfo(torch.long).max


def expand_ranges(lo: Tensor, lengths: Tensor, total: Optional[int] = None) -> tuple[Tensor, Tensor]:
    """Flatten the ranges ``[lo[i], lo[i] + lengths[i])``.

    Args:
        lo: ``[R]``, int64, or int32 when every index fits (half the memory traffic).
        lengths: int64 ``[R]``.
        total: ``lengths.sum()`` when the caller knows it on the host (no device read).

    Returns:
        ``(owner, index)``: ``[sum(lengths)]`` each, of ``lo``'s dtype; ``owner`` is the range
        of each element (non-decreasing), ``index`` its position ``lo[owner] + offset``.

    Example:
        >>> expand_ranges(torch.tensor([10, 3]), torch.tensor([2, 3]))
        (tensor([0, 0, 1, 1, 1]), tensor([10, 11,  3,  4,  5]))
    """
    total = int(lengths.sum()) if total is None else total
    # Each output is its predecessor + 1, except at the start of range i, where ``index`` jumps
    # from the end of range i - 1 to lo[i] and ``owner`` steps by one (the "end" before the first
    # range is 1, so the sum starts at lo[0]). Adding the jumps at the starts (an empty range adds
    # its own at the same place; they telescope) and taking one cumulative sum gives both without
    # repeat_interleave or a gather: about 1.8x faster on CPU.
    starts = torch.cumsum(lengths, 0) - lengths
    ends = lo + lengths.to(lo.dtype)
    jump = lo - torch.cat([lo.new_ones(1), ends[:-1]])
    step = torch.ones(total + 1, dtype=lo.dtype, device=lo.device).index_add_(0, starts, jump)
    begins = torch.zeros(total + 1, dtype=lo.dtype, device=lo.device)
    begins.index_add_(0, starts[1:], torch.ones_like(jump[1:]))
    return torch.cumsum(begins[:total], 0, dtype=lo.dtype), torch.cumsum(step[:total], 0, dtype=lo.dtype)


def merge_slots(num_old: int, insert_at: Tensor) -> tuple[Tensor, Tensor]:
    """Destination slots that merge ``num_old`` sorted keys with new sorted keys (none equal to an old one).

    ``insert_at[j]`` is the insertion point of new key ``j`` among the old keys (``searchsorted``),
    non-decreasing. New key ``j`` lands at ``insert_at[j] + j``; old key ``i`` moves up by the
    number of new keys inserted at or before it.

    Returns:
        ``(old_slot, new_slot)``: int64 ``[num_old]`` and ``[M]``, a permutation of
        ``0..num_old + M - 1``.

    Example:
        >>> merge_slots(3, torch.tensor([0, 2]))  # old [10, 20, 30] + new [5, 25]
        (tensor([1, 2, 4]), tensor([0, 3]))
    """
    new_slot = insert_at + torch.arange(insert_at.numel(), device=insert_at.device)
    bump = torch.zeros(num_old + 1, dtype=torch.long, device=insert_at.device)
    bump.index_add_(0, insert_at, torch.ones_like(insert_at))
    old_slot = torch.arange(num_old, device=insert_at.device) + torch.cumsum(bump, 0)[:-1]
    return old_slot, new_slot


def is_member(sorted_keys: Tensor, keys: Tensor) -> Tensor:
    """Whether each of ``keys`` lies in the sorted int64 array ``sorted_keys``: bool, the shape of ``keys``."""
    if sorted_keys.numel() == 0:
        return torch.zeros(keys.shape, dtype=torch.bool, device=keys.device)
    pos = torch.searchsorted(sorted_keys, keys).clamp(max=sorted_keys.numel() - 1)
    return sorted_keys[pos] == keys


class Occurrences:
    """Timed occurrences of int64 keys (one batch's pairs or nodes), asked "before ``t``?".

    The occurrences are sorted stably by key after sorting them by time, so each key's run
    holds its times in ascending order, and ``composite = run_start * (M + 1) + rank(time)``
    (``rank``: the number of occurrences strictly earlier) is sorted: a key's count before
    ``t`` is one ``searchsorted``. A :data:`PAD` sentinel ends the sorted keys, so a query's
    insertion point is always a valid index. Fixed shapes, no host read; ``M`` may be 0.

    Args:
        keys, times: ``[M]``; ``times`` need not be sorted unless ``times_sorted``. A key never
            queried (e.g. :data:`PAD`) leaves an occurrence out.

    Attributes:
        keys: int64 ``[M + 1]``, sorted, then the sentinel; ``times`` ``[M + 1]``, each
            occurrence's time (the sentinel's is arbitrary).
    """

    def __init__(self, keys: Tensor, times: Tensor, *, times_sorted: bool = False) -> None:
        if not times_sorted:
            times, by_time = torch.sort(times, stable=True)
            keys = keys.take(by_time)
        self.all_times = times  # non-decreasing: rank(x) = searchsorted(all_times, x)
        sorted_keys, order = torch.sort(keys, stable=True)
        self.order = order  # int64 [M]: the input index (after the time sort) of each sorted occurrence
        self.keys = torch.cat([sorted_keys, sorted_keys.new_full((1,), PAD)])
        self.times = torch.cat([times.take(order), times.new_zeros(1)])

    @functools.cached_property
    def run_start(self) -> Tensor:
        """int64 ``[M]``: the first sorted index of each sorted occurrence's key."""
        return torch.searchsorted(self.keys, self.keys[:-1])

    @functools.cached_property
    def first(self) -> Tensor:
        """bool ``[M]``: the sorted occurrence is the earliest of its key."""
        return self.run_start == torch.arange(self.run_start.numel(), device=self.keys.device)

    @functools.cached_property
    def rank(self) -> Tensor:
        """int64 ``[M]``: per sorted occurrence, the number of occurrences strictly earlier in time.

        In the time-sorted ``all_times`` that is the position of the first time equal to it: the
        running maximum of the positions that start a run of equal times, O(M) (no search).
        """
        times = self.all_times
        position = torch.arange(times.numel(), device=times.device)
        starts = torch.ones(times.shape, dtype=torch.bool, device=times.device)
        starts[1:] = times[1:] != times[:-1]
        return torch.cummax(torch.where(starts, position, 0), 0).values.take(self.order)

    @functools.cached_property
    def _composite(self) -> Tensor:
        return self.run_start * self.keys.numel() + self.rank

    def first_before(self, keys: Tensor, t: Tensor) -> Tensor:
        """bool, shape of ``keys``: the key occurs strictly before ``t``."""
        start = torch.searchsorted(self.keys, keys.contiguous())
        return (self.keys.take(start) == keys) & (self.times.take(start) < t)

    def count_before(self, keys: Tensor, t: Tensor) -> Tensor:
        """int64, shape of ``keys``: the number of occurrences of each key strictly before ``t``."""
        start = torch.searchsorted(self.keys, keys.contiguous())
        times = self.all_times
        if t.dtype != times.dtype:  # e.g. a float window bound against integer times
            times, t = times.double(), t.double()
        count = torch.searchsorted(self._composite, start * self.keys.numel() + torch.searchsorted(times, t.contiguous()))
        count = count - start
        return torch.where(self.keys.take(start) == keys, count, torch.zeros_like(count))
