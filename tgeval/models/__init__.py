"""Models with the common interface (SPEC §6, §8), and their registry (:mod:`tgeval.models.registry`).

The names below are imported on first use (PEP 562), so that the registry and the configs
(:mod:`tgeval.models.config`) load without torch.
"""

from __future__ import annotations

from tgeval.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("CandidateScorer", "TemporalLinkModel"), "tgeval.models.base"),
    **dict.fromkeys(("EdgeBank", "NodeMemory", "PairMembership", "Popularity", "PreferentialAttachment"),
                    "tgeval.models.heuristics"),
    **dict.fromkeys(("NeuralLinkModel", "message_dim"), "tgeval.models.neural"),
    **dict.fromkeys(("ModelConfig", "TGNConfig", "DyRepConfig", "GraphMixerConfig"), "tgeval.models.config"),
    "TGN": "tgeval.models.tgn",
    "DyRep": "tgeval.models.dyrep",
    "GraphMixer": "tgeval.models.graphmixer",
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
