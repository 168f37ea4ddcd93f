"""tgeval: leak-free training and evaluation of link prediction on continuous-time dynamic graphs.

The package holds the entry points (``evaluate``, ``fit``, ``train_epoch``, the data's validation,
split and catalog, the checkpoints) and every error and warning class (:mod:`tgeval.errors`); the
subpackages hold the rest: ``data``, ``eval``, ``samplers``, ``models``, ``training``,
``diagnostics``, ``static``.

The names below are imported on first use (PEP 562), so ``import tgeval`` and the command
line's argument parsing load neither torch nor PyG; ``from tgeval import evaluate`` loads what
``evaluate`` needs.
"""

from __future__ import annotations

from tgeval import errors
from tgeval.core.lazy import lazy_exports

__version__ = "0.1.0"

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("Catalog", "build_catalog"), "tgeval.data.catalog"),
    **dict.fromkeys(("Segment", "Split", "chronological_split"), "tgeval.data.split"),
    **dict.fromkeys(("sort_by_time", "validate"), "tgeval.data.validation"),
    **dict.fromkeys(("deterministic", "device_of"), "tgeval.core.device"),
    **dict.fromkeys(errors.__all__, "tgeval.errors"),
    **dict.fromkeys(("evaluate", "replay", "warm_up"), "tgeval.eval.engine"),
    **dict.fromkeys(("audit", "AuditReport"), "tgeval.diagnostics.leak_audit"),
    "Protocol": "tgeval.eval.protocol",
    "Tuning": "tgeval.eval.tuning",
    "Result": "tgeval.eval.result",
    "TimestampBatchLoader": "tgeval.stream.loader",
    "Walk": "tgeval.stream.walk",
    **dict.fromkeys(("Stateful", "no_state_change"), "tgeval.stream.state"),
    **dict.fromkeys(("load_checkpoint", "save_checkpoint"), "tgeval.training.checkpoint"),
    **dict.fromkeys(("Checkpointing", "Validation", "fit"), "tgeval.training.fitting"),
    **dict.fromkeys(("Recipe", "train_epoch"), "tgeval.training.train"),
}

__all__ = ["__version__", *_SOURCES]

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
