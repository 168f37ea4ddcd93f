r"""DyRep (Trivedi et al., 2019) on PyG's temporal modules (docs/protocol.md §8).

Memory-based like TGN, with two differences:

* the message a node receives from an event carries an **attention embedding of its
  partner's neighbourhood** instead of the partner's raw memory:
  :math:`m_u = [s_u \| h_v \| x_e \| \phi(t - \tau_u)]`, where :math:`h_v` is
  :class:`~tgeval.models.layers.GraphAttentionEmbedding` over ``v``'s recent neighbours
  with their stored memories as features. It is computed when the message is applied
  (inside scoring), so the attention layer is trained through the scores; with
  ``partner_embedding="event"`` it is computed when the event is observed and stored with
  the message, as DyGLib's DyRep, so no gradient reaches it;
* the node embedding **is the memory** (no embedding layer); the memory cell is a tanh RNN
  (DyRep's recurrent update) over the messages at the latest timestamp.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn.models.tgn import IdentityMessage

from tgeval.core.device import host_ints, positions
from tgeval.models.config import DyRepConfig
from tgeval.models.layers import GraphAttentionEmbedding
from tgeval.models.memory import TensorMemory
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel

__all__ = ["DyRep", "DyRepMemory"]


class DyRepMemory(TensorMemory):
    """:class:`TensorMemory` whose message partners are represented by neighbourhood attention,
    computed when a message is applied, or with ``at_event`` when the event is observed (then
    stored after the raw message, :attr:`stored_extra` columns)."""

    def __init__(self, num_nodes: int, raw_msg_dim: int, memory_dim: int, time_dim: int, num_neighbors: int,
                 dropout: float, at_event: bool = False, time_origin: str = "start") -> None:
        super().__init__(num_nodes, raw_msg_dim, memory_dim, time_dim,
                         IdentityMessage(raw_msg_dim, memory_dim, time_dim), cell="rnn", time_origin=time_origin)
        self.at_event = at_event
        self.stored_extra = memory_dim if at_event else 0
        self.neighbors = NeighborBuffer(num_nodes, num_neighbors, raw_msg_dim)
        self.attention = GraphAttentionEmbedding(memory_dim, memory_dim, raw_msg_dim, self.time_enc, dropout)
        self.reset_message_store()  # with the stored width

    def message_sizes(self, nodes: Tensor) -> list[Tensor]:
        """The pending messages of ``nodes``, their distinct partners, and the partners with their
        recent neighbours (the rows the attention reads; none when it was stored at the event)."""
        member = nodes.take(self.pending_node)
        if self.at_event:
            return [member.sum()]
        hits = torch.zeros(self.num_nodes, dtype=torch.long, device=nodes.device)
        partners = hits.index_add_(0, self.pending_partner, member.long()) > 0
        return [member.sum(), partners.sum(), self.neighbors.reach(partners).sum()]

    def partner_state(self, partner: Tensor, sizes: list[int]) -> Tensor:
        """``h_v`` ``[M, memory_dim]``: attention over each distinct partner's recent neighbours,
        with their stored memories (fixed shapes given ``sizes``: distinct partners, reach)."""
        mask = torch.zeros(self.num_nodes, dtype=torch.bool, device=partner.device)
        mask[partner] = True
        ids = positions(mask, sizes[0])
        reach = positions(self.neighbors.reach(mask), sizes[1])
        neighbor, t, msg, valid = self.neighbors.recent(ids)
        local = torch.searchsorted(reach, neighbor).clamp(max=max(reach.numel() - 1, 0))  # invalid slots: any row
        h = self.attention(self.memory[reach], torch.searchsorted(reach, ids), local,
                           self.last_update[reach][local] - t, msg, valid)
        return h[torch.searchsorted(ids, partner)]

    def stored_messages(self, src: Tensor, dst: Tensor, raw_msg: Tensor, nodes: Tensor) -> tuple[Tensor, Tensor]:
        """With ``at_event``: each raw message and the attention embedding of the partner now (the
        batch's nodes have applied their earlier messages; their neighbourhoods are those before
        the batch), detached; the raw message otherwise."""
        if not self.at_event:
            return raw_msg, raw_msg
        mask = torch.zeros(self.num_nodes, dtype=torch.bool, device=src.device)
        mask[nodes] = True
        h = self.partner_state(nodes, [nodes.numel(), *host_ints(self.neighbors.reach(mask).sum())]).detach()
        return (torch.cat([raw_msg, h[torch.searchsorted(nodes, dst)]], dim=1),
                torch.cat([raw_msg, h[torch.searchsorted(nodes, src)]], dim=1))

    def message_inputs(self, stored: Tensor, partner: Tensor, sizes: list[int]) -> tuple[Tensor, Tensor]:
        if not self.at_event:
            return super().message_inputs(stored, partner, sizes)
        return stored[:, :self.raw_msg_dim], stored[:, self.raw_msg_dim:]

    def update_state(self, src: Tensor, dst: Tensor, t: Tensor, raw_msg: Tensor, *,
                     nodes: Optional[Tensor] = None, sizes: Optional[list[int]] = None) -> None:
        """As :meth:`TensorMemory.update_state`, with the attention's dropout off: the stored
        state is a function of the history and the parameters only, the same in train and eval
        mode (dropout acts where messages are applied inside scoring)."""
        was_training = self.attention.training
        self.attention.train(False)
        try:
            super().update_state(src, dst, t, raw_msg, nodes=nodes, sizes=sizes)
        finally:
            self.attention.train(was_training)

    def reset_state(self) -> None:
        super().reset_state()
        if hasattr(self, "neighbors"):  # TGNMemory.__init__ resets before the buffer exists
            self.neighbors.reset_state()

    def snapshot(self) -> dict:
        return {**super().snapshot(), "neighbors": self.neighbors.snapshot()}

    def restore(self, state: dict) -> None:
        super().restore(state)
        self.neighbors.restore(state["neighbors"])


class DyRep(NeuralLinkModel):
    """DyRep: embedding = memory, RNN update from neighbourhood-attention messages; built from
    its :class:`~tgeval.models.config.DyRepConfig`."""

    config: DyRepConfig

    def __init__(self, config: DyRepConfig) -> None:
        super().__init__(config, config.memory_dim)
        self.memory = DyRepMemory(config.num_nodes, config.msg_dim, config.memory_dim, config.time_dim,
                                  config.num_neighbors, config.dropout, at_event=config.partner_embedding == "event",
                                  time_origin=config.time_origin)

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        return {"memory": self.memory}

    def row_sizes(self, rows: Tensor) -> list[Tensor]:
        return self.memory.message_sizes(rows if rows.dtype == torch.bool else self._mask(rows))

    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        return self.memory.updated_memory(rows, sizes)[0]

    def ingest(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor, touched: Optional[Tensor] = None) -> None:
        nodes, sizes = self._batch_nodes(src, dst, touched, self.memory)
        # messages use the neighbourhoods before the batch
        self.memory.update_state(src, dst, t, msg, nodes=nodes, sizes=sizes)
        self.memory.neighbors.insert(src, dst, t, msg, nodes=nodes)

    def changed(self, touched: Tensor) -> Tensor:
        """The batch's nodes, and nodes with a pending message from a partner whose
        neighbourhood attention changed (the partner, or one of its recent neighbours, is a
        batch node), unless the attention was stored with the message at the event."""
        memory, slots = self.memory, self.memory.neighbors.loader
        if memory.at_event:
            return touched
        attended = touched | (touched.take(slots.neighbors) & (slots.e_id >= 0)).any(dim=1)
        partner_hit = torch.zeros(self.num_nodes, dtype=torch.long, device=touched.device)
        partner_hit.index_add_(0, memory.pending_node, attended.take(memory.pending_partner).long())
        return touched | (partner_hit > 0)
