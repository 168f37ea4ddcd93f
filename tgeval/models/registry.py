"""Models by name: the one list the command line, the checkpoints and the contract tests read.

A model registers once::

    register("tgn", "tgeval.models.tgn:TGN", config=TGNConfig,
             test_config=dict(memory_dim=8, time_dim=4, embedding_dim=8, num_neighbors=3))

* A **neural** model (one with a ``config`` dataclass, :mod:`tgeval.models.config`) is built
  as ``cls(config)`` and keeps ``model.config``; checkpoints save its fields and rebuild it
  with :func:`build`. The command line offers it to ``tgeval train --model`` and each of its
  config's hyperparameters as a flag; the contract tests (pure scoring, snapshots, leak
  properties, devices) run on it with ``test_config``.
* A **heuristic** (no ``config``) is built as ``cls(num_nodes, **options)`` with the options
  its constructor takes; ``tgeval evaluate --model`` offers it, and ``trainable=True`` offers
  it to ``tgeval train`` too.

``cls`` may be given as ``"module:Class"``, imported on first use: this module imports no
torch, so ``tgeval --help`` lists the models at once. Models of other packages join through
the entry-point group ``tgeval.models``: each entry point names a module that registers its
models, imported when the registry is first read.

Example:
    >>> entry("tgn").kind, entry("edgebank").kind
    ('neural', 'heuristic')
    >>> [name for name in names("neural") if name in ("dyrep", "graphmixer", "tgn")]  # and any registered later
    ['dyrep', 'graphmixer', 'tgn']
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional, Union

from tgeval.errors import ModelConfigError
from tgeval.models.config import DyRepConfig, GraphMixerConfig, TGNConfig, hyperparameters
from tgeval.core.registry import Entry, Option, Registry, Row

__all__ = ["ModelEntry", "register", "unregister", "names", "entry", "name_of", "build", "options", "describe",
           "Kind"]

Kind = Literal["neural", "heuristic"]


@dataclass(frozen=True)
class ModelEntry(Entry):
    """A registered model (:class:`~tgeval.core.registry.Entry`: ``name``, ``target``, ``help``).

    Attributes:
        config: the config dataclass of a neural model; ``None`` for a heuristic.
        test_config: hyperparameters that keep it small in tests.
        trainable: ``tgeval train`` offers it (every neural model; heuristics that say so).
    """

    config: Optional[type] = None
    test_config: Mapping[str, Any] = field(default_factory=dict)
    trainable: bool = False

    @property
    def kind(self) -> Kind:
        return "heuristic" if self.config is None else "neural"

    def model_class(self) -> type:
        """The model class (imported now when registered as ``"module:Class"``)."""
        return self.load()  # type: ignore[no-any-return]

    @property
    def parameters(self) -> tuple[Option, ...]:
        """What :func:`build` takes: the config's fields (a neural model), else the constructor's keywords
        besides ``num_nodes``."""
        if self.config is None:
            return super().parameters
        return tuple(Option(f.name, f.type if isinstance(f.type, str) else inspect.formatannotation(f.type),
                            None if f.default is dataclasses.MISSING else f.default, f.default is dataclasses.MISSING)
                     for f in dataclasses.fields(self.config))

    @property
    def open(self) -> bool:
        return self.config is None and super().open

    def hyperparameters(self) -> dict[str, tuple[type, Any]]:
        """``{name: (type, default)}`` of the config fields a user sets (none for a heuristic)."""
        return {} if self.config is None else hyperparameters(self.config)


_REGISTRY: Registry[ModelEntry] = Registry(
    "model", ModelConfigError, entry_points="tgeval.models",
    unknown="unknown model {name}; registered: {names}. Register it with tgeval.models.registry.register(name, cls, "
            "config=...).")


def register(name: str, cls: Union[str, type], *, config: Optional[type] = None,
             test_config: Optional[Mapping[str, Any]] = None, help: str = "", trainable: Optional[bool] = None,
             overwrite: bool = False) -> None:
    """Make the model class ``cls`` available as ``name``.

    Args:
        name: registry name (``--model NAME``, checkpoints).
        cls: the class, or ``"module:Class"`` to import on first use.
        config: the config dataclass ``cls`` is built from (neural models); its fields
            marked :func:`~tgeval.models.config.from_data` are filled from the data.
        test_config: small hyperparameters for the contract tests.
        help: one line for the command line.
        trainable: offered to ``tgeval train`` (default: whether it has a ``config``).
        overwrite: replace an existing entry instead of raising ``ValueError``.
    """
    if config is not None and not (dataclasses.is_dataclass(config) and {"num_nodes", "msg_dim"} <= {
            f.name for f in dataclasses.fields(config)}):
        raise TypeError(f"config of model {name!r} must be a dataclass with the fields num_nodes and msg_dim (see "
                        f"tgeval.models.config), got {config!r}.")
    _REGISTRY.add(ModelEntry(name, cls, help, ("num_nodes",), config, dict(test_config or {}),
                             config is not None if trainable is None else trainable), overwrite=overwrite)


def unregister(name: str) -> None:
    """Remove the model registered as ``name`` (:class:`~tgeval.errors.ModelConfigError` when there is none)."""
    _REGISTRY.remove(name)


def names(kind: Optional[Kind] = None, *, trainable: Optional[bool] = None) -> tuple[str, ...]:
    """Registered names, sorted; only those of ``kind`` / ``trainable`` when given."""
    return _REGISTRY.names(lambda e: (kind is None or e.kind == kind)
                           and (trainable is None or e.trainable == trainable))


def entry(name: str) -> ModelEntry:
    """The entry registered as ``name`` (:class:`~tgeval.errors.ModelConfigError` listing the names when there is
    none)."""
    return _REGISTRY.entry(name)


def describe(kind: Optional[Kind] = None) -> list[Row]:
    """``(name, help, options)`` of each model (of ``kind`` when given), sorted by name: what the docs list."""
    return _REGISTRY.describe(lambda e: kind is None or e.kind == kind)


def name_of(model: Any) -> str:
    """Registry name of ``model``'s exact class (:class:`~tgeval.errors.ModelConfigError` when it is not
    registered)."""
    for name, e in _REGISTRY.entries.items():
        if (e.target == f"{type(model).__module__}:{type(model).__qualname__}"
                if isinstance(e.target, str) else type(model) is e.target):
            return name
    raise ModelConfigError(f"{type(model).__name__} is not a registered model. Register it with "
                           f"tgeval.models.registry.register(name, cls, config=...); registered: {', '.join(names())}.")


def options(name: str) -> tuple[str, ...]:
    """The options :func:`build` passes on for ``name``: its config's fields (neural models), else its
    constructor's parameters besides ``num_nodes``."""
    return entry(name).options


