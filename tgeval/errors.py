"""Typed exceptions of tgeval: one root, one class per library condition.

Every subclass that describes bad input also derives from :class:`ValueError`, so
callers that already catch ``ValueError`` keep working.
"""

__all__ = [
    "TGEvalError",
    "TemporalDataError",
    "DataFormatError",
    "SplitError",
    "ProtocolError",
    "MetricInputError",
    "CatalogError",
    "SamplerError",
    "NegativesFileError",
    "DataMismatchError",
    "LeakageError",
    "HiddenStateError",
    "ModelCapabilityError",
    "ModelConfigError",
    "ModelOutputError",
    "CheckpointError",
    "InputPathError",
    "OutputPathError",
    "DeviceError",
    "DistributedError",
    "StaticGraphError",
    "EventSetMismatchError",
    "EventsFileError",
    "ResultFileError",
    "DiagnosticError",
    "UndefinedMetricWarning",
    "CacheWarning",
    "SlowPathWarning",
    "UntrainedModelWarning",
]


class TGEvalError(Exception):
    """Root of every error raised by tgeval on purpose."""


class TemporalDataError(TGEvalError, ValueError):
    """An event stream breaks a rule of the event data (unsorted or non-finite ``t``,
    negative ids, length mismatch, feature rows that do not match events)."""


class DataFormatError(TemporalDataError):
    """A file cannot be read as the requested format (wrong column count, unparsable
    value); the message names the file, the line and the fix."""


class SplitError(TGEvalError, ValueError):
    """A split is impossible or would produce an empty segment: a chronological split's ratios, a segment
    that spans no time, a static edge split's test fraction or a structural-shift split's thresholds."""


class ProtocolError(TGEvalError, ValueError):
    """A setting of the evaluation protocol is out of range or contradicts another: the tie policy, a
    metric, K, a window, a batch size, a number of negatives, a statistic's confidence or resamples,
    or a method choice; the message names the setting, the allowed values and the fix."""


class MetricInputError(TGEvalError, ValueError):
    """The tensors given to a metric or statistic do not fit together: scores, labels, groups or masks
    of other lengths, shapes or devices, labels that are not 0/1, group ids out of range, unpaired or
    non-finite values, or too few of them."""


class CatalogError(TGEvalError, ValueError):
    """A destination catalog is empty or does not cover what it must cover."""


class SamplerError(TGEvalError, ValueError):
    """A negative sampler cannot honour its request (e.g. more distinct negatives than
    its pool holds without ``replace=True``)."""


class NegativesFileError(TGEvalError, ValueError):
    """A negatives file is corrupt (checksum mismatch) or was drawn for other data."""


class DataMismatchError(TGEvalError, ValueError):
    """A catalog, segment or sampler was built from other data than the stream it is used
    with: the fingerprint it records differs from the stream's."""


class LeakageError(TGEvalError):
    """Information crossed a time boundary: state changed while scoring, or a score
    depended on events that were not yet allowed."""


class HiddenStateError(LeakageError):
    """A model changed state that tgeval's ``snapshot`` / ``restore`` / ``reset_state`` do not
    cover (a plain Python container, a numpy array, an unregistered tensor, a number), so it
    would be carried silently from one run into the next; the message names the attribute."""


class ModelCapabilityError(TGEvalError, TypeError):
    """A model is asked for something it cannot do: all-entity ranking from embeddings that depend
    on the scored pair, an approximate pre-filter without a ``candidate_prior``, exact history
    inside a batch without ``exact_history``. The message names what it can do instead."""


class ModelConfigError(TGEvalError, ValueError):
    """A model cannot be built as configured: a hyperparameter out of range or of the wrong type, a
    width too large, options that contradict each other (a window and a half-life), node features
    that do not match the configuration; the message names the field and the fix."""


class ModelOutputError(TGEvalError, ValueError):
    """A model returned scores that cannot be ranked: NaN (a numerical problem of the model), or no real tensor of
    one score per query (another length, a 0-d tensor, a list, booleans)."""


class CheckpointError(TGEvalError, ValueError):
    """A checkpoint cannot be used: not a checkpoint, corrupted, of an unknown model, or
    written for other data, another model configuration or another training specification."""


class InputPathError(TGEvalError, ValueError):
    """An input path cannot be read as given: it does not exist, or it is a folder where a file is
    expected; the message names the input, its path and what to give instead."""


class OutputPathError(TGEvalError, ValueError):
    """An output path cannot be written (a folder where a file is expected, or the reverse,
    no write permission, a read-only file system, an existing run), found before any work."""


class DeviceError(TGEvalError, ValueError):
    """A requested device does not exist on this machine (e.g. ``cuda`` without CUDA), a model and its data
    lie on different devices, or more CPU threads are asked for than the machine's cores can run."""


class DistributedError(TGEvalError, ValueError):
    """Distributed evaluation cannot run as asked: no process group (launch with ``torchrun``),
    or ranks that disagree on the data, the model or the options."""


class StaticGraphError(TGEvalError, ValueError):
    """A static graph cannot be evaluated as asked: no edge left after cleaning, an edge split that
    would leave the training graph or the test edges empty, pairs or edge lists of the wrong shape, or
    a source without a test edge where one is needed."""


class EventSetMismatchError(TGEvalError, ValueError):
    """Compared results were not evaluated on the same events (``event`` ids differ, or one result
    repeats an ``event`` id)."""


class EventsFileError(TGEvalError, ValueError):
    """A result's per-event records cannot be read with it: the result holds or names none; the
    per-event file is empty, malformed or lacks a column that is needed; its path is missing, outside
    the result's folder or no regular file; or its sha256 differs from the one the result recorded
    (not written with it)."""


class ResultFileError(TGEvalError, ValueError):
    """A result file (a result JSON, ``diagnose.json``) cannot be read as one: not JSON, nested deeper than any
    result, or an entry tgeval reads missing or of another type; the message names the file and the entry."""


class DiagnosticError(TGEvalError, ValueError):
    """A diagnostic cannot be computed from what it was given: the data lack what it measures (no seen
    or no unseen pairs), or a direction or probe that does not fit the model."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for its input (e.g. AUROC with one class); it returns ``nan``."""


class SlowPathWarning(UserWarning):
    """A computation runs on a slow fallback path; the message gives its expected cost and the fix."""


class UntrainedModelWarning(UserWarning):
    """A model with parameters is evaluated as it was built (never trained, nor loaded from a
    checkpoint of a trained model): its numbers are those of random weights."""


class CacheWarning(UserWarning):
    """A cache entry of :func:`tgeval.data.read_events` could not be used or written; the file was read
    from its text instead."""
