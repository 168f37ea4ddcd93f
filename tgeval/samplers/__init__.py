"""Negative samplers: one interface, swappable by name (SPEC §5).

``tgeval.samplers.get("historical", num_nodes=..., catalog=...)`` or the classes below; the
CLI takes ``--sampler NAME[:key=value,...]`` (see :func:`from_spec`).
"""

from tgeval.samplers.base import NegativeSampler, Negatives
from tgeval.samplers.lifespans import (BirthDeathEdgeSampler, BirthDeathNodeSampler, birth_death, node_lifetimes,
                                         pair_lifetimes, split_time)
from tgeval.samplers.degree import DegreeSampler, TimeDegreeSampler
from tgeval.samplers.fixed import (FixedNegativeSampler, load_negatives, read_tgb_negatives, save_negatives,
                                   write_tgb_negatives)
from tgeval.samplers.historical import HistoricalSampler
from tgeval.samplers.inductive import InductiveSampler
from tgeval.samplers.mixture import MixtureSampler
from tgeval.samplers.popularity import PopularitySampler
from tgeval.samplers.source_history import SourceHistorySampler
from tgeval.samplers.time_available import TimeAvailableSampler
from tgeval.samplers.uniform import UniformSampler
from tgeval.samplers.registry import from_spec, get, names, parse_spec, register  # noqa: I001 (after the samplers)

__all__ = ["NegativeSampler", "Negatives", "BirthDeathNodeSampler", "BirthDeathEdgeSampler", "birth_death",
           "node_lifetimes", "pair_lifetimes", "split_time", "UniformSampler", "HistoricalSampler", "SourceHistorySampler", "InductiveSampler",
           "TimeAvailableSampler", "PopularitySampler", "DegreeSampler", "TimeDegreeSampler", "MixtureSampler",
           "FixedNegativeSampler", "save_negatives", "load_negatives", "read_tgb_negatives", "write_tgb_negatives",
           "from_spec", "get", "names", "parse_spec", "register"]
