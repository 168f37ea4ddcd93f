"""Duplicate events: events equal in every field read (``src``, ``dst``, ``t``, ``msg``, ``y``) to an earlier
event of the file, counted in ``ReadInfo.num_duplicates`` and dropped by ``read_events(duplicates="drop")``."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData


def first_occurrences(data: TemporalData) -> Tensor:
    """bool ``[E]``: the event is the first in the file equal to it in every field read.

    ``t`` is sorted, so only events whose time equals a neighbour's can repeat. Those are grouped by
    ``(time group, src, dst)`` through one int64 key ``(g * N + src) * N + dst`` (``N = num_nodes``) when it
    fits, else by rows; only groups that repeat are compared on every field (``t``'s bits, ``msg``, ``y``) by a
    stable lexicographic sort, so wide features cost nothing when there are few repeats."""
    t = data.t.numpy()
    same = t[1:] == t[:-1]
    keep = torch.ones(t.size, dtype=torch.bool)
    candidates = np.flatnonzero(np.append(same, False) | np.insert(same, 0, False))
    if not candidates.size:
        return keep
    times = t[candidates]
    group = np.insert(np.cumsum(times[1:] != times[:-1]), 0, 0)
    del times
    src, dst = data.src.numpy(), data.dst.numpy()
    nodes = int(max(src.max(), dst.max())) + 1
    if (int(group[-1]) + 1) * nodes * nodes < 2**63:
        key = group  # (g * N + src) * N + dst, in place: peak memory stays a few arrays of the candidates
        key *= nodes
        key += src[candidates]
        key *= nodes
        key += dst[candidates]
        ordered = np.sort(key)
        repeats = ordered[1:][ordered[1:] == ordered[:-1]]  # sorted
        del ordered
        if not repeats.size:
            return keep
        repeated = repeats[np.searchsorted(repeats, key).clip(max=repeats.size - 1)] == key
        candidates, columns = candidates[repeated], [key[repeated, None]]
    else:
        columns = [np.stack([group, src[candidates], dst[candidates]], 1)]
    for key in ("t", "msg", "y"):
        if key in data:
            value = data[key].reshape(data.num_events, -1)[torch.from_numpy(candidates)]
            bits = value.view(torch.int32) if value.dtype == torch.float32 else value.view(torch.int64)
            columns.append(bits.to(torch.int64).numpy())
    rows = np.concatenate(columns, axis=1)
    order = np.lexsort(rows.T[::-1])  # stable: equal rows stay in file order, the first one leads
    ordered = rows[order]
    leads = np.insert(np.flatnonzero((ordered[1:] != ordered[:-1]).any(axis=1)) + 1, 0, 0)
    keep[torch.from_numpy(candidates)] = False
    keep[torch.from_numpy(candidates[order[leads]])] = True
    return keep
