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
    >>> names("neural")
    ('dyrep', 'graphmixer', 'tgn')
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Union

from tgeval.models.config import DyRepConfig, GraphMixerConfig, TGNConfig, hyperparameters

__all__ = ["ModelEntry", "register", "unregister", "names", "entry", "name_of", "build", "options", "Kind"]

Kind = Literal["neural", "heuristic"]


@dataclass(frozen=True)
class ModelEntry:
    """A registered model.

    Attributes:
        name: its registry name.
        target: the class, or ``"module:Class"`` (see :meth:`model_class`).
        config: the config dataclass of a neural model; ``None`` for a heuristic.
        test_config: hyperparameters that keep it small in tests.
        help: one line for the command line.
        trainable: ``tgeval train`` offers it (every neural model; heuristics that say so).
    """

    name: str
    target: Union[str, type]
    config: Optional[type]
    test_config: Mapping[str, Any]
    help: str
    trainable: bool

    @property
    def kind(self) -> Kind:
        return "heuristic" if self.config is None else "neural"

    def model_class(self) -> type:
        """The model class (imported now when registered as ``"module:Class"``)."""
        if not isinstance(self.target, str):
            return self.target
        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def hyperparameters(self) -> dict[str, tuple[type, Any]]:
        """``{name: (type, default)}`` of the config fields a user sets (none for a heuristic)."""
        return {} if self.config is None else hyperparameters(self.config)


_REGISTRY: dict[str, ModelEntry] = {}
_PLUGIN_GROUP = "tgeval.models"
_plugins_loaded = False


def _registered() -> dict[str, ModelEntry]:
    """The registry, after importing the modules of the ``tgeval.models`` entry points (once)."""
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        for point in importlib.metadata.entry_points(group=_PLUGIN_GROUP):
            try:
                point.load()
            except Exception as error:
                raise ImportError(f"the {_PLUGIN_GROUP} entry point {point.name!r} = {point.value!r} failed to "
                                  f"import ({type(error).__name__}: {error}); fix or uninstall the package that "
                                  f"declares it.") from error
    return _REGISTRY


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
    if not overwrite and name in _REGISTRY:
        raise ValueError(f"a model named {name!r} is already registered; pass overwrite=True to replace it.")
    if config is not None and not (dataclasses.is_dataclass(config) and {"num_nodes", "msg_dim"} <= {
            f.name for f in dataclasses.fields(config)}):
        raise TypeError(f"config of model {name!r} must be a dataclass with the fields num_nodes and msg_dim (see "
                        f"tgeval.models.config), got {config!r}.")
    _REGISTRY[name] = ModelEntry(name, cls, config, dict(test_config or {}), help,
                                 config is not None if trainable is None else trainable)


def unregister(name: str) -> None:
    """Remove the model registered as ``name`` (``ValueError`` when there is none)."""
    entry(name)
    del _REGISTRY[name]


def names(kind: Optional[Kind] = None, *, trainable: Optional[bool] = None) -> tuple[str, ...]:
    """Registered names, sorted; only those of ``kind`` / ``trainable`` when given."""
    return tuple(sorted(name for name, e in _registered().items()
                        if (kind is None or e.kind == kind) and (trainable is None or e.trainable == trainable)))


def entry(name: str) -> ModelEntry:
    """The entry registered as ``name`` (``ValueError`` listing the names when there is none)."""
    if name not in _registered():
        raise ValueError(f"unknown model {name!r}; registered: {', '.join(names())}. Register it with "
                         f"tgeval.models.registry.register(name, cls, config=...).")
    return _REGISTRY[name]


def name_of(model: Any) -> str:
    """Registry name of ``model``'s exact class (``ValueError`` when it is not registered)."""
    for name, e in _registered().items():
        if (e.target == f"{type(model).__module__}:{type(model).__qualname__}"
                if isinstance(e.target, str) else type(model) is e.target):
            return name
    raise ValueError(f"{type(model).__name__} is not a registered model. Register it with "
                     f"tgeval.models.registry.register(name, cls, config=...); registered: {', '.join(names())}.")


def options(name: str) -> tuple[str, ...]:
    """The options :func:`build` passes on for ``name``: its config's fields (neural models), else its
    constructor's parameters besides ``num_nodes``."""
    e = entry(name)
    if e.config is not None:
        return tuple(f.name for f in dataclasses.fields(e.config))
    return tuple(p for p in inspect.signature(e.model_class()).parameters if p != "num_nodes")


def build(name: str, **options: Any) -> Any:
    """A new model registered as ``name``.

    A neural model is ``cls(config(**options))``: ``options`` are its config's fields (at
    least ``num_nodes``), an unknown one raises ``ValueError`` listing them. A heuristic is
    ``cls(num_nodes, **the options its constructor takes)``; the others are ignored, so one
    set of command-line options builds any heuristic.
    """
    e = entry(name)
    cls = e.model_class()
    if e.config is not None:
        fields = {f.name for f in dataclasses.fields(e.config)}
        unknown = set(options) - fields
        if unknown:
            raise ValueError(f"model {name!r} takes no option {sorted(unknown)}; its config "
                             f"{e.config.__name__} has {', '.join(sorted(fields))}.")
        return cls(e.config(**options))
    accepted = set(inspect.signature(cls).parameters)
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
register("membership", "tgeval.models.heuristics:PairMembership", trainable=True,
         help="s = b + beta * 1{pair seen before} (trainable)")
