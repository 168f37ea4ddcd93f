r"""Node memory on PyG's :class:`~torch_geometric.nn.models.tgn.TGNMemory`, with tensor message stores.

Same math as ``TGNMemory`` in training mode (messages are stored raw and applied lazily,
so the memory cell and the time encoder receive gradients through the scores), with three
changes that the replay engine needs (docs/protocol.md §2):

* **Order-invariant aggregation.** :class:`LatestMeanAggregator` averages the messages that
  share a node's latest timestamp, where PyG's ``LastAggregator`` keeps one of them, chosen
  by thread scheduling.
* **One semantics in train and eval mode.** The memory of node ``u`` is always

  .. math:: s_u = \mathrm{cell}\big(\mathrm{agg}\{\mathrm{msg}(s_u^{stored}, p_v, \phi(t - \tau_u), x)\},\ s_u^{stored}\big)

  over ``u``'s pending messages (those of the last batch it took part in), and
  ``s_u^{stored}`` when it has none (PyG also runs the cell on an empty message for such
  nodes in training mode, and switches to eager updates in eval mode; switching modes
  flushes the stores). ``p_v`` is the partner's stored memory (TGN) or another partner
  representation (:meth:`partner_state`, DyRep). ``train()`` / ``eval()`` change nothing.
* **Tensor stores.** Pending messages are flat tensors (node, partner, t, message, and
  whether the node was the event's source), registered as non-persistent buffers: they
  move with ``.to(device)``, are part of :meth:`snapshot`, and are updated by vectorised
  filtering instead of per-node Python dicts.
* **Time from the stream's start.** PyG's ``last_update`` starts at 0, so a node's first
  message encodes :math:`\phi(t - 0)`, the absolute time: scores then depend on the calendar
  (shifting every timestamp by a constant changes them). With ``time_origin="start"`` (the
  default) the clock starts at the earliest time of the first batch after a reset, the
  *origin* :math:`t_0`, and a node never updated has :math:`\tau_u = t_0`: every time the model
  encodes is a difference of two event times (or of an event time and :math:`t_0`), taken in
  the stream's kind (int64 stays exact at any magnitude) before it becomes float, so a shift
  of all timestamps changes no score. The origin is part of the state (:meth:`snapshot`).
  ``time_origin="zero"`` is PyG's :math:`t_0 = 0`.

Every step has fixed shapes once the number of pending messages involved is known on the
host: :meth:`TensorMemory.update_state` reads it together with the number of nodes in one
device-to-host copy (or takes both from its caller), and applying messages to a node set
runs the cell on every node of the set, keeping the stored memory where a node has none.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.utils import scatter

from tgeval.core.compat import HookedTGNMemory
from tgeval.core.device import host_ints, positions
from tgeval.errors import ModelConfigError
from tgeval.models.base import time_store
from tgeval.stream.state import State, clone_state

__all__ = ["LatestMeanAggregator", "TensorMemory"]

_STORE = ("pending_node", "pending_partner", "pending_t", "pending_msg", "pending_from_src")


class LatestMeanAggregator(nn.Module):
    r"""Mean of each node's messages that carry its latest timestamp.

    :math:`\bar m_u = \frac{1}{|L_u|} \sum_{i \in L_u} m_i` with
    :math:`L_u = \{i : \mathrm{index}_i = u,\ t_i = \max_{j: \mathrm{index}_j = u} t_j\}`;
    zeros for nodes without messages. Invariant to the order of the messages (up to float
    summation order, which the replay engine fixes by replaying in canonical order).

    Shapes: ``msg [M, F]``, ``index [M]`` (in ``[0, dim_size)``), ``t [M]`` -> ``[dim_size, F]``.
    """

    def forward(self, msg: Tensor, index: Tensor, t: Tensor, dim_size: int) -> Tensor:
        latest = scatter(t, index, 0, dim_size, reduce="max")
        keep = (t == latest[index]).to(msg.dtype)  # a weight instead of a boolean index: fixed shapes
        total = scatter(msg * keep[:, None], index, 0, dim_size, reduce="sum")
        return total / scatter(keep, index, 0, dim_size, reduce="sum").clamp(min=1)[:, None]


class TensorMemory(HookedTGNMemory):
    """``TGNMemory`` with tensor message stores and lazy updates in every mode.

    Args:
        num_nodes, raw_msg_dim, memory_dim, time_dim, message_module: as ``TGNMemory``.
        aggregator_module: defaults to :class:`LatestMeanAggregator`.
        cell: ``"gru"`` (TGN) or ``"rnn"`` (a tanh RNN cell, DyRep).
        time_origin: ``"start"`` (time from the stream's start) or ``"zero"`` (PyG's absolute time).
    """

    #: the whole state is in registered buffers (the scoring guard's version check covers it)
    state_in_registered_tensors = True
    #: columns stored after the raw message of each pending message (:meth:`stored_messages`)
    stored_extra = 0

    pending_node: Tensor       # int64 [P]   node that receives the message
    pending_partner: Tensor    # int64 [P]   the other endpoint of the event
    pending_t: Tensor          # int64 / float64 [P]   event time (the kind of the stream's time)
    pending_msg: Tensor        # float [P, R + stored_extra] raw event message (+ what a subclass stores with it)
    pending_from_src: Tensor   # bool  [P]   node was the event's source (msg_s_module) or destination
    last_update: Tensor        # int64 / float64 [num_nodes]   PyG's (float time: promoted); t_0: never updated
    origin: Tensor             # int64 / float64 [1]   t_0; [0] (no origin yet) until the first update of "start"

    #: where the clock starts: ``"start"``, the first update's earliest time, or ``"zero"`` (PyG's)
    time_origin = "start"

    def __init__(self, num_nodes: int, raw_msg_dim: int, memory_dim: int, time_dim: int,
                 message_module: nn.Module, aggregator_module: Optional[nn.Module] = None,
                 cell: str = "gru", time_origin: str = "start") -> None:
        super().__init__(num_nodes, raw_msg_dim, memory_dim, time_dim, message_module,
                         aggregator_module if aggregator_module is not None else LatestMeanAggregator())
        if cell == "rnn":
            self.gru = nn.RNNCell(self.gru.input_size, memory_dim)  # type: ignore[assignment,has-type]
        elif cell != "gru":
            raise ModelConfigError(f"cell must be 'gru' or 'rnn', got {cell!r}.")
        if time_origin not in ("start", "zero"):
            raise ModelConfigError(f"time_origin must be 'start' or 'zero', got {time_origin!r}.")
        self.time_origin = time_origin
        self._reset_origin()

    # -- stores -----------------------------------------------------------------------
    def reset_message_store(self) -> None:
        device = self.memory.device
        empty = torch.empty(0, dtype=torch.long, device=device)
        self.register_buffer("pending_node", empty, persistent=False)
        self.register_buffer("pending_partner", empty.clone(), persistent=False)
        self.register_buffer("pending_t", empty.clone(), persistent=False)
        self.register_buffer("pending_msg", self.memory.new_empty((0, self.raw_msg_dim + self.stored_extra)),
                             persistent=False)
        self.register_buffer("pending_from_src", torch.empty(0, dtype=torch.bool, device=device), persistent=False)

    def reset_state(self) -> None:
        super().reset_state()
        self._reset_origin()

    def _reset_origin(self) -> None:
        """No origin yet (``"start"``: the next update sets it) or PyG's 0 (``"zero"``)."""
        size = int(self.time_origin == "zero")
        self.register_buffer("origin", self.last_update.new_zeros(size), persistent=False)

    def _start_clock(self, t: Tensor) -> None:
        """At the first update without an origin: the origin is the earliest of the times ``t``, and every
        node's last update (none was updated since the reset) starts there."""
        if self.origin.numel() == 0 and t.numel():  # shapes: known on the host
            self.origin = t.min().view(1).to(self.last_update.dtype)
            self.last_update.copy_(self.origin.expand_as(self.last_update))

    def _member(self, n_id: Tensor) -> Tensor:
        """``[P]`` bool: pending messages addressed to a node of ``n_id``."""
        mask = torch.zeros(self.num_nodes, dtype=torch.bool, device=n_id.device)
        mask[n_id] = True
        return mask.take(self.pending_node)

    def message_sizes(self, nodes: Tensor) -> list[Tensor]:
        """Device int64 scalars that applying the pending messages of the nodes of a bool
        ``[num_nodes]`` mask needs on the host: the number of those messages (subclasses add
        what their :meth:`partner_state` needs)."""
        return [nodes.take(self.pending_node).sum()]

    # -- memory -----------------------------------------------------------------------
    def partner_state(self, partner: Tensor, sizes: list[int]) -> Tensor:
        """Representation ``[M, memory_dim]`` of message partners: their stored memory (TGN).
        ``sizes``: the host values of :meth:`message_sizes` after the first."""
        return self.memory[partner]

    def stored_messages(self, src: Tensor, dst: Tensor, raw_msg: Tensor, nodes: Tensor) -> tuple[Tensor, Tensor]:
        """What the batch's events store as the pending messages of their sources and of their
        destinations (``[B, R + stored_extra]`` each), once the batch's nodes ``nodes`` have
        applied their earlier messages: the raw message for both."""
        return raw_msg, raw_msg

    def message_inputs(self, stored: Tensor, partner: Tensor, sizes: list[int]) -> tuple[Tensor, Tensor]:
        """``(raw message [M, R], partner representation [M, memory_dim])`` of pending messages
        from what they stored: the raw message, and :meth:`partner_state` now."""
        return stored, self.partner_state(partner, sizes)

    def updated_memory(self, n_id: Tensor, sizes: Optional[list[int]] = None) -> tuple[Tensor, Tensor]:
        """Memory ``[n, D]`` and last-update times ``[n]`` of the sorted unique nodes ``n_id``,
        with their pending messages applied (without storing the result).

        ``sizes``: the host values of :meth:`message_sizes` for ``n_id`` when the caller has
        read them; read from the device otherwise.
        """
        member = self._member(n_id)
        if sizes is None:
            mask = torch.zeros(self.num_nodes, dtype=torch.bool, device=n_id.device)
            mask[n_id] = True
            sizes = host_ints(*self.message_sizes(mask))
        sel = positions(member, sizes[0])
        node, partner, t = self.pending_node[sel], self.pending_partner[sel], self.pending_t[sel]
        raw, z_partner = self.message_inputs(self.pending_msg[sel], partner, sizes[1:])
        from_src = self.pending_from_src[sel]
        memory, last_update = self.memory[n_id], self.last_update[n_id]
        t_enc = self.time_enc((t - self.last_update[node]).to(raw.dtype))
        z_node = self.memory[node]
        msg = torch.where(from_src[:, None], self.msg_s_module(z_node, z_partner, raw, t_enc),
                          self.msg_d_module(z_node, z_partner, raw, t_enc))
        size = n_id.numel()
        local = torch.searchsorted(n_id, node)
        aggr = self.aggr_module(msg, local, t, size)
        has = torch.zeros(size, dtype=torch.bool, device=n_id.device).index_fill_(0, local, True)
        memory = torch.where(has[:, None], self.gru(aggr, memory), memory)  # no cell step without a message
        latest = scatter(t, local, 0, size, reduce="max")
        return memory, torch.where(has, latest, last_update)

    def forward(self, n_id: Tensor) -> tuple[Tensor, Tensor]:
        """Current memory ``[n, D]`` and last-update times ``[n]`` of sorted unique ``n_id``."""
        return self.updated_memory(n_id)

    def update_state(self, src: Tensor, dst: Tensor, t: Tensor, raw_msg: Tensor, *,
                     nodes: Optional[Tensor] = None, sizes: Optional[list[int]] = None) -> None:
        """Apply the pending messages of the batch's nodes, then make the batch's events their
        pending messages (``src, dst, t [B]``, ``raw_msg [B, R]``).

        ``nodes`` (the sorted distinct ids of ``src`` and ``dst``) and ``sizes`` (the host values
        of :meth:`message_sizes` for them) spare the one device read that computes them.
        """
        if nodes is None or sizes is None:
            touched = torch.zeros(self.num_nodes, dtype=torch.bool, device=src.device)
            touched[src] = True
            touched[dst] = True
            count, *sizes = host_ints(touched.sum(), *self.message_sizes(touched))
            nodes = positions(touched, count)
        self.last_update, self.pending_t = time_store(self.last_update, t), time_store(self.pending_t, t)
        self.origin = time_store(self.origin, t)
        self._start_clock(t)
        memory, last_update = self.updated_memory(nodes, sizes)
        self.memory[nodes] = memory.detach()
        self.last_update[nodes] = last_update
        keep = positions(~self._member(nodes), self.pending_node.numel() - sizes[0])
        self.pending_node = torch.cat([self.pending_node[keep], src, dst])
        self.pending_partner = torch.cat([self.pending_partner[keep], dst, src])
        self.pending_t = torch.cat([self.pending_t[keep], t, t])
        self.pending_msg = torch.cat([self.pending_msg[keep], *self.stored_messages(src, dst, raw_msg, nodes)])
        flags = torch.ones(src.numel(), dtype=torch.bool, device=src.device)
        self.pending_from_src = torch.cat([self.pending_from_src[keep], flags, ~flags])

    def train(self, mode: bool = True) -> "TensorMemory":
        """Set the mode (dropout etc.); unlike ``TGNMemory``, switching flushes nothing."""
        return nn.Module.train(self, mode)

    # -- snapshots --------------------------------------------------------------------
    def snapshot(self) -> State:
        keys = ("memory", "last_update", "origin") + _STORE
        return {key: clone_state(getattr(self, key)) for key in keys}

    def restore(self, state: State) -> None:
        """Return to ``state``; a snapshot without ``"origin"`` (written before the origin was state)
        measured time from 0, and keeps doing so."""
        self.memory.copy_(state["memory"])
        self.last_update = clone_state(state["last_update"]).to(self.memory.device)  # int64 or float64 times
        origin = state["origin"] if "origin" in state else self.last_update.new_zeros(1)
        self.origin = clone_state(origin).to(self.memory.device)
        for key in _STORE:
            setattr(self, key, clone_state(state[key]).to(self.memory.device))

