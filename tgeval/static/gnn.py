r"""Static GNN link-prediction baselines on PyG: GCN or GraphSAGE encoders, dot or MLP decoders.

The encoder maps learnable node embeddings :math:`X \in \mathbb R^{n \times d}` through
``layers`` PyG convolutions (``GCNConv``: :math:`\hat D^{-1/2} (A + I) \hat D^{-1/2} H W`;
``SAGEConv``: mean aggregation) with ReLU between them, on the **training graph** (both
directions). A pair is scored by :math:`z_u^\top z_v` (``"dot"``) or by an MLP of
:math:`z_u \odot z_v` (``"mlp"``); both are symmetric. Training is full-batch binary
cross-entropy: every epoch pairs each training edge with one negative from
:class:`~tgeval.static.negatives.PairSampler` on the training graph (``"uniform"`` or
``"degree"``, seeded per epoch), so test edges are never looked at (they can be drawn as
training negatives, as in any leak-free split). Initialisation is seeded; results on CPU are
reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, SAGEConv

from tgeval.core.choices import GNN_MODELS
from tgeval.errors import ModelConfigError
from tgeval.core.rng import derived_seed
from tgeval.static.graph import StaticGraph
from tgeval.static.negatives import PairSampler, Weighting

__all__ = ["GNN_MODELS", "GNNConfig", "LinkGNN", "TrainedGNN", "train_link_gnn"]



@dataclass(frozen=True)
class GNNConfig:
    """A GNN baseline and its training.

    Attributes:
        encoder: ``"gcn"`` or ``"sage"``; decoder: ``"dot"`` or ``"mlp"``.
        dim: embedding and hidden width; layers: convolutions.
        epochs, lr: full-batch Adam steps and learning rate.
        negatives: training negatives, ``"uniform"`` or ``"degree"`` (degree-corrected).
        seed: initialisation and negatives.
    """

    encoder: Literal["gcn", "sage"] = "gcn"
    decoder: Literal["dot", "mlp"] = "dot"
    dim: int = 64
    layers: int = 2
    epochs: int = 100
    lr: float = 0.01
    negatives: Weighting = "uniform"
    seed: int = 0


class LinkGNN(nn.Module):
    """Encoder and decoder of :class:`GNNConfig` for a graph of ``num_nodes`` nodes."""

    def __init__(self, num_nodes: int, config: GNNConfig) -> None:
        super().__init__()
        if config.encoder not in GNN_MODELS or config.decoder not in ("dot", "mlp"):
            raise ModelConfigError(f"encoder must be one of {GNN_MODELS} and decoder 'dot' or 'mlp', got "
                                   f"{config.encoder!r} and {config.decoder!r}.")
        if config.layers < 1 or config.dim < 1:
            raise ModelConfigError(f"layers and dim must be >= 1, got {config.layers} and {config.dim}.")
        self.config = config
        self.embedding = nn.Embedding(num_nodes, config.dim)
        conv = GCNConv if config.encoder == "gcn" else SAGEConv
        self.convs = nn.ModuleList(conv(config.dim, config.dim) for _ in range(config.layers))
        self.mlp = (nn.Sequential(nn.Linear(config.dim, config.dim), nn.ReLU(), nn.Linear(config.dim, 1))
                    if config.decoder == "mlp" else None)

    def encode(self, edge_index: Tensor) -> Tensor:
        """Node embeddings ``[n, dim]`` from ``edge_index`` ``[2, 2E]`` (both directions)."""
        h = self.embedding.weight
        for i, conv in enumerate(self.convs):
            h = conv(h, edge_index)
            if i < len(self.convs) - 1:
                h = torch.relu(h)
        return h

    def decode(self, z: Tensor, src: Tensor, dst: Tensor) -> Tensor:
        """Logits of the pairs: float ``[B]``."""
        if self.mlp is None:
            return (z[src] * z[dst]).sum(-1)
        return self.mlp(z[src] * z[dst]).squeeze(-1)


@dataclass(frozen=True)
class TrainedGNN:
    """A trained :class:`LinkGNN` with its final embeddings; call it on pairs to score them.

    Attributes:
        model: the module; embeddings: float ``[n, dim]``; losses: float ``[epochs]`` training losses.
    """

    model: LinkGNN
    embeddings: Tensor
    losses: Tensor

    def __call__(self, src: Tensor, dst: Tensor) -> Tensor:
        """Scores (logits) of the pairs: float64 ``[B]``, without gradients."""
        with torch.no_grad():
            return self.model.decode(self.embeddings, src, dst).double()

    def describe(self) -> dict:
        c = self.model.config
        return {"encoder": c.encoder, "decoder": c.decoder, "dim": c.dim, "layers": c.layers, "epochs": c.epochs,
                "lr": c.lr, "training_negatives": c.negatives, "seed": c.seed, "loss": "bce, one negative per edge",
                "final_loss": float(self.losses[-1]) if self.losses.numel() else None}


def train_link_gnn(train: StaticGraph, config: GNNConfig) -> TrainedGNN:
    """Fit a :class:`LinkGNN` on the edges of ``train`` (module docstring) and return its scorer."""
    device = train.device
    with torch.random.fork_rng(devices=[]):  # seeded initialisation; the global generator is left as it was
        torch.manual_seed(config.seed)
        model = LinkGNN(train.num_nodes, config).to(device)
    sampler = PairSampler(train, weighting=config.negatives)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    edge_index = train.to_pyg().edge_index
    pos = train.edge_index
    labels = torch.cat([torch.ones(pos.size(1), device=device), torch.zeros(pos.size(1), device=device)])
    losses = []
    model.train()
    for epoch in range(config.epochs):
        neg = sampler.sample(pos.size(1), seed=derived_seed(config.seed, epoch), replace=True)
        pairs = torch.cat([pos, neg], dim=1)
        optimizer.zero_grad()
        logits = model.decode(model.encode(edge_index), pairs[0], pairs[1])
        loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    model.eval()
    with torch.no_grad():
        z = model.encode(edge_index)
    return TrainedGNN(model, z, torch.stack(losses).cpu() if losses else torch.zeros(0))
