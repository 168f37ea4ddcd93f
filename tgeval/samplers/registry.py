"""Samplers by name, from Python (:func:`get`) and from CLI strings (:func:`from_spec`).

The registered names, their help and options are :func:`describe`'s rows (:func:`names`
lists them). A CLI spec is ``NAME[:key=value,...]``; values ``true``/``false``/``yes``/``no``
are booleans, ``none`` is ``None``, numbers are numbers, anything else a string. Options are
the keyword arguments of the sampler's constructor (:mod:`tgeval.core.registry`); what comes from
the data (catalog, ``num_nodes``, the training graph, the segment) is filled in from a
:class:`Context`, as each entry declares. A mixture spec names its components with their
proportions: ``mixture:historical=0.5,uniform=0.5`` (components take their default options).

Example:
    >>> name, options = parse_spec("historical:replace=true,fallback=error")
    >>> name, options
    ('historical', {'replace': True, 'fallback': 'error'})
    >>> row = next(row for row in describe() if row.name == "source_history")
    >>> row.options
    "replace: bool = False, directed: bool = True, fallback: str = 'uniform', short: str = 'fill'"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.split import Split
from tgeval.errors import SamplerError
from tgeval.core.options import parse_value, typed_options
from tgeval.core.registry import Entry, Registry, Row, signature_options
from tgeval.samplers.base import NegativeSampler
from tgeval.samplers.degree import DegreeSampler, TimeDegreeSampler
from tgeval.samplers.fixed import FixedNegativeSampler, read_tgb_negatives
from tgeval.samplers.historical import HistoricalSampler
from tgeval.samplers.inductive import InductiveSampler
from tgeval.samplers.lifespans import factories
from tgeval.samplers.mixture import MixtureSampler
from tgeval.samplers.popularity import PopularitySampler
from tgeval.samplers.source_history import SourceHistorySampler
from tgeval.samplers.time_available import TimeAvailableSampler
from tgeval.samplers.uniform import UniformSampler

__all__ = ["register", "get", "names", "describe", "parse_spec", "from_spec", "Context", "SamplerEntry",
           "CONTEXT_KEYS"]

Factory = Callable[..., NegativeSampler]


@dataclass(frozen=True)
class Context:
    """What :func:`from_spec` knows: the whole stream, its split, the catalog, the evaluated segment;
    its properties are what an entry's ``context`` may name."""

    data: TemporalData
    split: Split
    catalog: Catalog
    segment: Optional[str] = None

    @property
    def num_nodes(self) -> int:
        """The catalog's ``num_nodes``."""
        return self.catalog.num_nodes

    @property
    def train_end(self) -> int:
        """End of the training segment (an event index)."""
        return self.split.train.end

    @property
    def training_graph(self) -> TemporalData:
        """The training events, ``data[:train_end]``."""
        return self.data[: self.train_end]

    @property
    def segment_start(self) -> Optional[int]:
        """Start of the evaluated segment (``None`` without one)."""
        return None if self.segment is None else self.split[self.segment].start

    @property
    def segment_end(self) -> Optional[int]:
        """End of the evaluated segment (``None`` without one)."""
        return None if self.segment is None else self.split[self.segment].end

    @property
    def segment_events(self) -> TemporalData:
        """The events of the evaluated segment (default ``"test"``)."""
        return self.split[self.segment or "test"].select(self.data)


#: context keywords every sampler accepts through :func:`get` (each takes what it needs)
CONTEXT_KEYS = ("catalog", "num_nodes", "data", "split", "segment")


@dataclass(frozen=True)
class SamplerEntry(Entry):
    """A registered sampler (:class:`~tgeval.core.registry.Entry`) and what it takes from the data.

    Attributes:
        context: ``{keyword: Context attribute}`` filled in from a :class:`Context`, e.g.
            ``{"graph": "training_graph"}``; never user options.
    """

    context: Mapping[str, str] = field(default_factory=dict)

    def filled(self, context: Context) -> dict[str, Any]:
        """The keyword arguments this entry takes from ``context``."""
        return {key: getattr(context, attribute) for key, attribute in self.context.items()}


