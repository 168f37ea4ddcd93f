"""Models with the common interface (SPEC §6, §8), and their registry (:mod:`tgeval.models.registry`).

The names below are imported on first use (PEP 562), so that the registry and the configs
(:mod:`tgeval.models.config`) load without torch.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("CandidateScorer", "TemporalLinkModel"), "tgeval.models.base"),
    **dict.fromkeys(("EdgeBank", "NodeMemory", "PairMembership", "Popularity", "PreferentialAttachment"),
                    "tgeval.models.heuristics"),
    **dict.fromkeys(("NeuralLinkModel", "message_dim"), "tgeval.models.neural"),
    **dict.fromkeys(("TGNConfig", "DyRepConfig", "GraphMixerConfig"), "tgeval.models.config"),
    "TGN": "tgeval.models.tgn",
    "DyRep": "tgeval.models.dyrep",
    "GraphMixer": "tgeval.models.graphmixer",
}

__all__ = list(_SOURCES)


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:  # a module (``tgeval.models.layers``, ...) is imported on first use too
        if importlib.util.find_spec(f"tgeval.models.{name}") is not None:
            return importlib.import_module(f"tgeval.models.{name}")
        raise AttributeError(f"module 'tgeval.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
