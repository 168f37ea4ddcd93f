"""tgeval: leak-free training and evaluation of link prediction on continuous-time dynamic graphs.

The names below are imported on first use (PEP 562), so ``import tgeval`` and the command
line's argument parsing load neither torch nor PyG; ``from tgeval import evaluate`` loads what
``evaluate`` needs.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("load_checkpoint", "save_checkpoint"), "tgeval.training.checkpoint"),
    **dict.fromkeys(("Catalog", "build_catalog"), "tgeval.data.catalog"),
    **dict.fromkeys(("Segment", "Split", "chronological_split"), "tgeval.data.split"),
    **dict.fromkeys(("sort_by_time", "validate"), "tgeval.data.validate"),
    **dict.fromkeys(("deterministic", "device_of"), "tgeval.device"),
    **dict.fromkeys(("CatalogError", "CheckpointError", "DataFormatError", "DataMismatchError", "DeviceError",
                     "LeakageError", "NegativesFileError", "OutputPathError", "SamplerError", "SplitError",
                     "TemporalDataError", "TGEvalError", "UndefinedMetricWarning"), "tgeval.errors"),
    **dict.fromkeys(("evaluate", "replay", "warm_up"), "tgeval.eval.replay"),
    "Result": "tgeval.eval.result",
    "TimestampBatchLoader": "tgeval.loader",
    **dict.fromkeys(("Stateful", "no_state_change"), "tgeval.state"),
}

__all__ = ["__version__", *_SOURCES]


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:  # a subpackage or module (``tgeval.samplers``, ...) is imported on first use too
        if importlib.util.find_spec(f"tgeval.{name}") is None:
            raise AttributeError(f"module 'tgeval' has no attribute {name!r}")
        return importlib.import_module(f"tgeval.{name}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
