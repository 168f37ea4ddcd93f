r"""Training with validation, early stopping and resumable checkpoints (docs/protocol.md §9, §11).

:func:`fit` composes :func:`~tgeval.training.train.train_epoch` and
:func:`~tgeval.eval.engine.evaluate`::

    for epoch in range(start, epochs):
        train_epoch(model, data, split.train, recipe=recipe, ...)  # state reset, negatives keyed by seed + epoch
        evaluate(model, data, split.val, Protocol(replay="online"))   # the validation metric of this epoch
        keep the parameters if the metric improved; write best.pt (on improvement) and last.pt
        stop when it has not improved for `validation.patience` epochs
    load the best epoch's parameters

Resuming from ``last.pt`` restores parameters, optimizer, early-stopping bookkeeping,
history and every random-number generator, so the rest of the run — dropout streams
included — is bit-identical to an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, ContextManager, Optional, Sequence, Union, cast

from torch.optim import Optimizer
from torch_geometric.data import TemporalData

from tgeval.core.atomic import check_writable, folder_lock, full_disk_refused, json_safe, same_file, write_atomic
from tgeval.core.choices import VAL_METRICS, VAL_STATES, HistoryMode, ValState
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.data.hashing import fingerprint
from tgeval.data.split import Split
from tgeval.core.distributed import gather_objects, is_main, require_group
from tgeval.errors import CheckpointError, ModelCapabilityError, OutputPathError, ProtocolError
from tgeval.eval.engine import evaluate
from tgeval.eval.result import Result
from tgeval.models.base import TemporalLinkModel
from tgeval.models.neural import NeuralLinkModel
from tgeval.eval.protocol import DEFAULT_VAL_NEGATIVES, Protocol, metric_name
from tgeval.samplers.base import NegativeSampler, split_counters
from tgeval.samplers.uniform import UniformSampler
from tgeval.stream.state import checked_reset, clone_state, exclusive, load_parameters, parameters_of
from tgeval.training.checkpoint import load_checkpoint, model_name, resume_advice, rng_state, save_checkpoint
from tgeval.training.train import Recipe, train_epoch

__all__ = ["fit", "Validation", "Checkpointing", "EarlyStopping", "VAL_METRICS", "val_metrics", "val_names",
           "epoch_line", "validation_history", "check_new_run", "checkpoint_lock", "default_val_sampler"]

#: how the training specification records each validation state
_VAL_STATE_RECORDS = {"rebuilt": "rebuilt (Protocol(warm=True))",
                      "training": "the state training left (Protocol(warm=False))"}

#: History entries that measure time, not the model (they differ between identical runs): kept
#: out of checkpoints (whose bytes are then a function of the run) and written to ``timings.json``.
TIMING_KEYS = ("seconds", "events_per_second", "val_seconds", "val_events_per_second")
TIMINGS_FILE = "timings.json"
#: the files of a run in a checkpoint folder: its checkpoints and its epochs' timings
RUN_FILES = ("last.pt", "best.pt", TIMINGS_FILE)


def check_new_run(folder: Union[str, os.PathLike], *, resume: Union[str, os.PathLike, None], overwrite: bool) -> None:
    """Refuse a checkpoint folder that cannot be written, or that already holds a run (a file of
    :data:`RUN_FILES`) other than the one continued from ``resume`` (a ``last.pt`` in ``folder``) when not
    overwriting: before the first epoch, not after it.

    Raises:
        OutputPathError: naming the folder, what it holds and the ways on.
    """
    check_writable(folder, folder=True, what="checkpoint folder")
    held = [name for name in RUN_FILES if (Path(folder) / name).exists()]
    if not held or overwrite or _continues(folder, resume):
        return
    if resume is None:
        raise OutputPathError(f"checkpoint folder {str(folder)!r} already holds a run ({', '.join(held)}): resume it "
                              f"(resume=.../last.pt, --resume), replace it (overwrite=True, --overwrite), or choose "
                              f"another folder.")
    raise OutputPathError(f"checkpoint folder {str(folder)!r} holds another run ({', '.join(held)}) than the resumed "
                          f"{str(resume)!r}: continuing that run here would mix the two (one run's last.pt beside the "
                          f"other's best.pt). Continue it in its own folder {str(Path(resume).parent)!r} or in an "
                          f"empty one, or replace the run here (overwrite=True, --overwrite).")


def _continues(folder: Union[str, os.PathLike], resume: Union[str, os.PathLike, None]) -> bool:
    """Whether the run resumed from ``resume`` is the one in ``folder`` (the file lies in it)."""
    return resume is not None and same_file(Path(resume).parent, folder)


def checkpoint_lock(checkpoints: "Checkpointing", *, command: Optional[str] = None) -> ContextManager:
    """Hold the checkpoint folder of ``checkpoints`` for this writer (:func:`~tgeval.core.atomic.folder_lock`; a
    null context without a folder): a second run into it is refused at once, naming the holder."""
    if checkpoints.folder is None:
        return nullcontext()
    return folder_lock(checkpoints.folder, what="checkpoint folder (Checkpointing.folder)", command=command)


def _untimed(history: list[dict]) -> list[dict]:
    return [{key: value for key, value in record.items() if key not in TIMING_KEYS} for record in history]


def _timings(history: list[dict]) -> list[dict]:
    return [{"epoch": record["epoch"], **{key: record[key] for key in TIMING_KEYS if key in record}}
            for record in history]


def _read_timings(checkpoint: Union[str, os.PathLike], history: list[dict]) -> list[dict]:
    """``history`` (from a checkpoint) with the timings of ``timings.json`` beside it, where present."""
    path = Path(checkpoint).parent / TIMINGS_FILE
    if not path.is_file():
        return history
    saved = {record["epoch"]: record for record in json.loads(path.read_text())}
    return [{**record, **{key: value for key, value in saved.get(record["epoch"], {}).items() if key != "epoch"}}
            for record in history]


def val_metrics(result: Result) -> dict[str, Optional[float]]:
    """The :data:`VAL_METRICS` present in ``result`` (``None`` where undefined)."""
    out: dict[str, Optional[float]] = {}
    for name, (part, metric, aggregate) in VAL_METRICS.items():
        if part in result.metrics:
            value = result.metrics[part].get(metric, {}).get(aggregate)
            out[name] = None if value is None or math.isnan(value) else float(value)
    return out


def val_names(sampler: Optional[NegativeSampler], num_negatives: int, catalog: Optional[Catalog]) -> dict[str, str]:
    """Each :data:`VAL_METRICS` measured with these validation negatives (none with ``sampler=None``) and
    all-entity pass (with ``catalog``), named with its protocol (:func:`~tgeval.eval.protocol.metric_name`), e.g.
    ``{"ap": "AP (K=1, uniform)"}``."""
    described = None if sampler is None else sampler.describe()
    return {name: metric_name(part, metric, num_negatives=num_negatives, sampler=described,
                              catalog=None if catalog is None else catalog.describe())
            for name, (part, metric, _) in VAL_METRICS.items()
            if (part == "sampled" and sampler is not None) or (part == "all_entity" and catalog is not None)}


def epoch_line(record: dict, metrics: Optional[Sequence[str]] = None) -> str:
    """One epoch of :func:`fit` in a line: its loss, each validation metric named with its protocol (the record's
    ``val_names``, e.g. ``AP (K=1, uniform)``; ``metrics``: those keys only, default all measured), whether it
    improved, and the time of its training and validation::

        epoch 0: loss 0.6903  validation AP (K=1, uniform) 0.5986  AUROC (K=1, uniform) 0.5776  MRR (K=1, uniform)
        0.8011  (best)  0.05 s (training 0.04 s, 18,795 events/s; validation 0.01 s)
    """
    shown = [name for name in (record["val"] if metrics is None else metrics) if record["val"].get(name) is not None]
    val = "  ".join(f"{record['val_names'][name]} {record['val'][name]:.4f}" for name in shown)
    train_s, val_s = record["seconds"], record.get("val_seconds", 0.0)
    return (f"epoch {record['epoch']}: loss {record['loss']:.4f}  validation {val or '(no metric defined)'}"
            f"{'  (best)' if record['improved'] else ''}  {train_s + val_s:.2f} s (training {train_s:.2f} s, "
            f"{record['events_per_second']:,.0f} events/s; validation {val_s:.2f} s)")


def default_val_sampler(model: TemporalLinkModel, data: TemporalData, split: Split) -> UniformSampler:
    """The validation negatives of :func:`fit` and ``tgeval train`` unless chosen: uniform over the
    training catalog (every destination of ``split.train``), :data:`~tgeval.eval.protocol.DEFAULT_VAL_NEGATIVES` per
    positive."""
    return UniformSampler(build_catalog(data, "train", train_end=split.train.end, num_nodes=model.num_nodes))


def validation_history(model: TemporalLinkModel, history: str) -> HistoryMode:
    """The ``history`` validation scores with after training under ``history``: ``"neighbors"``
    when training used it, else ``evaluate``'s default (``"exact"`` for models that allow it)."""
    return "neighbors" if history == "neighbors" else "exact" if model.capabilities.exact_history else "batch"


