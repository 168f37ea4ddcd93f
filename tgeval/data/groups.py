"""Timestamp groups: maximal runs of events that share a timestamp (SPEC §2)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["group_starts", "group_ids", "same_source_group_pairs", "canonical_order"]


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


def same_source_group_pairs(src: Tensor, dst: Tensor, t: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    r"""Every (event, destination) pair that shares the event's source and timestamp.

    For event :math:`i = (u_i, v_i, t_i)` this lists the distinct destinations of
    :math:`\{j : u_j = u_i, t_j = t_i\}`, which always includes :math:`v_i`. These are the
    *simultaneous positives* of SPEC §5/§7: never valid negatives for event ``i``.

    Args:
        src, dst, t: ``[B]`` events of one batch, sorted by ``t``.
        num_nodes: size of the id space used for int64 keys (raised to ``max id + 1`` if smaller).

    Returns:
        (event, destination): int64 ``[P]`` each, sorted by ``event * num_nodes + destination``
        and without duplicates. ``P`` is the sum of squared same-source-timestamp group sizes
        at most.
    """
    num_events = src.numel()
    device = src.device
    if num_events == 0:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return empty, empty
    stride = max(num_nodes, int(torch.maximum(src.max(), dst.max())) + 1)  # keys never collide
    key = group_ids(t) * stride + src
    sorted_key = torch.sort(key).values
    if not bool((sorted_key[1:] == sorted_key[:-1]).any()):  # common case: no source repeats inside a group
        return torch.arange(num_events, device=device), dst.clone()
    _, inverse, counts = torch.unique(key, return_inverse=True, return_counts=True)
    order = torch.sort(inverse, stable=True).indices  # events grouped by (t, src)
    first = torch.cumsum(counts, 0) - counts  # first sorted position of each group
    # Event i pairs with every member of its group: repeat i once per member.
    sizes = counts[inverse]  # [B]
    event = torch.repeat_interleave(torch.arange(num_events, device=device), sizes)
    offset = torch.arange(event.numel(), device=device) - torch.repeat_interleave(
        torch.cumsum(sizes, 0) - sizes, sizes
    )
    member = order[first[inverse[event]] + offset]
    pair_key = torch.unique(event * stride + dst[member])
    return pair_key // stride, pair_key % stride


def canonical_order(src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
    """Permutation that sorts events by ``(t, src, dst)`` (stable): int64 ``[E]``.

    File order inside a timestamp group carries no information (SPEC §2); replaying events
    in this order makes every downstream computation independent of it. Events equal in
    ``(t, src, dst)`` keep their relative order.
    """
    order = torch.sort(dst, stable=True).indices
    order = order[torch.sort(src[order], stable=True).indices]
    return order[torch.sort(t[order], stable=True).indices]
