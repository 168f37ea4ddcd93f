"""Recent-neighbour buffer: PyG's ``LastNeighborLoader`` plus the time and message of each event.

PyG's loader keeps, for every node, the ids of its ``size`` most recent interactions (both
directions) and numbers events in insertion order; scripts then read ``data.t[e_id]`` from
the whole dataset. Here the buffer keeps its own copy of each inserted event's time and
message, so a model holds only history it has been given (nothing to read from the
future), and all of it is part of :meth:`NeighborBuffer.snapshot`.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn
from torch_geometric.nn.models.tgn import LastNeighborLoader

from tgeval.state import State, clone_state

__all__ = ["NeighborBuffer"]


class NeighborBuffer(nn.Module):
    """The ``size`` most recent interactions of every node, with event times and messages.

    Args:
        num_nodes: exclusive upper bound of node ids.
        size: interactions kept per node (the most recent by insertion order).
        msg_dim: width of event messages.
    """

    event_t: Tensor    # int64 [capacity]   time of inserted event e (valid for e < num_inserted)
    event_msg: Tensor  # float [capacity, R] message of inserted event e

    def __init__(self, num_nodes: int, size: int, msg_dim: int) -> None:
        super().__init__()
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}.")
        self.size = int(size)
        self.msg_dim = int(msg_dim)
        self.loader = LastNeighborLoader(num_nodes, size)
        # The loader's slot tables are registered buffers (the loader works on the same tensors):
        # the whole state is then in registered tensors, which the scoring guard checks cheaply.
        self.register_buffer("slot_neighbors", self.loader.neighbors.zero_(), persistent=False)
        self.register_buffer("slot_e_id", self.loader.e_id, persistent=False)
        self.register_buffer("event_t", torch.empty(0, dtype=torch.long), persistent=False)
        self.register_buffer("event_msg", torch.empty(0, msg_dim), persistent=False)
        self.register_buffer("inserted", torch.zeros((), dtype=torch.long), persistent=False)

    slot_neighbors: Tensor  # int64 [num_nodes, size]  the loader's `neighbors`
    slot_e_id: Tensor       # int64 [num_nodes, size]  the loader's `e_id` (-1: empty slot)
    inserted: Tensor        # int64 []  events inserted so far (a tensor, so the scoring guard sees it)

    @property
    def num_inserted(self) -> int:
        return int(self.inserted)

    def _bind_loader(self) -> None:
        self.loader.neighbors, self.loader.e_id = self.slot_neighbors, self.slot_e_id

    def _apply(self, fn: Callable[[Tensor], Tensor], *args, **kwargs) -> "NeighborBuffer":  # type: ignore[override]
        super()._apply(fn, *args, **kwargs)
        self.loader._assoc = fn(self.loader._assoc)
        self._bind_loader()
        return self

    def reset_state(self) -> None:
        self.loader.reset_state()
        self.inserted.zero_()

    def insert(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor) -> None:
        """Add events ``(src, dst, t, msg)`` (``[B]``, ``[B, R]``) as neighbours in both directions."""
        start = self.num_inserted
        end = start + src.numel()
        if end > self.event_t.numel():  # grow geometrically: amortised O(1) per event
            capacity = max(end, 2 * self.event_t.numel(), 1024)
            grown_t = self.event_t.new_empty(capacity)
            grown_msg = self.event_msg.new_empty((capacity, self.msg_dim))
            grown_t[:start] = self.event_t[:start]
            grown_msg[:start] = self.event_msg[:start]
            self.event_t, self.event_msg = grown_t, grown_msg
        self.event_t[start:end] = t
        self.event_msg[start:end] = msg
        self.inserted.fill_(end)
        self._insert_neighbors(src, dst, start)

    def _insert_neighbors(self, src: Tensor, dst: Tensor, first: int) -> None:
        """``LastNeighborLoader.insert`` that keeps the ``size`` most recent entries of every node.

        PyG's version places a node's new entries at ``position % size`` of the whole sorted
        batch, so a node with more than ``size`` entries in one batch overwrites slots in an
        unspecified order and may keep older interactions instead of the latest. Here each
        entry's slot is its rank among the node's new entries, most recent first, and only the
        ``size`` most recent are written.
        """
        loader, size, device = self.loader, self.size, src.device
        num_events = src.numel()
        neighbors = torch.cat([src, dst])
        nodes = torch.cat([dst, src])
        e_id = torch.arange(first, first + num_events, device=device).repeat(2)
        # Group by node, most recent event first (a self-loop's two entries are identical).
        order = torch.argsort(e_id, descending=True, stable=True)
        order = order[torch.argsort(nodes[order], stable=True)]
        nodes, neighbors, e_id = nodes[order], neighbors[order], e_id[order]
        n_id, counts = torch.unique_consecutive(nodes, return_counts=True)
        local = torch.repeat_interleave(torch.arange(n_id.numel(), device=device), counts)
        rank = torch.arange(nodes.numel(), device=device) - (torch.cumsum(counts, 0) - counts)[local]
        keep = rank < size
        new_e_id = e_id.new_full((n_id.numel(), size), -1)
        new_e_id[local[keep], rank[keep]] = e_id[keep]
        new_neighbors = neighbors.new_zeros((n_id.numel(), size))
        new_neighbors[local[keep], rank[keep]] = neighbors[keep]
        # Merge with the stored entries and keep the most recent `size` (largest event ids).
        all_e_id = torch.cat([loader.e_id[n_id], new_e_id], dim=-1)
        all_neighbors = torch.cat([loader.neighbors[n_id], new_neighbors], dim=-1)
        top, perm = all_e_id.topk(size, dim=-1)
        loader.e_id[n_id] = top
        loader.neighbors[n_id] = torch.gather(all_neighbors, 1, perm)

    def subgraph(self, n_id: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Star graph of ``n_id`` over their recent neighbours.

        Returns ``(nodes [n'], edge_index [2, m], t [m], msg [m, R])``: ``nodes`` sorted unique
        (``n_id`` and its neighbours), ``edge_index`` local indices into ``nodes`` with
        row 0 the neighbour and row 1 the centre node.
        """
        nodes, edge_index, e_id = self.loader(n_id)
        return nodes, edge_index, self.event_t[e_id], self.event_msg[e_id]

    def recent(self, n_id: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Dense recent interactions, most recent first.

        Returns ``(neighbor [n, K], t [n, K], msg [n, K, R], valid [n, K])``; invalid slots
        (fewer than ``K`` interactions so far) hold neighbour 0, time 0 and zero messages.
        """
        e_id = self.loader.e_id[n_id]
        valid = e_id >= 0
        safe = e_id.clamp(min=0)
        if self.event_t.numel() == 0:  # nothing stored yet (a shape test: no device sync)
            t = torch.zeros_like(safe)
            msg = self.event_msg.new_zeros((*safe.shape, self.msg_dim))
        else:
            t = torch.where(valid, self.event_t[safe], 0)
            msg = self.event_msg[safe] * valid[..., None]
        neighbor = torch.where(valid, self.loader.neighbors[n_id], 0)
        return neighbor, t, msg, valid

    def snapshot(self) -> State:
        n, e_id = self.num_inserted, self.loader.e_id
        # Slots without an event may hold stale ids (kept by reset_state): store them as 0.
        neighbors = torch.where(e_id >= 0, self.loader.neighbors, 0)
        return {"neighbors": neighbors, "e_id": clone_state(e_id),
                "event_t": clone_state(self.event_t[:n]), "event_msg": clone_state(self.event_msg[:n]),
                "num_inserted": n}

    def restore(self, state: State) -> None:
        device = self.event_t.device
        self.slot_neighbors = clone_state(state["neighbors"]).to(device)
        self.slot_e_id = clone_state(state["e_id"]).to(device)
        self._bind_loader()
        self.event_t = clone_state(state["event_t"]).to(device)
        self.event_msg = clone_state(state["event_msg"]).to(device)
        self.inserted.fill_(int(state["num_inserted"]))
