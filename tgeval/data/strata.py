"""Repeated pair / new pair / new node labels of events against a reference history (docs/protocol.md §3)."""

from __future__ import annotations

import torch
from torch import Tensor

from tgeval.data.groups import CHUNK_EVENTS

__all__ = ["REPEATED", "NEW_PAIR", "NEW_NODE", "MAX_PAIR_KEY_NODES", "pair_keys", "event_strata"]

#: Largest ``num_nodes`` whose pair keys ``u * num_nodes + v`` fit in int64 (``num_nodes ** 2 < 2 ** 63``).
MAX_PAIR_KEY_NODES = 3_037_000_499

#: Stratum labels of an event against its history: ``REPEATED`` (the pair was seen), ``NEW_PAIR`` (both nodes
#: were seen, the pair was not) and ``NEW_NODE`` (an endpoint was never seen).
REPEATED, NEW_PAIR, NEW_NODE = 0, 1, 2


def pair_keys(src: Tensor, dst: Tensor, num_nodes: int, *, directed: bool = True) -> Tensor:
    """int64 pair keys ``u * num_nodes + v``; undirected pairs use ``(min, max)``."""
    if not directed:
        src, dst = torch.minimum(src, dst), torch.maximum(src, dst)
    return src * num_nodes + dst


def _unique_keys(src: Tensor, dst: Tensor, num_nodes: int, directed: bool, chunk: int) -> Tensor:
    """Sorted distinct pair keys of the events (:func:`pair_keys`): int64 ``[U]``, taken ``chunk`` events at
    a time; the chunks' distinct keys merge into the result once they outnumber it (few merges, small
    temporaries)."""
    merged, pending = src.new_empty(0), []
    for a in range(0, src.numel(), chunk):
        pending.append(torch.unique(pair_keys(src[a:a + chunk], dst[a:a + chunk], num_nodes, directed=directed)))
        if sum(p.numel() for p in pending) >= merged.numel():
            merged, pending = torch.unique(torch.cat([merged, *pending])), []
    return torch.unique(torch.cat([merged, *pending])) if pending else merged


def event_strata(history_src: Tensor, history_dst: Tensor, src: Tensor, dst: Tensor, num_nodes: int,
                 *, directed: bool = True, chunk: int = CHUNK_EVENTS) -> Tensor:
    """Stratum of each event: int64 ``[E]`` with values ``REPEATED`` (0), ``NEW_PAIR`` (1), ``NEW_NODE`` (2).

    ``NEW_NODE``: ``src`` or ``dst`` is not among the history's nodes; otherwise
    ``REPEATED`` if the pair occurs in the history, else ``NEW_PAIR``. The three classes are
    disjoint and cover every event. Computed ``chunk`` events at a time: the temporaries are
    ``O(chunk)`` beside the history's distinct pairs and a ``[num_nodes]`` mask.
    """
    seen_node = torch.zeros(num_nodes, dtype=torch.bool, device=src.device)
    for a in range(0, history_src.numel(), chunk):
        seen_node[history_src[a:a + chunk]] = True
        seen_node[history_dst[a:a + chunk]] = True
    history = _unique_keys(history_src, history_dst, num_nodes, directed, chunk)
    out = torch.empty(src.numel(), dtype=torch.long, device=src.device)
    for a in range(0, src.numel(), chunk):
        s, d = src[a:a + chunk], dst[a:a + chunk]
        keys = pair_keys(s, d, num_nodes, directed=directed)
        at = torch.searchsorted(history, keys).clamp_(max=max(history.numel() - 1, 0))
        repeated = history[at] == keys if history.numel() else torch.zeros_like(keys, dtype=torch.bool)
        part = torch.where(repeated, REPEATED, NEW_PAIR)
        out[a:a + chunk] = part.masked_fill_(~(seen_node[s] & seen_node[d]), NEW_NODE)
    return out
