r"""GraphMixer (Cong et al., 2023) with the common model interface (SPEC §8).

No memory. A node's embedding is built from its ``K`` most recent interactions (the
neighbour buffer is its state, snapshotted like memory):

* **link encoder**: tokens :math:`[x_e \| \cos(\omega (\tau_u - t_e))]` for the ``K`` most
  recent events of ``u`` (most recent first; missing slots are zero), a linear map, an
  MLP-Mixer, layer norm and the mean over tokens. :math:`\omega` is fixed (not trained,
  :class:`~tgeval.models.layers.FixedTimeEncoder`) and :math:`\tau_u` is ``u``'s latest
  interaction time, so embeddings depend on the state only (one embedding per node and
  batch, as every model here);
* **node encoder** (when node features ``X`` are given): :math:`X_u + \mathrm{mean}_{v \in N_K(u)} X_v`;
* a linear map of both to the embedding, then the MLP link decoder.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from tgeval.models.layers import FixedTimeEncoder, MixerBlock
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel

__all__ = ["GraphMixer"]


class GraphMixer(NeuralLinkModel):
    """GraphMixer link predictor.

    Args:
        num_nodes: exclusive upper bound of node ids.
        msg_dim: event message width (1, a zero column, for data without features).
        num_neighbors: ``K``, recent interactions per node (the tokens).
        time_dim: width of the fixed time encoding.
        hidden_dim: token width inside the mixer.
        embedding_dim: node embedding width.
        num_layers: mixer blocks.
        dropout: dropout inside the mixer.
        node_features: optional static node features ``[num_nodes, F]``.
    """

    def __init__(self, num_nodes: int, msg_dim: int = 1, num_neighbors: int = 20, time_dim: int = 100,
                 hidden_dim: int = 100, embedding_dim: int = 100, num_layers: int = 2, dropout: float = 0.1,
                 node_features: Optional[Tensor] = None) -> None:
        super().__init__(num_nodes, msg_dim, embedding_dim)
        self.config = dict(num_nodes=num_nodes, msg_dim=msg_dim, num_neighbors=num_neighbors, time_dim=time_dim,
                           hidden_dim=hidden_dim, embedding_dim=embedding_dim, num_layers=num_layers, dropout=dropout)
        self.neighbors = NeighborBuffer(num_nodes, num_neighbors, msg_dim)
        self.time_enc = FixedTimeEncoder(time_dim)
        self.token = nn.Linear(msg_dim + time_dim, hidden_dim)
        self.mixers = nn.Sequential(*(MixerBlock(num_neighbors, hidden_dim, dropout) for _ in range(num_layers)))
        self.norm = nn.LayerNorm(hidden_dim)
        node_dim = 0
        if node_features is not None:
            if node_features.dim() != 2 or node_features.size(0) != num_nodes:
                raise ValueError(f"node_features must be [num_nodes={num_nodes}, F], got {tuple(node_features.shape)}.")
            node_dim = node_features.size(1)
            # a copy: load_state_dict writes into the buffer in place, never into the caller's tensor
            self.register_buffer("node_features", node_features.detach().to(torch.float32, copy=True))
        self.config["node_dim"] = node_dim
        self.out = nn.Linear(hidden_dim + node_dim, embedding_dim)

    node_features: Tensor  # float [num_nodes, F], registered when given

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        return {"neighbors": self.neighbors}

    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        neighbor, t, msg, valid = self.neighbors.recent(rows)
        latest = torch.where(valid, t, torch.iinfo(torch.long).min).max(dim=1, keepdim=True).values
        dt = torch.where(valid, latest - t, 0).to(msg.dtype)
        # token-major [K, n, .] (the mixer's layout): transposing the inputs is cheaper than the activations
        tokens = torch.cat([msg.transpose(0, 1), self.time_enc(dt.t())], dim=-1) * valid.t()[..., None]
        link = self.norm(self.mixers(self.token(tokens))).mean(dim=0)
        if self.config["node_dim"] == 0:
            return self.out(link)
        x = self.node_features
        weight = valid.to(x.dtype)[..., None]
        around = (x[neighbor] * weight).sum(1) / weight.sum(1).clamp(min=1)
        return self.out(torch.cat([link, x[rows] + around], dim=-1))

    def ingest(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor, touched: Optional[Tensor] = None) -> None:
        self.neighbors.insert(src, dst, t, msg, nodes=self._batch_nodes(src, dst, touched)[0])

    def changed(self, touched: Tensor) -> Tensor:
        """The batch's nodes: an embedding reads only the node's own neighbour slots (and static
        node features)."""
        return touched
