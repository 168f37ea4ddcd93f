r"""GraphMixer (Cong et al., 2023) with the common model interface (SPEC §8).

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
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.data.sorted_keys import Occurrences
from tgeval.models.config import GraphMixerConfig
from tgeval.models.layers import FixedTimeEncoder, MixerBlock
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel

__all__ = ["GraphMixer"]


@dataclass(frozen=True)
class _BatchInteractions:
    """A batch's events in canonical order, and its interactions indexed by node and time."""

    occurrences: Occurrences  # keys: node ids of the entries (dst, src per event), times: the events'
    src: Tensor
    dst: Tensor
    t: Tensor
    msg: Tensor


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
                raise ValueError(f"node_features must be [num_nodes={num_nodes}, F], got {tuple(node_features.shape)}.")
            if node_dim not in (0, node_features.size(1)):
                raise ValueError(f"node_features has {node_features.size(1)} columns, the config's node_dim is "
                                 f"{node_dim}; leave node_dim at 0 (it is set from the features).")
            node_dim = node_features.size(1)
            config = dataclasses.replace(config, node_dim=node_dim)
        elif node_dim:
            node_features = torch.zeros(num_nodes, node_dim)
        super().__init__(config, config.embedding_dim)
        # an embedding at a query time can read every interaction before it, inside a batch too
        self.exact_history = config.time_gap == "query"
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

    @property
    def ranks_all_entities(self) -> bool:  # type: ignore[override]
        return self.config.time_gap == "latest"

    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        if not self.ranks_all_entities:
            raise TypeError("GraphMixer with time_gap='query' embeds a node at a query time, not once per batch: "
                            "it scores pairs (sampled metrics, training) but has no all-entity ranking; evaluate "
                            "it with catalog=None (--no-all-entity), or use time_gap='latest'.")
        neighbor, t, msg, valid = self.neighbors.recent(rows)
        latest = torch.where(valid, t, torch.iinfo(torch.long).min).max(dim=1, keepdim=True).values
        return self._encode(rows, neighbor, t, msg, valid, latest)

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """``dec(z_src, z_dst)`` ``[B]``; with ``time_gap="query"`` each distinct (node, time) of
        the call is embedded at that time, in chunks of :attr:`embed_chunk`."""
        if self.config.time_gap == "latest":
            return super().score(src, dst, t)
        pairs, inverse = torch.unique(torch.stack([torch.cat([src, dst]), torch.cat([t, t])]), dim=1,
                                      return_inverse=True)
        parts = []
        for start in range(0, pairs.size(1), self.embed_chunk):
            ids = pairs[0, start:start + self.embed_chunk].contiguous()
            at = pairs[1, start:start + self.embed_chunk].contiguous()
            parts.append(self._encode(ids, *self._recent_before(ids, at), at[:, None]))
        z = torch.cat(parts)[inverse]
        return self.decoder(z[:src.numel()], z[src.numel():])

    def _recent_before(self, ids: Tensor, at: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The ``K`` most recent interactions of ``ids`` strictly before ``at`` (``[n]``), most
        recent first, as :meth:`~tgeval.models.neighbors.NeighborBuffer.recent`: the buffer's,
        and inside :meth:`within_batch` the batch's earlier ones before them (all more recent)."""
        stored = self.neighbors.recent(ids)
        earlier: Optional[_BatchInteractions] = self._earlier
        if earlier is None or earlier.src.numel() == 0:
            return stored
        k = self.config.num_neighbors
        occurrences = earlier.occurrences
        start = torch.searchsorted(occurrences.keys, ids)
        count = occurrences.count_before(ids, at)  # this batch's interactions of each node before `at`
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

    def _index_earlier(self, batch: TemporalData) -> "_BatchInteractions":
        src, dst, t, msg = batch.src, batch.dst, batch.t, self.messages(batch)
        order = self._canonical_order(src, dst, t, msg if getattr(batch, "msg", None) is not None else None)
        src, dst, t, msg = src[order], dst[order], t[order], msg[order]
        # each event is an interaction of its destination (with the source) and of its source, in event order
        occurrences = Occurrences(torch.stack([dst, src], 1).view(-1), t.repeat_interleave(2), times_sorted=True)
        return _BatchInteractions(occurrences, src, dst, t, msg)

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
