"""Samplers by name, from Python (:func:`get`) and from CLI strings (:func:`from_spec`).

Names: ``uniform``, ``historical``, ``source_history``, ``inductive``, ``time_available``,
``popularity``, ``degree``, ``degree_time``, ``mixture``. A CLI spec is
``NAME[:key=value,...]``; values ``true``/``false``/``yes``/``no`` are booleans, ``none`` is
``None``, numbers are numbers, anything else a string. Options are the keyword arguments of
the sampler's constructor; what comes from the data (catalog, ``num_nodes``, the training
graph, the segment) is filled in by :func:`from_spec`. A mixture spec names its components
with their proportions: ``mixture:historical=0.5,uniform=0.5`` (components take their
default options).

Example:
    >>> name, options = parse_spec("historical:replace=true,fallback=error")
    >>> name, options
    ('historical', {'replace': True, 'fallback': 'error'})
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional

from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.split import Split
from tgeval.options import parse_value, typed_options
from tgeval.samplers.base import NegativeSampler
from tgeval.samplers.degree import DegreeSampler, TimeDegreeSampler
from tgeval.samplers.lifespans import factories as _birth_death_factories
from tgeval.samplers.fixed import FixedNegativeSampler, read_tgb_negatives
from tgeval.samplers.historical import HistoricalSampler
from tgeval.samplers.inductive import InductiveSampler
from tgeval.samplers.mixture import MixtureSampler
from tgeval.samplers.popularity import PopularitySampler
from tgeval.samplers.source_history import SourceHistorySampler
from tgeval.samplers.time_available import TimeAvailableSampler
from tgeval.samplers.uniform import UniformSampler

__all__ = ["register", "get", "names", "parse_spec", "from_spec", "Context", "CONTEXT_KEYS"]

Factory = Callable[..., NegativeSampler]


@dataclass(frozen=True)
class Context:
    """What :func:`from_spec` knows: the whole stream, its split, the catalog, the evaluated segment."""

    data: TemporalData
    split: Split
    catalog: Catalog
    segment: Optional[str] = None


ContextBuilder = Callable[[Context], dict]


@dataclass(frozen=True)
class _Entry:
    factory: Factory
    context: Optional[ContextBuilder]


_REGISTRY: dict[str, _Entry] = {}


def register(name: str, factory: Factory, *, context: Optional[ContextBuilder] = None,
             overwrite: bool = False) -> None:
    """Make ``factory`` available as ``name``.

    Args:
        name: registry name (used in CLI specs).
        factory: called with keyword options, returns a :class:`NegativeSampler`.
        context: maps a :class:`Context` to the keyword arguments :func:`from_spec` fills in.
        overwrite: replace an existing entry instead of raising ``ValueError``.
    """
    if not overwrite and name in _REGISTRY:
        raise ValueError(f"a sampler named {name!r} is already registered; pass overwrite=True to replace it.")
    _REGISTRY[name] = _Entry(factory, context)


def names() -> tuple[str, ...]:
    """Registered names, sorted."""
    return tuple(sorted(_REGISTRY))


def _entry(name: str) -> _Entry:
    if name not in _REGISTRY:
        raise ValueError(f"unknown sampler {name!r}; registered: {', '.join(names())}.")
    return _REGISTRY[name]


#: context keywords every sampler accepts through :func:`get` (each takes what it needs)
CONTEXT_KEYS = ("catalog", "num_nodes", "data", "split", "segment")


def get(name: str, *, catalog: Optional[Catalog] = None, num_nodes: Optional[int] = None,
        data: Optional[TemporalData] = None, split: Optional[Split] = None, segment: Optional[str] = None,
        **options: Any) -> NegativeSampler:
    """Build the sampler registered as ``name``.

    The context keywords (``catalog``, ``num_nodes``, ``data``, ``split``, ``segment``) are the
    same for every sampler: each takes those it needs and ignores the others, so swapping
    samplers by name changes one string. With ``data``, ``split`` and ``catalog`` given, what a
    sampler derives from them (the training graph of ``degree``, the segments of
    ``inductive``, ...) is filled in as :func:`from_spec` does. ``options`` are the sampler's
    own keywords (e.g. ``replace=True``); an unknown one raises ``ValueError`` listing them.

    Example:
        >>> import torch
        >>> from tgeval.data.catalog import Catalog
        >>> catalog = Catalog("custom", torch.arange(5), None, 5)
        >>> [get(n, catalog=catalog, num_nodes=5).name for n in ("uniform", "historical")]
        ['uniform', 'historical']
    """
    entry = _entry(name)
    context: dict[str, Any] = {key: value for key, value in (("catalog", catalog), ("num_nodes", num_nodes),
                                                             ("data", data), ("split", split), ("segment", segment))
                               if value is not None}
    if entry.context is not None and data is not None and split is not None and catalog is not None:
        context = {**entry.context(Context(data, split, catalog, segment)), **context}
    accepted = _accepted(entry.factory)
    if accepted is not None:
        unknown = set(options) - accepted
        if unknown:
            raise ValueError(f"sampler {name!r} takes no option {sorted(unknown)}; options: "
                             f"{', '.join(sorted(accepted - set(CONTEXT_KEYS))) or 'none'}.")
        context = {key: value for key, value in context.items() if key in accepted}
    return entry.factory(**{**context, **options})


def parse_spec(spec: str) -> tuple[str, dict]:
    """``"NAME[:key=value,...]"`` -> ``(name, options)`` (values typed as in the module docstring)."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"sampler option {item!r} in {spec!r} is not key=value, e.g. 'historical:replace=true'.")
        options[key.strip()] = parse_value(value)
    return name.strip(), options


