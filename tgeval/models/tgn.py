r"""TGN (Rossi et al., 2020) on PyG's temporal modules (docs/protocol.md §8).

* Memory: :class:`~tgeval.models.memory.TensorMemory` (PyG's ``TGNMemory`` with tensor
  stores), GRU cell, identity messages :math:`[s_u \| s_v \| x_e \| \phi(t - \tau_u)]`,
  mean of the messages at the latest timestamp.
* Embedding: :class:`~tgeval.models.layers.GraphAttentionEmbedding` over each node's
  ``num_neighbors`` most recent interactions
  (:class:`~tgeval.models.neighbors.NeighborBuffer`), with the memory as node features and
  time gaps :math:`\tau_j - t_e` (the neighbour's last update minus the event time, PyG's
  recipe). With ``time_gap="query"`` the gaps are :math:`t - t_e` to the scored event's time
  :math:`t`, and the neighbours include the batch's events before :math:`t` under
  ``history="neighbors"``, as DyGLib's TGN (its memory stays as of the batch start): a node is
  then embedded per scored pair, so there is no all-entity ranking.
* Time: measured from the stream's start (``time_origin="start"``, the default: scores do not
  depend on the calendar) or from 0 (``"zero"``, PyG's recipe); see :mod:`tgeval.models.memory`.
* Decoder: :class:`~tgeval.models.layers.LinkDecoder`.

The defaults are the recipe of PyG's ``examples/tgn.py``: memory, time and embedding
width 100, 10 neighbours, attention dropout 0.1.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn.models.tgn import IdentityMessage

from tgeval.core.device import host_ints, positions
from tgeval.models.config import TGNConfig
from tgeval.models.layers import GraphAttentionEmbedding
from tgeval.models.memory import TensorMemory
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel

__all__ = ["TGN"]


class TGN(NeuralLinkModel):
    """Temporal Graph Network, built from its :class:`~tgeval.models.config.TGNConfig`.

    Example:
        >>> TGN(TGNConfig(num_nodes=10, memory_dim=8, time_dim=4, embedding_dim=8)).config.num_neighbors
        10
    """

    config: TGNConfig

    def __init__(self, config: TGNConfig) -> None:
        super().__init__(config, config.embedding_dim)
        c = config
        self.memory = TensorMemory(c.num_nodes, c.msg_dim, c.memory_dim, c.time_dim,
                                   IdentityMessage(c.msg_dim, c.memory_dim, c.time_dim), time_origin=c.time_origin)
        self.neighbors = NeighborBuffer(c.num_nodes, c.num_neighbors, c.msg_dim)
        # an embedding at a query time reads the batch's earlier events as neighbours (memory stays stale)
        self.capabilities = self.capabilities.replace(batch_neighbors=c.time_gap == "query")
        self.gnn = GraphAttentionEmbedding(c.memory_dim, c.embedding_dim, c.msg_dim, self.memory.time_enc, c.dropout)

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        return {"memory": self.memory, "neighbors": self.neighbors}

    def row_sizes(self, rows: Tensor) -> list[Tensor]:
        reach = self.neighbors.reach(rows)  # whose memory the attention reads
        return [reach.sum(), *self.memory.message_sizes(reach)]

    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        reach = positions(self.neighbors.reach(rows), sizes[0])
        memory, last_update = self.memory.updated_memory(reach, sizes[1:])
        neighbor, t, msg, valid = self.neighbors.recent(rows)
        local = torch.searchsorted(reach, neighbor).clamp(max=max(reach.numel() - 1, 0))  # invalid slots: any row
        return self.gnn(memory, torch.searchsorted(reach, rows), local, last_update[local] - t, msg, valid)

    def embed_at(self, ids: Tensor, at: Tensor) -> Tensor:
        """With ``time_gap="query"``: attention over the ``K`` most recent interactions of each node
        of ``ids`` before ``at`` (``[n]``; inside :meth:`within_batch` the batch's earlier ones too),
        time gaps ``at - t_e``, with the memories (as of the batch start) of the nodes and their
        neighbours."""
        neighbor, t, msg, valid = self.neighbors.recent_before(ids, at, self.earlier)
        mask = self._mask(ids)
        mask[torch.where(valid, neighbor, ids[:, None])] = True
        count, *sizes = host_ints(mask.sum(), *self.memory.message_sizes(mask))
        reach = positions(mask, count)
        memory = self.memory.updated_memory(reach, sizes)[0]
        local = torch.searchsorted(reach, neighbor).clamp(max=reach.numel() - 1)  # invalid slots: any row
        # one row per (node, time) after the reach's rows: a node queried at two times is two centres
        centres = torch.arange(reach.numel(), reach.numel() + ids.numel(), device=ids.device)
        x = torch.cat([memory, memory[torch.searchsorted(reach, ids)]])
        return self.gnn(x, centres, local, at[:, None] - t, msg, valid)

    def ingest(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor, touched: Optional[Tensor] = None) -> None:
        nodes, sizes = self._batch_nodes(src, dst, touched, self.memory)
        self.memory.update_state(src, dst, t, msg, nodes=nodes, sizes=sizes)
        self.neighbors.insert(src, dst, t, msg, nodes=nodes)

    def changed(self, touched: Tensor) -> Tensor:
        """The batch's nodes; nodes with a pending message from one of them (the partner's memory
        changed); and every node with one of those among its recent neighbours."""
        memory, slots = self.memory, self.neighbors.loader
        partner_hit = torch.zeros(self.num_nodes, dtype=torch.long, device=touched.device)
        partner_hit.index_add_(0, memory.pending_node, touched.take(memory.pending_partner).long())
        moved = touched | (partner_hit > 0)
        return moved | (moved.take(slots.neighbors) & (slots.e_id >= 0)).any(dim=1)
