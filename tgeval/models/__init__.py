"""Temporal link-prediction models with the common interface (:class:`TemporalLinkModel`): the
neural models (TGN, DyRep, GraphMixer) with their configs, the heuristics, and their registry by
name (:mod:`tgeval.models.registry`).

The names below are imported on first use (PEP 562), so that the registry and the configs
(:mod:`tgeval.models.config`) load without torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("CandidateScorer", "TemporalLinkModel"), "tgeval.models.base"),
    "Capabilities": "tgeval.models.capabilities",
    **dict.fromkeys(("DyRepConfig", "GraphMixerConfig", "ModelConfig", "TGNConfig"), "tgeval.models.config"),
    "DyRep": "tgeval.models.dyrep",
    "GraphMixer": "tgeval.models.graphmixer",
    **dict.fromkeys(("EdgeBank", "GlobalPopularity", "GlobalRecency", "LocalPopularity", "LocalRecency", "NodeMemory",
                     "PairMembership", "Popularity", "PreferentialAttachment"), "tgeval.models.heuristics"),
    **dict.fromkeys(("NeuralLinkModel", "message_dim"), "tgeval.models.neural"),
    "TGN": "tgeval.models.tgn",
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
