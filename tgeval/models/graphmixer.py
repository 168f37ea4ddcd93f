r"""GraphMixer (Cong et al., 2023) with the common model interface (docs/protocol.md §8).

No memory. A node's embedding is built from its ``K`` most recent interactions (the
neighbour buffer is its state, snapshotted like memory):

* **link encoder**: tokens :math:`[x_e \| \cos(\omega (\tau_u - t_e))]` for the ``K`` most
  recent events of ``u`` (most recent first; missing slots are zero), a linear map, an
  MLP-Mixer, layer norm and the mean over tokens. :math:`\omega` is fixed (not trained,
  :class:`~tgeval.models.layers.FixedTimeEncoder`) and :math:`\tau_u` is ``u``'s latest
  interaction time, so embeddings depend on the state only (one embedding per node and
  batch, as every model here). With ``time_gap="query"`` :math:`\tau_u` is the time of the
  scored event, as in DyGLib's GraphMixer: the tokens then say how long ago ``u`` interacted,
  and a node is embedded per scored pair, so there is no all-entity ranking;
* **node encoder** (when node features ``X`` are given): :math:`X_u + \mathrm{mean}_{v \in N_K(u)} X_v`;
* a linear map of both to the embedding, then the MLP link decoder.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import torch
from torch import Tensor, nn

from tgeval.errors import ModelConfigError
from tgeval.models.config import GraphMixerConfig
from tgeval.models.layers import FixedTimeEncoder, MixerBlock
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel

__all__ = ["GraphMixer"]


class GraphMixer(NeuralLinkModel):
    """GraphMixer link predictor, built from its :class:`~tgeval.models.config.GraphMixerConfig`.

    Args:
        config: widths; its ``node_dim`` is set from ``node_features``.
        node_features: optional static node features ``[num_nodes, F]``. Without them, a
            ``config.node_dim > 0`` gets zero features of that width, which a checkpoint's
            saved ones replace (how :func:`tgeval.models.registry.build` rebuilds a model).
    """

    config: GraphMixerConfig

    def __init__(self, config: GraphMixerConfig, node_features: Optional[Tensor] = None) -> None:
        num_nodes, node_dim, hidden_dim = config.num_nodes, config.node_dim, config.hidden_dim
        if node_features is not None:
            if node_features.dim() != 2 or node_features.size(0) != num_nodes:
                raise ModelConfigError(f"node_features must be [num_nodes={num_nodes}, F], got "
                                       f"{tuple(node_features.shape)}.")
            if node_dim not in (0, node_features.size(1)):
                raise ModelConfigError(f"node_features has {node_features.size(1)} columns, the config's node_dim is "
                                       f"{node_dim}; leave node_dim at 0 (it is set from the features).")
            node_dim = node_features.size(1)
            config = dataclasses.replace(config, node_dim=node_dim)
        elif node_dim:
            node_features = torch.zeros(num_nodes, node_dim)
        super().__init__(config, config.embedding_dim)
        # an embedding at a query time can read every interaction before it, inside a batch too
        self.capabilities = self.capabilities.replace(exact_history=config.time_gap == "query")
        self.neighbors = NeighborBuffer(num_nodes, config.num_neighbors, config.msg_dim)
        self.time_enc = FixedTimeEncoder(config.time_dim)
        self.token = nn.Linear(config.msg_dim + config.time_dim, hidden_dim)
        self.mixers = nn.Sequential(*(MixerBlock(config.num_neighbors, hidden_dim, config.dropout)
                                      for _ in range(config.num_layers)))
        self.norm = nn.LayerNorm(hidden_dim)
        if node_features is not None:
            # a copy: load_state_dict writes into the buffer in place, never into the caller's tensor
            self.register_buffer("node_features", node_features.detach().to(torch.float32, copy=True))
        self.out = nn.Linear(hidden_dim + node_dim, config.embedding_dim)

    node_features: Tensor  # float [num_nodes, F], registered when given

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        return {"neighbors": self.neighbors}

    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        neighbor, t, msg, valid = self.neighbors.recent(rows)
        latest = torch.where(valid, t, torch.iinfo(torch.long).min).max(dim=1, keepdim=True).values
        return self._encode(rows, neighbor, t, msg, valid, latest)

    def embed_at(self, ids: Tensor, at: Tensor) -> Tensor:
        """With ``time_gap="query"``: each node of ``ids`` embedded from its ``K`` most recent
        interactions before ``at`` (``[n]``; inside :meth:`within_batch` the batch's earlier ones
        too), gaps taken to ``at``."""
        return self._encode(ids, *self.neighbors.recent_before(ids, at, self.earlier), at[:, None])

    def _encode(self, rows: Tensor, neighbor: Tensor, t: Tensor, msg: Tensor, valid: Tensor,
                reference: Tensor) -> Tensor:
        """Embeddings ``[n, D]`` of nodes ``rows`` from their recent interactions (``[n, K]``, as
        :meth:`~tgeval.models.neighbors.NeighborBuffer.recent`), time gaps taken to ``reference``
        (``[n, 1]``)."""
        dt = torch.where(valid, reference - t, 0).to(msg.dtype)
        # token-major [K, n, .] (the mixer's layout): transposing the inputs is cheaper than the activations
        tokens = torch.cat([msg.transpose(0, 1), self.time_enc(dt.t())], dim=-1) * valid.t()[..., None]
        link = self.norm(self.mixers(self.token(tokens))).mean(dim=0)
        if self.config.node_dim == 0:
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