@dataclass(frozen=True)
class Validation:
    """How :func:`fit` validates after every epoch: an online replay of ``split.val`` with one protocol, the same
    every epoch, whose ``metric`` chooses the best epoch and stops the run after ``patience`` epochs without
    improvement.

    Attributes:
        metric: a key of :data:`VAL_METRICS` (``"all_entity_mrr"`` needs ``catalog``).
        sampler: validation negatives (``None``: uniform over the training catalog, :func:`default_val_sampler`;
            with ``negatives``, the validation protocol of ``tgeval train``).
        negatives: ``K`` of validation (default :data:`~tgeval.eval.protocol.DEFAULT_VAL_NEGATIVES`); ``0``: no sampled
            negatives (no sampler is used), validation by the all-entity pass alone (needs ``catalog`` and an
            all-entity ``metric``).
        catalog: catalog of an all-entity validation pass (``None``: none).
        state: the state validation scores from: ``"rebuilt"`` (reset and rebuilt from the training events with
            the epoch's final weights, ``evaluate``'s default) or ``"training"`` (the state the epoch's training
            left, ``Protocol(warm=False)``: DyGLib's and PyG's validation). For memory models the two can disagree
            widely (docs/quality.md, *Why the rebuilt protocol is so noisy*). ``"training"`` needs a history-free
            ``sampler``: nothing warms a sampler's history up there.
        patience: epochs without improvement of ``metric`` before the run stops (``None``: train all epochs).

    Raises:
        ProtocolError: at construction: an unknown ``metric`` or ``state``, an all-entity ``metric`` without
            ``catalog``, ``negatives < 0``, ``negatives=0`` with a sampled ``metric`` or a ``sampler``,
            ``state="training"`` with a sampler that has history, or a ``patience`` that is not ``None`` nor an
            integer ``>= 1``.
    """

    metric: str = "ap"
    sampler: Optional[NegativeSampler] = None
    negatives: int = DEFAULT_VAL_NEGATIVES
    catalog: Optional[Catalog] = None
    state: ValState = "rebuilt"
    patience: Optional[int] = None

    def __post_init__(self) -> None:
        metric, sampler = self.metric, self.sampler
        patience = self.patience
        if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
            raise ProtocolError(f"Validation.patience must be None (train all epochs) or an integer >= 1, got "
                                f"{patience!r}.")
        if metric not in VAL_METRICS:
            raise ProtocolError(f"unknown Validation.metric {metric!r}; choose one of {sorted(VAL_METRICS)}.")
        if VAL_METRICS[metric][0] == "all_entity" and self.catalog is None:
            raise ProtocolError(f"Validation(metric={metric!r}) ranks against a catalog: pass Validation.catalog.")
        if self.negatives < 0:
            raise ProtocolError(f"Validation.negatives must be >= 0 (0: validation by the all-entity pass alone), "
                                f"got {self.negatives}.")
        if self.negatives == 0 and (VAL_METRICS[metric][0] != "all_entity" or sampler is not None):
            raise ProtocolError(f"Validation(negatives=0) draws no validation negatives, so only an all-entity "
                                f"Validation.metric "
                                f"({', '.join(n for n, (part, _, _) in VAL_METRICS.items() if part == 'all_entity')}) "
                                f"with a Validation.catalog can be measured and no Validation.sampler is used; got "
                                f"Validation(metric={metric!r})"
                                f"{'' if sampler is None else ' and a Validation.sampler'}. Choose an all-entity "
                                f"Validation.metric and leave Validation(sampler=None), or give Validation.negatives "
                                f">= 1.")
        if self.state not in VAL_STATES:
            raise ProtocolError(f"Validation.state must be one of {VAL_STATES}, got {self.state!r}.")
        if self.state == "training" and sampler is not None and not sampler.history_free:
            raise ProtocolError(f"Validation(state='training') validates from the state training left, where nothing "
                                f"warms the history of {sampler.describe().get('name')!r} up: use a history-free "
                                f"Validation.sampler (e.g. UniformSampler), or Validation(state='rebuilt').")

    def resolved(self, model: TemporalLinkModel, data: TemporalData, split: Split) -> "Validation":
        """This validation with its default sampler (:func:`default_val_sampler`, history-free) filled in where
        it draws negatives and has no sampler."""
        if self.negatives == 0 or self.sampler is not None:
            return self
        return replace(self, sampler=default_val_sampler(model, data, split))

    def protocol(self, *, batch_size: int, seed: int, history: HistoryMode) -> Protocol:
        """The protocol of each epoch's :func:`~tgeval.eval.engine.evaluate` over ``split.val``: online, the same
        negatives every epoch (drawn with ``seed``)."""
        return Protocol(replay="online", num_negatives=self.negatives, batch_size=batch_size, seed=seed,
                        warm=self.state == "rebuilt", history=history)

    def record(self, history: str) -> dict:
        """The ``validation`` entry of the training specification, scored with ``history``
        (:func:`validation_history`)."""
        return {"metric": self.metric, "aggregation": VAL_METRICS[self.metric][2], "protocol": "online",
                "state": _VAL_STATE_RECORDS[self.state], "history": history,
                "sampler": None if self.sampler is None else split_counters(self.sampler.describe())[0],
                "num_negatives": self.negatives,
                "catalog": None if self.catalog is None else self.catalog.describe(),
                "names": val_names(self.sampler, self.negatives, self.catalog)}