_REGISTRY: Registry[SamplerEntry] = Registry("sampler", SamplerError)


def register(name: str, factory: Factory, *, context: Optional[Mapping[str, str]] = None, help: str = "",
             overwrite: bool = False) -> None:
    """Make ``factory`` available as ``name``.

    Args:
        name: registry name (used in CLI specs).
        factory: called with keyword options, returns a :class:`NegativeSampler`.
        context: ``{keyword: Context attribute}`` that :func:`from_spec` (and :func:`get`, given
            ``data``, ``split`` and ``catalog``) fills in, e.g. ``{"num_nodes": "num_nodes"}``.
        help: one line for the listing.
        overwrite: replace an existing entry instead of raising ``ValueError``.
    """
    context = dict(context or {})
    for attribute in context.values():
        if not isinstance(getattr(Context, attribute, None), property) and attribute not in Context.__annotations__:
            raise ValueError(f"context of sampler {name!r} names {attribute!r}, not an attribute of Context.")
    skip = tuple(dict.fromkeys((*CONTEXT_KEYS, *context)))
    _REGISTRY.add(SamplerEntry(name, factory, help, skip, context), overwrite=overwrite)


def names() -> tuple[str, ...]:
    """Registered names, sorted."""
    return _REGISTRY.names()


def describe() -> list[Row]:
    """``(name, help, options)`` of each sampler, sorted by name: what the docs list (the options
    a spec may set; the context is filled from the data)."""
    return _REGISTRY.describe()


def get(name: str, *, catalog: Optional[Catalog] = None, num_nodes: Optional[int] = None,
        data: Optional[TemporalData] = None, split: Optional[Split] = None, segment: Optional[str] = None,
        **options: Any) -> NegativeSampler:
    """Build the sampler registered as ``name``.

    The context keywords (``catalog``, ``num_nodes``, ``data``, ``split``, ``segment``) are the
    same for every sampler: each takes those it needs and ignores the others, so swapping
    samplers by name changes one string. With ``data``, ``split`` and ``catalog`` given, what a
    sampler derives from them (the training graph of ``degree``, the segments of
    ``inductive``, ...) is filled in as :func:`from_spec` does. ``options`` are the sampler's
    own keywords (e.g. ``replace=True``, or what its context fills, e.g. ``graph=``); an
    unknown one raises :class:`~tgeval.errors.SamplerError` listing them.

    Example:
        >>> import torch
        >>> from tgeval.data.catalog import Catalog
        >>> catalog = Catalog("custom", torch.arange(5), None, 5)
        >>> [get(n, catalog=catalog, num_nodes=5).name for n in ("uniform", "historical")]
        ['uniform', 'historical']
    """
    entry = _REGISTRY.entry(name)
    context: dict[str, Any] = {key: value for key, value in (("catalog", catalog), ("num_nodes", num_nodes),
                                                             ("data", data), ("split", split), ("segment", segment))
                               if value is not None}
    if data is not None and split is not None and catalog is not None:
        context = {**entry.filled(Context(data, split, catalog, segment)), **context}
    _REGISTRY.check_options(name, set(options) - set(entry.context))
    target = entry.load()
    keywords, takes_any = signature_options(target)
    if not takes_any:
        context = {key: value for key, value in context.items() if key in {k.name for k in keywords}}
    return target(**{**context, **options})


