"""tgeval: leak-free training and evaluation of link prediction on continuous-time dynamic graphs."""

__version__ = "0.1.0"

from tgeval.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from tgeval.data.catalog import Catalog, build_catalog  # noqa: E402
from tgeval.data.split import Segment, Split, chronological_split  # noqa: E402
from tgeval.data.validate import sort_by_time, validate  # noqa: E402
from tgeval.device import deterministic, device_of  # noqa: E402
from tgeval.errors import (  # noqa: E402
    CatalogError,
    CheckpointError,
    DataFormatError,
    DataMismatchError,
    DeviceError,
    LeakageError,
    NegativesFileError,
    OutputPathError,
    SamplerError,
    SplitError,
    TemporalDataError,
    TGEvalError,
    UndefinedMetricWarning,
)
from tgeval.eval.replay import evaluate, replay, warm_up  # noqa: E402
from tgeval.eval.result import Result  # noqa: E402
from tgeval.loader import TimestampBatchLoader  # noqa: E402
from tgeval.state import Stateful, no_state_change  # noqa: E402

__all__ = [
    "__version__", "Catalog", "build_catalog", "Segment", "Split", "chronological_split", "sort_by_time",
    "validate", "CatalogError", "DataFormatError", "LeakageError", "NegativesFileError", "SamplerError", "SplitError",
    "TemporalDataError", "TGEvalError", "UndefinedMetricWarning", "evaluate", "warm_up", "Result",
    "TimestampBatchLoader", "Stateful", "no_state_change", "CheckpointError", "load_checkpoint",
    "save_checkpoint", "deterministic", "replay", "OutputPathError", "DeviceError", "device_of",
    "DataMismatchError",
]