@dataclass(frozen=True)
class Checkpointing:
    """Where :func:`fit` writes its checkpoints, and the run it continues.

    Attributes:
        folder: folder of ``last.pt`` (after every epoch), ``best.pt`` (on improvement) and ``timings.json``
            (``None``: no files). The model must be registered (:mod:`tgeval.training.checkpoint`).
        resume: a ``last.pt`` to continue from (its folder's ``best.pt`` when a run stopped between the two
            writes of its first epoch left no ``last.pt``); ``None``: a new run.
        overwrite: replace a run already in ``folder``: its files (:data:`RUN_FILES`) are deleted when the first
            epoch writes its own (otherwise refused, unless it is the run resumed; :func:`check_new_run`).

    Raises:
        ProtocolError: at construction: ``overwrite=True`` without a ``folder`` (there is no run it could replace).
    """

    folder: Union[str, os.PathLike, None] = None
    resume: Union[str, os.PathLike, None] = None
    overwrite: bool = False

    def __post_init__(self) -> None:
        if self.overwrite and self.folder is None:
            raise ProtocolError("Checkpointing(overwrite=True) replaces the run in Checkpointing.folder, and no folder "
                                "is given: give the folder, or drop Checkpointing(overwrite=True).")


def _spec(recipe: Recipe, optimizer: Optimizer, validation: Validation, *, val_history: str, epochs: int,
          extra: dict) -> dict:
    """The training specification recorded with checkpoints and results (``validation`` resolved, its sampler
    given; ``val_history`` the history it scores with); a resume must find it unchanged but for ``epochs``."""
    group = optimizer.param_groups[0]
    loss = recipe.loss
    return json_safe({
        "sampler": split_counters(recipe.sampler.describe())[0],  # each epoch's counts are in its history record
        "loss": loss if isinstance(loss, str) else getattr(loss, "__name__", type(loss).__name__),
        "num_negatives": recipe.num_negatives,
        "optimizer": {"name": type(optimizer).__name__,
                      **{k: v for k, v in group.items() if k != "params" and isinstance(v, (int, float, tuple))}},
        "batch_size": recipe.batch_size,
        "history": recipe.history,
        "seed": recipe.seed,
        "epochs": epochs,
        "patience": validation.patience,
        "validation": validation.record(val_history),
        **extra,
        **({"allow_whole_stream": True} if recipe.allow_whole_stream else {}),
    })


