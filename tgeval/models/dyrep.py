r"""DyRep (Trivedi et al., 2019) on PyG's temporal modules (SPEC §8).

Memory-based like TGN, with two differences:

* the message a node receives from an event carries an **attention embedding of its
  partner's neighbourhood** instead of the partner's raw memory:
  :math:`m_u = [s_u \| h_v \| x_e \| \phi(t - \tau_u)]`, where :math:`h_v` is
  :class:`~tgeval.models.layers.GraphAttentionEmbedding` over ``v``'s recent neighbours
  with their stored memories as features. It is computed when the message is applied
  (inside scoring), so the attention layer is trained through the scores;
* the node embedding **is the memory** (no embedding layer); the memory cell is a tanh RNN
  (DyRep's recurrent update) over the messages at the latest timestamp.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn.models.tgn import IdentityMessage

from tgeval.device import positions
from tgeval.models.config import DyRepConfig
from tgeval.models.layers import GraphAttentionEmbedding
from tgeval.models.memory import TensorMemory
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel

__all__ = ["DyRep", "DyRepMemory"]


class DyRepMemory(TensorMemory):
    """:class:`TensorMemory` whose message partners are represented by neighbourhood attention."""

    def __init__(self, num_nodes: int, raw_msg_dim: int, memory_dim: int, time_dim: int, num_neighbors: int,
                 dropout: float) -> None:
        super().__init__(num_nodes, raw_msg_dim, memory_dim, time_dim,
                         IdentityMessage(raw_msg_dim, memory_dim, time_dim), cell="rnn")
        self.neighbors = NeighborBuffer(num_nodes, num_neighbors, raw_msg_dim)
        self.attention = GraphAttentionEmbedding(memory_dim, memory_dim, raw_msg_dim, self.time_enc, dropout)

    def message_sizes(self, nodes: Tensor) -> list[Tensor]:
        """The pending messages of ``nodes``, their distinct partners, and the partners with their
        recent neighbours (the rows the attention reads)."""
        member = nodes.take(self.pending_node)
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
                                  config.num_neighbors, config.dropout)

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        return {"memory": self.memory}

    def row_sizes(self, rows: Tensor) -> list[Tensor]:
        return self.memory.message_sizes(rows if rows.dtype == torch.bool else self._mask(rows))

    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        return self.memory._get_updated_memory(rows, sizes)[0]

    def ingest(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor, touched: Optional[Tensor] = None) -> None:
        nodes, sizes = self._batch_nodes(src, dst, touched, self.memory)
        # messages use the neighbourhoods before the batch
        self.memory.update_state(src, dst, t, msg, nodes=nodes, sizes=sizes)
        self.memory.neighbors.insert(src, dst, t, msg, nodes=nodes)

    def changed(self, touched: Tensor) -> Tensor:
        """The batch's nodes, and nodes with a pending message from a partner whose
        neighbourhood attention changed (the partner, or one of its recent neighbours, is a
        batch node)."""
        memory, slots = self.memory, self.memory.neighbors.loader
        attended = touched | (touched.take(slots.neighbors) & (slots.e_id >= 0)).any(dim=1)
        partner_hit = torch.zeros(self.num_nodes, dtype=torch.long, device=touched.device)
        partner_hit.index_add_(0, memory.pending_node, attended.take(memory.pending_partner).long())
        return touched | (partner_hit > 0)
