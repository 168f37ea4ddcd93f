"""A model of one file and one ``register`` line, registered for the whole test session.

That line alone puts it among ``tgeval train``'s ``--model`` choices, with a flag per config
field, makes it checkpointable, and runs every contract test parametrised from the registry
(pure scoring, snapshots, leak properties, devices) on it: what a user's model gets.
"""

from dataclasses import dataclass

from torch import nn

from tgeval.models import ModelConfig, registry
from tgeval.models.neighbors import NeighborBuffer
from tgeval.models.neural import NeuralLinkModel


@dataclass(frozen=True)
class ToyConfig(ModelConfig):
    embedding_dim: int = 16
    num_neighbors: int = 5


class Toy(NeuralLinkModel):
    """``z_u = e_u + mean over u's recent interactions (v, x) of (e_v + W x)``, learned ``e``."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__(config, config.embedding_dim)
        self.nodes = nn.Embedding(config.num_nodes, config.embedding_dim)
        self.message = nn.Linear(config.msg_dim, config.embedding_dim)
        self.neighbors = NeighborBuffer(config.num_nodes, config.num_neighbors, config.msg_dim)

    @property
    def stateful_parts(self):
        return {"neighbors": self.neighbors}

    def embed_rows(self, rows, sizes):
        neighbor, _, msg, valid = self.neighbors.recent(rows)
        weight = valid.to(msg.dtype)[..., None]
        around = ((self.nodes(neighbor) + self.message(msg)) * weight).sum(1) / weight.sum(1).clamp(min=1)
        return self.nodes(rows) + around

    def ingest(self, src, dst, t, msg, touched=None):
        self.neighbors.insert(src, dst, t, msg, nodes=self._batch_nodes(src, dst, touched)[0])

    def changed(self, touched):
        return touched  # an embedding reads only the node's own slots (and the parameters)


registry.register("toy", Toy, config=ToyConfig, test_config=dict(embedding_dim=6, num_neighbors=2))