@dataclass
class EarlyStopping:
    """The early-stopping bookkeeping of a run: the best epoch so far and its validation value
    (higher is better), the epochs since it, and whether ``patience`` of them ran out."""

    patience: Optional[int]
    epoch: Optional[int] = None
    value: Optional[float] = None
    bad_epochs: int = 0
    stopped: bool = False

    def step(self, epoch: int, value: Optional[float]) -> bool:
        """Record ``epoch``'s validation ``value`` (``None``: not measured); return whether it
        improved, i.e. is strictly larger than the best so far."""
        improved = value is not None and (self.value is None or value > self.value)
        if improved:
            self.epoch, self.value, self.bad_epochs = epoch, value, 0
        else:
            self.bad_epochs += 1
        self.stopped = self.patience is not None and self.bad_epochs >= self.patience
        return improved

    def to_dict(self) -> dict:
        """What checkpoints save (``patience`` is in the training specification)."""
        return {"epoch": self.epoch, "value": self.value, "bad_epochs": self.bad_epochs, "stopped": self.stopped}

    @classmethod
    def from_dict(cls, patience: Optional[int], saved: dict) -> "EarlyStopping":
        return cls(patience, **saved)


def _resume_file(resume: Union[str, os.PathLike]) -> Path:
    """``resume``, or the ``best.pt`` beside a missing ``last.pt``: a run stopped between the two writes
    of its first epoch (``best.pt`` is written first and holds the whole run of that epoch, as
    ``last.pt`` does; later epochs leave the previous ``last.pt``, a complete epoch, to resume from).

    Raises:
        CheckpointError: neither file exists (or not even their folder), or ``resume`` is a folder.
    """
    path = Path(resume)
    if path.is_file():
        return path
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder, but resume (--resume) takes a file: the run's last.pt, e.g. "
                              f"{path / 'last.pt'}.")
    if not path.parent.is_dir():
        raise CheckpointError(f"{path} does not exist, nor its folder {path.parent}: check the path given to resume "
                              f"(--resume), the last.pt in the run's checkpoint folder (a run that never completed an "
                              f"epoch is started again without it).")
    best = path.with_name("best.pt")
    if path.name == "last.pt" and best.is_file():
        return best
    raise CheckpointError(f"{path} does not exist (nor a best.pt beside it): the run it names never completed an "
                          f"epoch. Start it again without resume (--resume), replacing the folder (overwrite=True, "
                          f"--overwrite).")