def parse_spec(spec: str) -> tuple[str, dict]:
    """``"NAME[:key=value,...]"`` -> ``(name, options)`` (values typed as in the module docstring)."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SamplerError(f"sampler option {item!r} in {spec!r} is not key=value, e.g. "
                               f"'historical:replace=true'.")
        if not value.strip():
            raise SamplerError(f"sampler option {key.strip()!r} in {spec!r} has no value: write "
                               f"{key.strip()}=VALUE, e.g. 'tgb:path=FILE' or 'historical:replace=true'.")
        options[key.strip()] = parse_value(value)
    return name.strip(), options


def from_spec(spec: str, *, data: TemporalData, split: Split, catalog: Catalog,
              segment: Optional[str] = None) -> NegativeSampler:
    """Build a sampler from a CLI spec, filling in what comes from the data.

    Args:
        spec: ``"NAME[:key=value,...]"``, e.g. ``"historical:fallback=error"`` or
            ``"mixture:historical=0.5,uniform=0.5"``.
        data: the whole time-sorted stream.
        split: its chronological split (training graph for ``degree``, segments for ``inductive``).
        catalog: the destination catalog (uniform candidates and every fallback).
        segment: the evaluated segment (``"val"`` / ``"test"``) for ``inductive``; default:
            every event after training.

    Raises:
        SamplerError: unknown name, or an option the sampler does not take (the message lists them).
    """
    name, options = parse_spec(spec)
    if name == "mixture":
        if not options:
            raise SamplerError("a mixture spec lists components with proportions, e.g. "
                               "'mixture:historical=0.5,uniform=0.5'.")
        for part, weight in options.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise SamplerError(f"mixture weight {part}={weight} in {spec!r} is not a number: a mixture spec is "
                                   f"mixture:NAME=WEIGHT,NAME=WEIGHT,... with finite non-negative weights, e.g. "
                                   f"'mixture:historical=0.5,uniform=0.5'.")
        components = [from_spec(part, data=data, split=split, catalog=catalog, segment=segment) for part in options]
        return MixtureSampler(components, [float(p) for p in options.values()])
    entry = _REGISTRY.entry(name)
    _REGISTRY.check_options(name, options, where=f"in {spec!r}")
    target = entry.load()
    typed = typed_options(target, options, f"sampler {name!r} option", spec)
    return target(**{**entry.filled(Context(data, split, catalog, segment)), **typed})


_GRAPH = {"num_nodes": "num_nodes", "catalog": "catalog"}
_STREAM = {"data": "data", **_GRAPH}
_CLASSES = {"H": "historical", "O": "overlap", "I": "inductive"}
_REPLACED = {"S": "sources", "D": "destinations", "E": "pairs"}

register("uniform", UniformSampler, context={"catalog": "catalog"},
         help="uniform over the catalog (the default)")
register("historical", HistoricalSampler, context=_GRAPH,
         help="DGB historical: destinations the source met before the batch, minus its batch destinations")
register("source_history", SourceHistorySampler, context=_GRAPH,
         help="destinations the source met before, minus the simultaneous positives (a diagnostic)")
register("inductive", InductiveSampler,
         help="DGB inductive: destinations of segment pairs never seen in training (whole stream)",
         context={**_STREAM, "train_end": "train_end", "start": "segment_start", "end": "segment_end"})
register("time_available", TimeAvailableSampler, context={"data": "data", "num_nodes": "num_nodes",
                                                          "fallback": "catalog"},
         help="uniform over the destinations that appeared before the event's time")
register("popularity", PopularitySampler, context=_GRAPH,
         help="destinations by their (decayed) count of past events, to a power")
register("degree", DegreeSampler, context={**_GRAPH, "graph": "training_graph"},
         help="destinations by their degree in the training graph")
register("degree_time", TimeDegreeSampler, context=_GRAPH,
         help="destinations by their degree in the history observed so far")
register("mixture", MixtureSampler, help="components in proportions: mixture:historical=0.5,uniform=0.5")
register("fixed", FixedNegativeSampler.from_file, context={"data": "data", "num_nodes": "num_nodes"},
         help="negatives stored in a file: fixed:path=negatives.pt")
register("tgb", read_tgb_negatives, context={"data": "segment_events", "num_nodes": "num_nodes"},
         help="a Temporal Graph Benchmark negatives file: tgb:path=..._test_ns.pkl")
for _name, _factory in factories().items():
    register(_name, _factory, context=_STREAM,
             help=f"Birth-Death: {_CLASSES[_name[0]]} {_REPLACED[_name[1]]} (whole stream: evaluation only)")
