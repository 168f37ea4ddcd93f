"""Negative samplers: one interface (:class:`NegativeSampler`), swappable by name.

``tgeval.samplers.get("historical", num_nodes=..., catalog=...)`` or the classes below; the
CLI takes ``--sampler NAME[:key=value,...]`` (see :func:`from_spec`). The registry
(:mod:`tgeval.samplers.registry`) registers every built-in sampler when it is imported, so
``get``, ``names`` and ``from_spec`` see them all whichever name is read first.

The names below are imported on first use (PEP 562), so ``import tgeval.samplers`` loads no torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("NegativeSampler", "Negatives"), "tgeval.samplers.base"),
    **dict.fromkeys(("DegreeSampler", "TimeDegreeSampler"), "tgeval.samplers.degree"),
    **dict.fromkeys(("FixedNegativeSampler", "load_negatives", "read_tgb_negatives", "save_negatives"),
                    "tgeval.samplers.fixed"),
    "write_tgb_negatives": "tgeval.data.io.tgb_negatives",
    "HistoricalSampler": "tgeval.samplers.historical",
    "InductiveSampler": "tgeval.samplers.inductive",
    **dict.fromkeys(("BirthDeathEdgeSampler", "BirthDeathNodeSampler", "birth_death", "node_lifetimes",
                     "pair_lifetimes", "split_time"), "tgeval.samplers.lifespans"),
    "MixtureSampler": "tgeval.samplers.mixture",
    "PopularitySampler": "tgeval.samplers.popularity",
    **dict.fromkeys(("SeenSampler", "UnseenSampler"), "tgeval.samplers.membership"),
    **dict.fromkeys(("describe", "from_spec", "get", "names", "parse_spec", "register"), "tgeval.samplers.registry"),
    "SourceHistorySampler": "tgeval.samplers.source_history",
    "TimeAvailableSampler": "tgeval.samplers.time_available",
    "UniformSampler": "tgeval.samplers.uniform",
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