def _resume(resume: Union[str, os.PathLike], model: NeuralLinkModel, optimizer: Optimizer, training: dict,
            data_fingerprint: str, patience: Optional[int]) -> tuple[list[dict], EarlyStopping, Optional[dict], int]:
    """Load the run of ``resume`` (a ``last.pt``) into ``model``, ``optimizer`` and every generator:
    its history, early stopping, best parameters and the first epoch still to run.

    Raises:
        CheckpointError: other data, model or training specification, or no optimizer state.
    """
    ckpt = load_checkpoint(resume, model.device, data=data_fingerprint, model=model)
    changed = sorted(key for key in set(training) | set(ckpt.training)
                     if key != "epochs" and training.get(key) != ckpt.training.get(key))
    if changed:
        raise CheckpointError(f"{resume} was written with another training specification (differs in "
                              f"{', '.join(changed)}). Resume with the options of that run, or start a "
                              f"fresh run without resume.")
    if ckpt.optimizer is None:
        raise CheckpointError(f"{resume} holds no optimizer state, so training cannot resume from it. "
                              f"Resume from the run's last.pt.")
    optimizer.load_state_dict(ckpt.optimizer)
    ckpt.restore_rng()
    stopping = EarlyStopping.from_dict(patience, ckpt.early_stopping)
    best_parameters = ckpt.best_parameters
    if best_parameters is None and stopping.epoch is not None:  # the checkpoint's own epoch was the best
        best_parameters = clone_state(parameters_of(model))
    return _read_timings(resume, list(ckpt.history)), stopping, best_parameters, ckpt.epoch + 1


