"""tgeval: leak-free training and evaluation of link prediction on continuous-time dynamic graphs.

The names below are imported on first use (PEP 562), so ``import tgeval`` and the command
line's argument parsing load neither torch nor PyG; ``from tgeval import evaluate`` loads what
``evaluate`` needs.
"""

from __future__ import annotations

from tgeval.lazy import lazy_exports

__version__ = "0.1.0"

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("load_checkpoint", "save_checkpoint"), "tgeval.training.checkpoint"),
    **dict.fromkeys(("Catalog", "build_catalog"), "tgeval.data.catalog"),
    **dict.fromkeys(("Segment", "Split", "chronological_split"), "tgeval.data.split"),
    **dict.fromkeys(("sort_by_time", "validate"), "tgeval.data.validation"),
    **dict.fromkeys(("deterministic", "device_of"), "tgeval.device"),
    **dict.fromkeys(("CacheWarning", "CatalogError", "CheckpointError", "DataFormatError", "DataMismatchError", "DeviceError",
                     "DistributedError", "EventSetMismatchError", "EventsFileError", "HiddenStateError",
                     "InputPathError", "LeakageError", "ModelCapabilityError", "NegativesFileError",
                     "OutputPathError", "SamplerError", "SlowPathWarning", "SplitError", "StaticGraphError",
                     "TemporalDataError", "TGEvalError", "UndefinedMetricWarning", "UntrainedModelWarning"),
                    "tgeval.errors"),
    **dict.fromkeys(("evaluate", "replay", "warm_up"), "tgeval.eval.engine"),
    "Protocol": "tgeval.protocol",
    "Result": "tgeval.eval.result",
    "TimestampBatchLoader": "tgeval.loader",
    **dict.fromkeys(("Stateful", "no_state_change"), "tgeval.state"),
}

__all__ = ["__version__", *_SOURCES]

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
