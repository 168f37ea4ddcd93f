"""The configurations of the neural models: what builds one, what its checkpoint saves.

A model is built from its config (``TGN(TGNConfig(num_nodes, memory_dim=64))``), keeps it
as ``model.config`` and its checkpoint saves ``dataclasses.asdict(model.config)``, from which
:func:`tgeval.models.registry.build` rebuilds it. Fields marked :func:`from_data`
(``num_nodes``, ``msg_dim``, ``node_dim``) come from the data; the others are the model's
hyperparameters, and the command line offers each as a flag (``memory_dim`` ->
``--memory-dim``). This module imports no torch, so that the command line can read the
fields before importing it.

The defaults are PyG's TGN recipe (``examples/tgn.py``): widths 100, 10 neighbours,
dropout 0.1; GraphMixer's are its paper's (20 neighbours, 2 mixer blocks).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

from tgeval.errors import ModelConfigError

__all__ = ["ModelConfig", "TGNConfig", "DyRepConfig", "GraphMixerConfig", "DATA_FIELDS", "from_data", "hyperparameters",
           "check_config", "MAX_WIDTH", "MAX_NEIGHBORS", "MAX_LAYERS", "MAX_PARAMETERS"]

#: most a width hyperparameter (``memory_dim``, ``time_dim``, ``embedding_dim``, ``hidden_dim``)
#: may be: 40x the recipes' 100
MAX_WIDTH = 4096
#: most recent interactions per node (``num_neighbors``)
MAX_NEIGHBORS = 1024
#: most mixer blocks (``num_layers``)
MAX_LAYERS = 64
#: most trained parameters of a model (2^30: 4 GiB of float32, 16 GiB with gradients and Adam's moments)
MAX_PARAMETERS = 2**30
_BOUNDS = {"num_neighbors": MAX_NEIGHBORS, "num_layers": MAX_LAYERS,
           **{name: MAX_WIDTH for name in ("memory_dim", "time_dim", "embedding_dim", "hidden_dim")}}


def from_data(*default: Any) -> Any:
    """A field whose value comes from the data, not from the user (no command-line flag)."""
    return dataclasses.field(metadata={"from_data": True}, **({"default": default[0]} if default else {}))


#: the fields every config has, filled from the data
DATA_FIELDS = ("num_nodes", "msg_dim")


def hyperparameters(config: type) -> dict[str, tuple[type, Any]]:
    """``{name: (type, default)}`` of the fields of the config class ``config`` that a user sets:
    not ``num_nodes`` or ``msg_dim``, and not marked :func:`from_data`."""
    hints = get_type_hints(config)
    return {f.name: (hints[f.name], f.default) for f in dataclasses.fields(config)
            if f.name not in DATA_FIELDS and not f.metadata.get("from_data")}


def check_config(config: Any) -> None:
    """Raise :class:`~tgeval.errors.ModelConfigError` for a config field out of range: widths and counts >= 1
    (``node_dim`` >= 0) and at most their bound (:data:`MAX_WIDTH`, :data:`MAX_NEIGHBORS`, :data:`MAX_LAYERS`),
    ``dropout`` in [0, 1), a ``Literal`` field one of its values; then a model of more than
    :data:`MAX_PARAMETERS` parameters (``config.parameter_count()``, where the class has it)."""
    name = type(config).__name__
    hints = get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if get_origin(hints[f.name]) is Literal:
            if value not in get_args(hints[f.name]):
                raise ModelConfigError(f"{type(config).__name__}.{f.name} must be one of "
                                       f"{list(get_args(hints[f.name]))}, got {value!r}.")
            continue
        if hints[f.name] is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ModelConfigError(f"{type(config).__name__}.{f.name} must be an int, got {value!r}.")
        low = 0 if f.name == "node_dim" else 1
        if f.name == "dropout" and not 0.0 <= value < 1.0:
            raise ModelConfigError(f"{type(config).__name__}.dropout must be in [0, 1), got {value!r}.")
        if hints[f.name] is int and value < low:
            raise ModelConfigError(f"{type(config).__name__}.{f.name} must be >= {low}, got {value}.")
        if value > _BOUNDS.get(f.name, value):
            raise ModelConfigError(f"{name}.{f.name} must be <= {_BOUNDS[f.name]:,}, got {value:,}: pass a smaller "
                                   f"{f.name} (the recipes use {getattr(type(config), f.name)}).")
    count = getattr(config, "parameter_count", lambda: None)()
    if count is not None and count > MAX_PARAMETERS:
        widths = ", ".join(f"{key}={getattr(config, key)}" for key in _BOUNDS if hasattr(config, key))
        raise ModelConfigError(f"{name} with {widths} has {count:,} parameters, more than {MAX_PARAMETERS:,} (2^30: 4 "
                               f"GiB of float32, 16 GiB to train with Adam): pass smaller widths.")


def _linear(inputs: int, outputs: int, bias: bool = True) -> int:
    """Parameters of ``nn.Linear(inputs, outputs, bias)``."""
    return (inputs + bias) * outputs


def _attention(in_dim: int, out_dim: int, edge_dim: int) -> int:
    """Parameters of :class:`~tgeval.models.layers.GraphAttentionEmbedding` (two-head ``TransformerConv``: key,
    query, value and skip maps, an edge map without bias), its time encoder not counted."""
    return 4 * _linear(in_dim, out_dim) + _linear(edge_dim, out_dim, bias=False)


def _decoder(dim: int) -> int:
    """Parameters of :class:`~tgeval.models.layers.LinkDecoder`."""
    return 2 * _linear(dim, dim) + _linear(dim, 1)


@dataclass(frozen=True)
class ModelConfig:
    """What every neural model's config holds, both from the data.

    Attributes:
        num_nodes: exclusive upper bound of node ids.
        msg_dim: event message width (1, a zero column, for data without features).
    """

    num_nodes: int = from_data()
    msg_dim: int = from_data(1)

    def __post_init__(self) -> None:
        check_config(self)


@dataclass(frozen=True)
class TGNConfig(ModelConfig):
    """TGN (:class:`tgeval.models.TGN`); with ``num_nodes`` and ``msg_dim`` (:class:`ModelConfig`).

    Attributes:
        memory_dim, time_dim, embedding_dim: widths of memory, time encoding and embedding.
        num_neighbors: recent interactions attended to per node.
        dropout: attention dropout.
        time_gap: what a neighbour's time encodes: ``"latest"``, the neighbour's last update
            minus the interaction's time (PyG's recipe; an embedding per node and batch: exact,
            cheap all-entity ranking), or ``"query"``, the scored event's time minus the
            interaction's, as DyGLib's TGN (an embedding per scored pair: sampled metrics and
            training only; with ``history="neighbors"`` the batch's earlier events are neighbours).
        time_origin: where the memory's clock starts: ``"start"``, at the earliest time of the
            first events after a reset (recorded in the state), so scores do not change when every
            timestamp is shifted, or ``"zero"``, at time 0 (PyG's recipe: a node's first message
            encodes its absolute time).
    """

    memory_dim: int = 100
    time_dim: int = 100
    embedding_dim: int = 100
    num_neighbors: int = 10
    dropout: float = 0.1
    time_gap: Literal["latest", "query"] = "latest"
    time_origin: Literal["start", "zero"] = "start"

    def parameter_count(self) -> int:
        """Trained parameters of the TGN: time encoder, GRU cell over messages ``[s_u | s_v | x | phi]``,
        attention, decoder."""
        d, message = self.memory_dim, 2 * self.memory_dim + self.msg_dim + self.time_dim
        return (_linear(1, self.time_dim) + 3 * (_linear(message, d) + _linear(d, d))
                + _attention(d, self.embedding_dim, self.msg_dim + self.time_dim) + _decoder(self.embedding_dim))


@dataclass(frozen=True)
class DyRepConfig(ModelConfig):
    """DyRep (:class:`tgeval.models.DyRep`); with ``num_nodes`` and ``msg_dim`` (:class:`ModelConfig`).

    Attributes:
        memory_dim: memory (= embedding) width; even (two attention heads).
        time_dim: time encoding width.
        num_neighbors: recent interactions attended to per partner.
        dropout: attention dropout.
        partner_embedding: when a message's attention embedding of the partner is computed:
            ``"applied"``, when the message is applied (inside scoring, from the partner's state
            then: the attention is trained through the scores), or ``"event"``, when the event
            is observed, from the partner's state before the event's batch, and stored with the
            message, as DyGLib's DyRep (no gradient reaches the attention then).
        time_origin: where the memory's clock starts, as :attr:`TGNConfig.time_origin`.
    """

    memory_dim: int = 100
    time_dim: int = 100
    num_neighbors: int = 10
    dropout: float = 0.1
    partner_embedding: Literal["applied", "event"] = "applied"
    time_origin: Literal["start", "zero"] = "start"

    def parameter_count(self) -> int:
        """Trained parameters of the DyRep: time encoder, RNN cell, partner attention, decoder."""
        d, message = self.memory_dim, 2 * self.memory_dim + self.msg_dim + self.time_dim
        return (_linear(1, self.time_dim) + _linear(message, d) + _linear(d, d)
                + _attention(d, d, self.msg_dim + self.time_dim) + _decoder(d))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.memory_dim % 2:
            raise ModelConfigError(f"DyRepConfig.memory_dim must be even (two attention heads), got {self.memory_dim}.")


@dataclass(frozen=True)
class GraphMixerConfig(ModelConfig):
    """GraphMixer (:class:`tgeval.models.GraphMixer`); with ``num_nodes`` and ``msg_dim``
    (:class:`ModelConfig`).

    Attributes:
        node_dim: width of the static node features (0: none); set from the features given
            to the model.
        num_neighbors: ``K``, recent interactions per node (the tokens).
        time_dim: width of the fixed time encoding.
        hidden_dim: token width inside the mixer.
        embedding_dim: node embedding width.
        num_layers: mixer blocks.
        dropout: dropout inside the mixer.
        time_gap: what a token's time encodes: ``"latest"``, the gap to the node's latest
            interaction (an embedding per node and batch: exact, cheap all-entity ranking), or
            ``"query"``, the gap to the time of the scored event, as DyGLib's GraphMixer (an
            embedding per scored pair: sampled metrics and training only).
    """

    node_dim: int = from_data(0)
    num_neighbors: int = 20
    time_dim: int = 100
    hidden_dim: int = 100
    embedding_dim: int = 100
    num_layers: int = 2
    dropout: float = 0.1
    time_gap: Literal["latest", "query"] = "latest"

    def parameter_count(self) -> int:
        """Trained parameters of the GraphMixer: token map, mixer blocks (two layer norms, token MLP
        ``K -> K // 2 -> K``, channel MLP ``H -> 4H -> H``), layer norm, output map, decoder."""
        h, k = self.hidden_dim, self.num_neighbors
        block = 4 * h + _linear(k, max(1, k // 2)) + _linear(max(1, k // 2), k) + _linear(h, 4 * h) + _linear(4 * h, h)
        return (_linear(self.msg_dim + self.time_dim, h) + self.num_layers * block + 2 * h
                + _linear(h + self.node_dim, self.embedding_dim) + _decoder(self.embedding_dim))