@exclusive
def fit(
    model: TemporalLinkModel,
    data: TemporalData,
    split: Split,
    *,
    recipe: Recipe,
    optimizer: Optimizer,
    epochs: int,
    validation: Validation = Validation(),
    checkpoints: Optional[Checkpointing] = None,
    spec: Optional[dict] = None,
    on_epoch: Optional[Callable[[dict], None]] = None,
    verbose: bool = True,
    distributed: bool = False,
) -> dict:
    r"""Train ``model`` on ``split.train``, validate on ``split.val`` after every epoch, keep the best epoch.

    **Epoch** ``e``: :func:`~tgeval.training.train.train_epoch` over ``split.train`` with ``recipe`` (state reset
    at the start, negatives keyed by ``recipe.seed + e``), then :func:`~tgeval.eval.engine.evaluate`
    over ``split.val`` with ``validation`` (:class:`Validation`: online protocol, ``validation.negatives``
    negatives per positive from ``validation.sampler`` drawn with ``recipe.seed`` — the same negatives every epoch —
    and
    an all-entity pass when ``validation.catalog`` is given), from the rebuilt state or, with
    ``Validation(state="training")``, from the state the epoch's training left. The epoch improves when
    its ``validation.metric`` is strictly larger than the best so far; its parameters are then kept
    (in memory and in ``best.pt``). Training stops after ``validation.patience`` epochs without
    improvement (``None``: never early). Validation runs in eval mode (no dropout, also in the
    warm-up's updates).
    At the end the model holds the best epoch's parameters and a reset state, in eval mode
    (evaluation replays the history).

    **Randomness.** Model initialisation and dropout follow torch's global generator:
    seed it (``torch.manual_seed``) before building the model. Checkpoints store every
    generator's state, and resuming restores them.

    **Checkpoints** (``checkpoints``, :class:`Checkpointing`; the model must be registered, see
    :mod:`tgeval.training.checkpoint`): ``last.pt`` after every epoch, ``best.pt`` on improvement.
    Their state snapshot is the state at the end of the epoch's training (history = the
    training segment; no validation event), so ``replay(ckpt.model, data, split.val)`` then
    ``evaluate(ckpt.model, data, split.test, Protocol(warm=False))`` continues from the state built
    during training (PyG's protocol), while the default ``Protocol(warm=True)`` rebuilds it from the
    history with the checkpoint's weights.
    ``Checkpointing(resume=...)`` (a ``last.pt``) continues the run it was written by: same data, model
    configuration and specification (``epochs`` may differ, to train longer); the result is
    bit-identical to a run that was never interrupted. Identical seeded runs write identical
    checkpoint bytes: the wall-clock entries of the history (:data:`TIMING_KEYS`) are kept out
    of them, in ``timings.json`` in the same folder (read back on resume when present).

    Args:
        model: any :class:`~tgeval.models.base.TemporalLinkModel` with a differentiable
            ``score`` (checkpoints need a registered one).
        data: the whole time-sorted stream.
        split: its chronological split (``train`` and ``val`` are used).
        recipe: what each epoch trains on (:class:`~tgeval.training.train.Recipe`: sampler, loss, ``K``, batch
            size, seed, history; validation scores with ``evaluate``'s default history, exact for models that allow
            it, or with ``"neighbors"`` when training used it, in batches of ``recipe.batch_size``).
        optimizer: as in :func:`~tgeval.training.train.train_epoch`.
        epochs: number of epochs (at most).
        validation: the validation protocol, the metric that chooses the best epoch and the patience of early
            stopping (default: AP against :data:`~tgeval.eval.protocol.DEFAULT_VAL_NEGATIVES` uniform negative per
            positive from the training catalog, from the rebuilt state, all epochs).
        checkpoints: the checkpoint folder and the run to resume (``None``: no files, a new run).
        spec: extra entries of the training specification (e.g. the CLI's sampler string).
        on_epoch: called with each epoch's history record, after its checkpoints are written, and
            ``val_names``: each measured validation metric's name with its protocol (:func:`val_names`).
        verbose: print each epoch's :func:`epoch_line` (loss, validation metrics named with their protocol, time)
            to standard output, on rank 0 of a distributed run; ``False``: quiet.
        distributed: this process is one rank of the default ``torch.distributed`` group:
            training is data-parallel (:func:`~tgeval.training.train.train_epoch`), validation is
            sharded (:func:`~tgeval.eval.engine.evaluate`), both identical on every rank, so
            every rank takes the same early-stopping decisions; rank 0 alone writes the
            checkpoints and ``timings.json`` (the returned ``checkpoints`` is ``None`` on the others). A
            ``resume`` file is read by every rank.

    Returns:
        dict: ``model`` (registry name or class name), ``training`` (the specification),
        ``val_metric``, ``best_epoch``, ``best_value``, ``epochs_run``, ``stopped_early``,
        ``history`` (per epoch: ``epoch``, ``loss``, ``events_per_second``, ``seconds``,
        ``num_batches``, ``num_events``, ``seed``, ``sampler`` — the training sampler's counts
        over the epoch (:func:`~tgeval.samplers.base.split_counters`) —, ``val`` — every
        :data:`VAL_METRICS` measured, named in ``training["validation"]["names"]`` —,
        ``val_seconds``, ``val_events_per_second``, ``improved``), ``resumed_from`` and
        ``checkpoints`` (paths and sha256 of ``last`` / ``best``).

    Raises:
        ProtocolError: ``epochs < 1`` (a :class:`Validation` and a :class:`~tgeval.training.train.Recipe` check
            themselves when built).
        ModelCapabilityError: ``validation.catalog`` for a model that cannot rank a whole catalog.
        CheckpointError: a checkpoint folder or ``resume`` with an unregistered model, or a
            ``resume`` file written for other data, another model or another specification.
        OutputPathError: the checkpoint folder cannot be written, holds another run (see
            :func:`check_new_run`) or is being written by another process (:func:`checkpoint_lock`, held for the
            whole run); checked before the first epoch.
        LeakageError: another thread is in a pass on the same model object (:func:`~tgeval.stream.state.exclusive`).
    """
    if validation.catalog is not None and not model.capabilities.ranks_all_entities:
        raise ModelCapabilityError(f"{type(model).__name__} ({model.describe()}) cannot rank a whole catalog: validate "
                                   f"it with Validation(catalog=None) and a sampled Validation.metric.")
    if epochs < 1:
        raise ProtocolError(f"epochs must be >= 1, got {epochs}.")
    validation = validation.resolved(model, data, split)
    if distributed:
        require_group()
    writes = not distributed or is_main()
    checkpoints = Checkpointing() if checkpoints is None else checkpoints
    resume, checkpoint_dir = checkpoints.resume, checkpoints.folder
    with checkpoint_lock(checkpoints) if writes else nullcontext():
        if checkpoint_dir is not None:
            check_new_run(checkpoint_dir, resume=resume, overwrite=checkpoints.overwrite)
        # a replaced run's files go with the first files of this one: none may stay beside them
        replaced = checkpoint_dir is not None and checkpoints.overwrite and not _continues(checkpoint_dir, resume)
        name = model_name(model) if checkpoint_dir is not None or resume is not None else type(model).__name__
        neural = cast(NeuralLinkModel, model)  # registered (checked above) wherever checkpoints are used
        val_history = validation_history(model, recipe.history)
        training = _spec(recipe, optimizer, validation, val_history=val_history, epochs=epochs, extra=spec or {})
        data_fingerprint = fingerprint(data)

        records: list[dict] = []
        stopping = EarlyStopping(validation.patience)
        best_parameters: Optional[dict] = None
        start = 0
        if resume is not None:
            resume = _resume_file(resume)
            records, stopping, best_parameters, start = _resume(resume, neural, optimizer, training, data_fingerprint,
                                                                validation.patience)
        model.checkpoint_record = None  # a loaded checkpoint's record describes other parameters once trained

        folder = None if checkpoint_dir is None or not writes else Path(checkpoint_dir)
        files: dict[str, dict] = {}
        for epoch in range(start, epochs):
            if stopping.stopped:
                break
            model.train()  # the same mode every epoch, whatever the caller or a resume left
            stats = train_epoch(model, data, split.train, recipe=recipe, optimizer=optimizer, epoch=epoch,
                                distributed=distributed)
            # the epoch's training, before validation may reset it
            counts = split_counters(recipe.sampler.describe())[1]
            trained_state = model.snapshot() if folder is not None else None  # history = the training segment only
            # the epoch's parameters as a resume restores them (with the training state, not validation's): a model
            # whose own state methods keep its state in buffers has them in parameters_of
            trained = clone_state(parameters_of(model))
            model.eval()  # no dropout anywhere in validation, evaluate's warm-up (history through update) included
            result = evaluate(model, data, split.val,
                              validation.protocol(batch_size=recipe.batch_size, seed=recipe.seed, history=val_history),
                              sampler=validation.sampler, catalog=validation.catalog, distributed=distributed)
            measured = val_metrics(result)
            improved = stopping.step(epoch, measured.get(validation.metric))
            if improved:
                best_parameters = trained
            record = {"epoch": epoch, **stats, "sampler": counts, "val": measured,
                      "val_seconds": result.performance["seconds"],
                      "val_events_per_second": result.performance["events_per_second"], "improved": improved}
            records.append(json_safe(record))
            # every rank's generators (its own dropout stream): one gather, on every rank
            rngs = gather_objects(rng_state()) if distributed and checkpoint_dir is not None else None
            if folder is not None:
                for stale in RUN_FILES if replaced else ():
                    (folder / stale).unlink(missing_ok=True)
                replaced = False
                for kind in ("best", "last") if improved else ("last",):
                    path = folder / f"{kind}.pt"
                    digest = save_checkpoint(path, neural, optimizer, epoch=epoch, data=data_fingerprint,
                                             early_stopping=stopping.to_dict(), history=_untimed(records),
                                             training=training,
                                             best_parameters=None if improved else best_parameters,
                                             state=trained_state, state_training=True, rng=rngs,
                                             trained_on=split.train)
                    files[kind] = {"path": str(path), "sha256": digest}
                with full_disk_refused(folder / TIMINGS_FILE, resume_advice(folder)):
                    write_atomic(folder / TIMINGS_FILE, json.dumps(_timings(records), indent=1))
            named = {**records[-1], "val_names": training["validation"]["names"]}
            if verbose and writes:
                print(epoch_line(named), flush=True)
            if on_epoch is not None:
                on_epoch(named)

        if best_parameters is not None:
            load_parameters(model, best_parameters)
        checked_reset(model)
        model.eval()
        return {
            "model": name,
            "training": training,
            "val_metric": validation.metric,
            "best_epoch": stopping.epoch,
            "best_value": stopping.value,
            "epochs_run": len(records),
            "stopped_early": stopping.stopped and len(records) < epochs,
            "history": records,
            "resumed_from": None if resume is None else str(resume),
            "checkpoints": files or None,
        }
