"""Recent-neighbour buffer: PyG's ``LastNeighborLoader`` plus the time and message of each event.

PyG's loader keeps, for every node, the ids of its ``size`` most recent interactions (both
directions) and numbers events in insertion order; scripts then read ``data.t[e_id]`` from
the whole dataset. Here the buffer keeps its own copy of each inserted event's time and
message, so a model holds only history it has been given (nothing to read from the
future), and all of it is part of :meth:`NeighborBuffer.snapshot`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch import Tensor
from torch_geometric.nn.models.tgn import LastNeighborLoader

from tgeval.core.compat import ApplyHookModule, move_loader_scratch
from tgeval.data.sorted_keys import Occurrences
from tgeval.errors import ModelConfigError
from tgeval.models.base import time_store
from tgeval.stream.state import State, clone_state

__all__ = ["NeighborBuffer", "BatchInteractions"]


@dataclass(frozen=True)
class BatchInteractions:
    """The events of a batch being scored (canonical order), indexed by node and time: what
    :meth:`NeighborBuffer.recent_before` adds to the stored interactions."""

    occurrences: Occurrences  # keys: node ids of the entries (dst, src per event), times: the events'
    src: Tensor
    dst: Tensor
    t: Tensor
    msg: Tensor

    @classmethod
    def of(cls, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor) -> "BatchInteractions":
        """From time-sorted events ``[B]`` and messages ``[B, R]``: each event is an interaction of
        its destination (with the source) and of its source, in event order."""
        return cls(Occurrences(torch.stack([dst, src], 1).view(-1), t.repeat_interleave(2), times_sorted=True),
                   src, dst, t, msg)


class NeighborBuffer(ApplyHookModule):
    """The ``size`` most recent interactions of every node, with event times and messages.

    Inserting and reading have fixed shapes (no host synchronisation) when the caller passes
    the batch's distinct nodes; the number of inserted events is kept on the host too.

    Args:
        num_nodes: exclusive upper bound of node ids.
        size: interactions kept per node (the most recent by insertion order).
        msg_dim: width of event messages.
    """

    #: the whole state is in registered buffers (the scoring guard's version check covers it)
    state_in_registered_tensors = True

    event_t: Tensor    # int64 / float64 [capacity]   time of inserted event e (valid for e < num_inserted)
    event_msg: Tensor  # float [capacity, R] message of inserted event e

    def __init__(self, num_nodes: int, size: int, msg_dim: int) -> None:
        super().__init__()
        if size < 1:
            raise ModelConfigError(f"size must be >= 1, got {size}.")
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
        self._num_inserted = 0  # the same count on the host

    slot_neighbors: Tensor  # int64 [num_nodes, size]  the loader's `neighbors`
    slot_e_id: Tensor       # int64 [num_nodes, size]  the loader's `e_id` (-1: empty slot)
    inserted: Tensor        # int64 []  events inserted so far (a tensor, so the scoring guard sees it)

    @property
    def num_inserted(self) -> int:
        return self._num_inserted

    def _bind_loader(self) -> None:
        self.loader.neighbors, self.loader.e_id = self.slot_neighbors, self.slot_e_id

    def tensors_applied(self, fn: Callable[[Tensor], Tensor]) -> None:
        """After ``.to()`` and the like: the loader's scratch moves too, and it works on the moved tables."""
        move_loader_scratch(self.loader, fn)
        self._bind_loader()

    def reset_state(self) -> None:
        self.loader.reset_state()
        self.inserted.zero_()
        self._num_inserted = 0

    def insert(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor, nodes: Optional[Tensor] = None) -> None:
        """Add events ``(src, dst, t, msg)`` (``[B]``, ``[B, R]``) as neighbours in both directions.

        ``nodes``: the sorted distinct ids of ``src`` and ``dst`` when the caller has them (then
        nothing is read back from the device); computed otherwise.
        """
        start = self._num_inserted
        end = start + src.numel()
        self.event_t = time_store(self.event_t, t)
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
        self._num_inserted = end
        if nodes is None:
            nodes = torch.unique(torch.cat([src, dst]))
        self._insert_neighbors(src, dst, start, nodes)

    def _insert_neighbors(self, src: Tensor, dst: Tensor, first: int, nodes: Tensor) -> None:
        """``LastNeighborLoader.insert`` that keeps the ``size`` most recent entries of every node.

        PyG's version places a node's new entries at ``position % size`` of the whole sorted
        batch, so a node with more than ``size`` entries in one batch overwrites slots in an
        unspecified order and may keep older interactions instead of the latest. Here each
        entry's slot is its rank among the node's new entries, most recent first, and only the
        ``size`` most recent are written (fixed shapes: dropped entries go to a padding slot).
        """
        loader, size, device = self.loader, self.size, src.device
        num_events, num_nodes = src.numel(), nodes.numel()
        centre = torch.cat([dst, src])
        neighbors = torch.cat([src, dst])
        event = torch.arange(num_events, device=device).repeat(2)
        # Group by centre node, most recent event first (a self-loop's two entries are identical).
        order = torch.topk(centre * num_events + (num_events - 1 - event), 2 * num_events, largest=False).indices
        centre, neighbors, event = centre[order], neighbors[order], event[order]
        rank = torch.arange(2 * num_events, device=device) - torch.searchsorted(centre, centre)
        slot = torch.where(rank < size, torch.searchsorted(nodes, centre) * size + rank, num_nodes * size)
        new_e_id = torch.full((num_nodes * size + 1,), -1, dtype=torch.long, device=device)
        new_e_id.scatter_(0, slot, first + event)
        new_neighbors = torch.zeros(num_nodes * size + 1, dtype=torch.long, device=device)
        new_neighbors.scatter_(0, slot, neighbors)
        # Merge with the stored entries and keep the most recent `size` (largest event ids).
        all_e_id = torch.cat([new_e_id[:-1].view(num_nodes, size), loader.e_id[nodes]], dim=-1)
        all_neighbors = torch.cat([new_neighbors[:-1].view(num_nodes, size), loader.neighbors[nodes]], dim=-1)
        top, perm = all_e_id.topk(size, dim=-1)
        loader.e_id[nodes] = top
        loader.neighbors[nodes] = torch.gather(all_neighbors, 1, perm)

    def reach(self, nodes: Tensor) -> Tensor:
        """bool ``[num_nodes]``: the given nodes and their recent neighbours, fixed shapes either way.

        ``nodes`` is a bool ``[num_nodes]`` mask (work over the whole slot table) or int64 node
        ids (work over their ``K`` slots each, plus the mask: what a caller that holds a few
        nodes' ids of a large graph passes)."""
        if nodes.dtype == torch.bool:
            hits = torch.zeros(nodes.numel(), dtype=torch.long, device=nodes.device)
            hits.index_add_(0, self.slot_neighbors.view(-1),
                            ((self.slot_e_id >= 0) & nodes[:, None]).view(-1).long())
            return nodes | (hits > 0)
        out = torch.zeros(self.slot_e_id.size(0), dtype=torch.bool, device=nodes.device)
        out[nodes] = True
        out[torch.where(self.slot_e_id[nodes] >= 0, self.slot_neighbors[nodes], nodes[:, None]).view(-1)] = True
        return out

    def recent(self, n_id: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Dense recent interactions of any node ids, most recent first (fixed shapes).

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

    def recent_before(self, ids: Tensor, at: Tensor, earlier: Optional[BatchInteractions]
                      ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The ``K`` most recent interactions of ``ids`` strictly before ``at`` (``[n]``), most
        recent first, as :meth:`recent`: the stored ones, and the ``earlier`` batch's before
        ``at`` ahead of them (all more recent than the stored ones)."""
        stored = self.recent(ids)
        if earlier is None or earlier.src.numel() == 0:
            return stored
        k, occurrences = self.size, earlier.occurrences
        start = torch.searchsorted(occurrences.keys, ids)
        count = occurrences.count_before(ids, at)  # the batch's interactions of each node before `at`
        back = torch.arange(k, device=ids.device)
        valid = back[None, :] < count[:, None]
        position = (start[:, None] + count[:, None] - 1 - back[None, :]).clamp(min=0)
        entry = occurrences.order.take(position.clamp(max=occurrences.order.numel() - 1))
        event, role = entry // 2, entry % 2  # entries alternate (dst's, src's) per event
        neighbor = torch.where(role == 0, earlier.src.take(event), earlier.dst.take(event))
        combined = [torch.cat([torch.where(valid, part, 0), rest], dim=1) for part, rest in
                    ((neighbor, stored[0]), (earlier.t.take(event), stored[1]))]
        msg = torch.cat([earlier.msg[event] * valid[..., None], stored[2]], dim=1)
        valid_all = torch.cat([valid, stored[3]], dim=1)
        keep = torch.argsort((~valid_all).to(torch.uint8), dim=1, stable=True)[:, :k]  # the first K valid
        return (combined[0].gather(1, keep), combined[1].gather(1, keep),
                msg.gather(1, keep[..., None].expand(-1, -1, msg.size(-1))), valid_all.gather(1, keep))

    def snapshot(self) -> State:
        n, e_id = self._num_inserted, self.loader.e_id
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
        self._num_inserted = int(state["num_inserted"])
        self.inserted.fill_(self._num_inserted)
