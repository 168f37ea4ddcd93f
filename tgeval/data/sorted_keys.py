"""Two vectorised idioms on sorted int64 key arrays, shared by models, samplers and diagnostics."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

__all__ = ["PAD", "expand_ranges", "merge_slots"]

#: Padding of fixed-capacity sorted key arrays: the largest int64, above every pair key
#: ``u * n + v`` (``n ** 2 < 2 ** 63``), so padded arrays stay sorted.
PAD = torch.iinfo(torch.long).max


def expand_ranges(lo: Tensor, lengths: Tensor, total: Optional[int] = None) -> tuple[Tensor, Tensor]:
    """Flatten the ranges ``[lo[i], lo[i] + lengths[i])``.

    Args:
        lo, lengths: int64 ``[R]``.
        total: ``lengths.sum()`` when the caller knows it on the host (no device read).

    Returns:
        ``(owner, index)``: int64 ``[sum(lengths)]`` each; ``owner`` is the range of each
        element (non-decreasing), ``index`` its position ``lo[owner] + offset``.

    Example:
        >>> expand_ranges(torch.tensor([10, 3]), torch.tensor([2, 3]))
        (tensor([0, 0, 1, 1, 1]), tensor([10, 11,  3,  4,  5]))
    """
    total = int(lengths.sum()) if total is None else total
    owner = torch.repeat_interleave(torch.arange(lengths.numel(), device=lengths.device), lengths, output_size=total)
    offset = torch.arange(total, device=lengths.device) - (torch.cumsum(lengths, 0) - lengths)[owner]
    return owner, lo[owner] + offset


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