def build(name: str, **options: Any) -> Any:
    """A new model registered as ``name``.

    A neural model is ``cls(config(**options))``: ``options`` are its config's fields (at
    least ``num_nodes``), an unknown one raises :class:`~tgeval.errors.ModelConfigError` listing them. A heuristic is
    ``cls(num_nodes, **the options its constructor takes)``; the others are ignored, so one
    set of command-line options builds any heuristic.
    """
    e = entry(name)
    cls = e.model_class()
    if e.config is not None:
        fields = set(e.options)
        unknown = set(options) - fields
        if unknown:
            raise ModelConfigError(f"model {name!r} takes no option {sorted(unknown)}; its config "
                                   f"{e.config.__name__} has {', '.join(sorted(fields))}.")
        return cls(e.config(**options))
    accepted = {"num_nodes", *e.options}
    return cls(**{key: value for key, value in options.items() if key in accepted})


register("tgn", "tgeval.models.tgn:TGN", config=TGNConfig,
         test_config=dict(memory_dim=8, time_dim=4, embedding_dim=8, num_neighbors=3),
         help="TGN: GRU memory, graph attention over recent neighbours")
register("dyrep", "tgeval.models.dyrep:DyRep", config=DyRepConfig,
         test_config=dict(memory_dim=8, time_dim=4, num_neighbors=3),  # memory even: two heads
         help="DyRep: RNN memory updated from neighbourhood-attention messages")
register("graphmixer", "tgeval.models.graphmixer:GraphMixer", config=GraphMixerConfig,
         test_config=dict(num_neighbors=3, time_dim=4, hidden_dim=8, embedding_dim=8, num_layers=1),
         help="GraphMixer: MLP-Mixer over recent interactions, no memory")
register("edgebank", "tgeval.models.heuristics:EdgeBank", help="1 if the pair was seen before")
register("edgebank-window", "tgeval.models.heuristics:EdgeBank",
         help="1 if the pair was seen within the window (--window)")
register("node-memory", "tgeval.models.heuristics:NodeMemory", help="1 if both endpoints took part in an earlier event")
register("pa", "tgeval.models.heuristics:PreferentialAttachment", help="product of the endpoints' degrees")
register("popularity", "tgeval.models.heuristics:Popularity", help="the destination's (decayed) count of past events")
register("recency-local", "tgeval.models.heuristics:LocalRecency",
         help="-(time since the pair was last seen), -inf if never (or not within --window)")
register("recency-global", "tgeval.models.heuristics:GlobalRecency",
         help="-(time since the destination was last a destination), -inf if never (or not within --window)")
register("popularity-local", "tgeval.models.heuristics:LocalPopularity",
         help="the pair's count of past events (within --window, or decayed with a half-life)")
register("popularity-global", "tgeval.models.heuristics:GlobalPopularity",
         help="the destination's count of past events (within --window, or decayed with a half-life)")
register("local-global", "tgeval.models.lexicographic:LocalGlobal",
         help="the pair's last time, ties broken by the destination's last time (Cornell et al.'s LocalGlobal)")
register("recency-popularity-local", "tgeval.models.lexicographic:LocalRecencyPopularity",
         help="the pair's last time, ties broken by the pair's count of past events")
register("recency-popularity-global", "tgeval.models.lexicographic:GlobalRecencyPopularity",
         help="the destination's last time, ties broken by its count of past events")
register("poptrack", "tgeval.models.poptrack:PopTrack",
         help="PopTrack: the destination's past events, decayed by 0.36 per tick of 200 events (--clock events:TICK)")
register("membership", "tgeval.models.heuristics:PairMembership", trainable=True,
         help="s = b + beta * 1{pair seen before} (trainable)")
