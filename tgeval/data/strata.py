"""Repeated pair / new pair / new node labels of events against a reference history (SPEC §3)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["REPEATED", "NEW_PAIR", "NEW_NODE", "MAX_PAIR_KEY_NODES", "pair_keys", "event_strata"]

#: Largest ``num_nodes`` whose pair keys ``u * num_nodes + v`` fit in int64 (``num_nodes ** 2 < 2 ** 63``).
MAX_PAIR_KEY_NODES = 3_037_000_499

REPEATED, NEW_PAIR, NEW_NODE = 0, 1, 2


def pair_keys(src: Tensor, dst: Tensor, num_nodes: int, *, directed: bool = True) -> Tensor:
    """int64 pair keys ``u * num_nodes + v``; undirected pairs use ``(min, max)``."""
    if not directed:
        src, dst = torch.minimum(src, dst), torch.maximum(src, dst)
    return src * num_nodes + dst


def event_strata(history_src: Tensor, history_dst: Tensor, src: Tensor, dst: Tensor, num_nodes: int,
                 *, directed: bool = True) -> Tensor:
    """Stratum of each event: int64 ``[E]`` with values ``REPEATED`` (0), ``NEW_PAIR`` (1), ``NEW_NODE`` (2).

    ``NEW_NODE``: ``src`` or ``dst`` is not among the history's nodes; otherwise
    ``REPEATED`` if the pair occurs in the history, else ``NEW_PAIR``. The three classes are
    disjoint and cover every event.
    """
    seen_node = torch.zeros(num_nodes, dtype=torch.bool, device=src.device)
    seen_node[history_src] = True
    seen_node[history_dst] = True
    history = torch.unique(pair_keys(history_src, history_dst, num_nodes, directed=directed))
    repeated = torch.isin(pair_keys(src, dst, num_nodes, directed=directed), history)
    out = torch.where(repeated, REPEATED, NEW_PAIR)
    return torch.where(seen_node[src] & seen_node[dst], out, NEW_NODE)
