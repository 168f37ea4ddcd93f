"""Timestamp groups: maximal runs of events that share a timestamp (SPEC §2)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["group_starts", "group_ids", "canonical_order"]


def group_starts(t: Tensor) -> Tensor:
    """Start index of every timestamp group of a time-sorted ``t`` (``[E]``).

    Returns:
        Tensor: int64 ``[G + 1]``, ``starts[g]`` is the first event of group ``g`` and
        ``starts[G] = E``; group ``g`` is ``[starts[g], starts[g + 1])``.
    """
    num_events = t.numel()
    change = torch.nonzero(t[1:] != t[:-1]).flatten() + 1
    zero = torch.zeros(1, dtype=torch.long, device=t.device)
    end = torch.full((1,), num_events, dtype=torch.long, device=t.device)
    return torch.cat([zero, change, end]) if num_events else zero


def group_ids(t: Tensor) -> Tensor:
    """Index of the timestamp group of each event of a time-sorted ``t``: int64 ``[E]``."""
    if t.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=t.device)
    change = torch.zeros(t.numel(), dtype=torch.long, device=t.device)
    change[1:] = (t[1:] != t[:-1]).long()
    return torch.cumsum(change, 0)


def canonical_order(src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
    """Permutation that sorts events by ``(t, src, dst)`` (stable): int64 ``[E]``.

    File order inside a timestamp group carries no information (SPEC §2); replaying events
    in this order makes every downstream computation independent of it. Events equal in
    ``(t, src, dst)`` keep their relative order: they are interchangeable for every model
    that ignores event features; a model that reads ``msg`` must aggregate such duplicates
    order-invariantly (SPEC §2).
    """
    order = torch.sort(dst, stable=True).indices
    order = order[torch.sort(src[order], stable=True).indices]
    return order[torch.sort(t[order], stable=True).indices]
