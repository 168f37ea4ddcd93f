"""Timestamp groups: maximal runs of events that share a timestamp (docs/protocol.md §2)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["group_starts", "group_ids", "canonical_order", "is_canonical"]

#: events per chunk of :func:`canonical_order` and :func:`is_canonical` (their temporaries are ``O(chunk)``)
CHUNK_EVENTS = 1 << 16


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


def _in_order(src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
    """bool ``[n - 1]``: whether event ``i`` is ``<=`` event ``i + 1`` in ``(t, src, dst)``."""
    t0, t1, s0, s1, d0, d1 = t[:-1], t[1:], src[:-1], src[1:], dst[:-1], dst[1:]
    return (t0 < t1) | ((t0 == t1) & ((s0 < s1) | ((s0 == s1) & (d0 <= d1))))


def is_canonical(src: Tensor, dst: Tensor, t: Tensor, *, chunk: int = CHUNK_EVENTS) -> bool:
    """Whether the events already lie in canonical order, non-decreasing in ``(t, src, dst)``
    (then :func:`canonical_order` is the identity). Checked ``chunk`` events at a time."""
    num_events = t.numel()
    return all(bool(_in_order(src[a:a + chunk + 1], dst[a:a + chunk + 1], t[a:a + chunk + 1]).all())
               for a in range(0, max(num_events - 1, 0), chunk))


def _lexsort(src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
    """The stable ``(t, src, dst)`` sort permutation of the events: int64 ``[E]`` (three stable sorts)."""
    order = torch.sort(dst, stable=True).indices
    order = order[torch.sort(src[order], stable=True).indices]
    return order[torch.sort(t[order], stable=True).indices]


def canonical_order(src: Tensor, dst: Tensor, t: Tensor, *, chunk: int = CHUNK_EVENTS) -> Tensor:
    """Permutation that sorts events by ``(t, src, dst)`` (stable): int64 ``[E]``.

    File order inside a timestamp group carries no information (docs/protocol.md §2); replaying events
    in this order makes every downstream computation independent of it. Events equal in
    ``(t, src, dst)`` keep their relative order: they are interchangeable for every model
    that ignores event features; a model that reads ``msg`` must aggregate such duplicates
    order-invariantly (docs/protocol.md §2).

    A time-sorted ``t`` is sorted in chunks of about ``chunk`` events cut between timestamp
    groups (a chunk already in order is an ``arange``), so the temporaries beside the
    ``[E]`` result are ``O(chunk + largest group)``; an unsorted ``t`` is sorted whole.
    """
    num_events = t.numel()
    if num_events < 2 or not bool((t[1:] >= t[:-1]).all()):
        return _lexsort(src, dst, t)
    order = torch.empty(num_events, dtype=torch.long, device=t.device)
    a = 0
    while a < num_events:
        b = min(a + chunk, num_events)
        b = int(torch.searchsorted(t, t[b - 1:b], right=True))  # the end of event b - 1's group
        if bool(_in_order(src[a:b], dst[a:b], t[a:b]).all()):
            torch.arange(a, b, out=order[a:b])
        else:
            torch.add(_lexsort(src[a:b], dst[a:b], t[a:b]), a, out=order[a:b])
        a = b
    return order