def _accepted(factory: Factory) -> Optional[set[str]]:
    """Keyword names ``factory`` accepts, or ``None`` if it takes ``**kwargs``."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                   inspect.Parameter.POSITIONAL_OR_KEYWORD)}


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
        ValueError: unknown name, or an option the sampler does not take (the message lists them).
    """
    name, options = parse_spec(spec)
    context = Context(data, split, catalog, segment)
    if name == "mixture":
        if not options:
            raise ValueError("a mixture spec lists components with proportions, e.g. "
                             "'mixture:historical=0.5,uniform=0.5'.")
        for part, weight in options.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise ValueError(f"mixture weight {part}={weight} in {spec!r} is not a number: a mixture spec is "
                                 f"mixture:NAME=WEIGHT,NAME=WEIGHT,... with finite non-negative weights, e.g. "
                                 f"'mixture:historical=0.5,uniform=0.5'.")
        components = [from_spec(part, data=data, split=split, catalog=catalog, segment=segment) for part in options]
        return MixtureSampler(components, [float(p) for p in options.values()])
    entry = _entry(name)
    filled = entry.context(context) if entry.context is not None else {}
    accepted = _accepted(entry.factory)
    if accepted is not None:
        allowed = accepted - set(filled)
        unknown = set(options) - allowed
        if unknown:
            raise ValueError(f"sampler {name!r} takes no option {sorted(unknown)} in {spec!r}; "
                             f"options: {', '.join(sorted(allowed)) or 'none'}.")
    return entry.factory(**{**filled, **typed_options(entry.factory, options, f"sampler {name!r} option", spec)})


def _graph_context(c: Context) -> dict:
    return {"num_nodes": c.catalog.num_nodes, "catalog": c.catalog}


def _inductive_context(c: Context) -> dict:
    out = {"data": c.data, "train_end": c.split.train.end, "num_nodes": c.catalog.num_nodes, "catalog": c.catalog}
    if c.segment is not None:
        out.update(start=c.split[c.segment].start, end=c.split[c.segment].end)
    return out


register("uniform", UniformSampler, context=lambda c: {"catalog": c.catalog})
register("historical", HistoricalSampler, context=_graph_context)
register("source_history", SourceHistorySampler, context=_graph_context)
register("inductive", InductiveSampler, context=_inductive_context)
register("time_available", TimeAvailableSampler,
         context=lambda c: {"data": c.data, "num_nodes": c.catalog.num_nodes, "fallback": c.catalog})
register("popularity", PopularitySampler, context=_graph_context)
register("degree", DegreeSampler,
         context=lambda c: {**_graph_context(c), "graph": c.data[: c.split.train.end]})
register("degree_time", TimeDegreeSampler, context=_graph_context)
register("mixture", MixtureSampler)
register("fixed", FixedNegativeSampler.from_file,  # "fixed:path=negatives.pt"
         context=lambda c: {"data": c.data, "num_nodes": c.catalog.num_nodes})
register("tgb", read_tgb_negatives,  # "tgb:path=..._test_ns.pkl": a Temporal Graph Benchmark negatives file
         context=lambda c: {"data": c.split[c.segment or "test"].select(c.data), "num_nodes": c.catalog.num_nodes})
for _name, _factory in _birth_death_factories().items():  # HS OS IS HD OD ID HE OE IE, e.g. "OE:test_ratio=0.15"
    register(_name, _factory,
             context=lambda c: {"data": c.data, "num_nodes": c.catalog.num_nodes, "catalog": c.catalog})
