r"""Training checkpoints of the neural models: everything needed to resume or to evaluate.

A checkpoint holds the model's registry name and the fields of its ``config``, its parameters
(``state_dict`` without the state's buffers, :func:`~tgeval.stream.state.parameters_of`), the
optimizer's state, the model's state snapshot (memory, pending messages, neighbour buffers), the
random-number states (torch CPU, CUDA when present, Python ``random``, NumPy), the epoch, the
early-stopping bookkeeping, the training history and specification, the fingerprint of the data
it was trained on and the package versions.

File layout: one header line ``TGEVAL-CHECKPOINT 2 sha256:<hex of the rest>`` followed by
the bytes of ``torch.save`` of a dict of tensors and plain values. The header's checksum
detects truncated or modified files; the payload is read with ``torch.load(...,
weights_only=True)``, so loading a checkpoint never runs pickled code. Files are written
atomically (:func:`~tgeval.core.atomic.write_atomic`).

Example::

    save_checkpoint("run/last.pt", model, optimizer, epoch=3, data=data)
    ckpt = load_checkpoint("run/last.pt", data=data)   # raises CheckpointError for other data
    model = ckpt.model                                   # rebuilt, parameters and state restored
    optimizer = torch.optim.Adam(model.parameters()); optimizer.load_state_dict(ckpt.optimizer)
    ckpt.restore_rng()                                   # dropout streams continue where they stopped
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import io
import os
import pickle
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import torch
from torch.optim import Optimizer
from torch_geometric.data import TemporalData

from tgeval.core.atomic import (CHECKPOINT_MAGIC, check_input_file, full_disk_refused, json_safe, refused_payload,
                           sha256_of, write_atomic)
from tgeval.data.hashing import fingerprint
from tgeval.data.split import Segment
from tgeval.core.distributed import rank_and_world
from tgeval.errors import CheckpointError
from tgeval.eval.result import Nullable, schema_mismatch
from tgeval.models import registry
from tgeval.models.neural import NeuralLinkModel
from tgeval.core.provenance import versions
from tgeval.stream.state import State, load_parameters, parameters_of, restore_detached

__all__ = ["Checkpoint", "save_checkpoint", "load_checkpoint", "model_name", "seed_all",
           "rng_state", "set_rng_state", "resume_advice"]

FORMAT_VERSION = 2  # 2: the generator states of every process (1: of one)


def model_name(model: torch.nn.Module) -> str:
    """Registry name of ``model``'s exact class, a neural model (:mod:`tgeval.models.registry`).

    Raises:
        CheckpointError: for a class that is not registered with a config.
    """
    try:
        name = registry.name_of(model)
    except ValueError as error:
        raise CheckpointError(f"{error} Only registered models can be checkpointed.") from None
    if registry.entry(name).config is None:
        raise CheckpointError(f"{name!r} is a heuristic: it has no parameters to checkpoint. Evaluate it with "
                              f"`tgeval evaluate --model {name}`.")
    return name


def _rebuild(name: str, config: dict) -> NeuralLinkModel:
    """The model ``name`` built from a checkpoint's ``config``. A config saved before models measured
    time from the stream's start (no ``time_origin``) is rebuilt with ``time_origin="zero"``, the
    time encoding it was trained with."""
    try:
        if "time_origin" in registry.options(name) and "time_origin" not in config:
            config = {**config, "time_origin": "zero"}
        return registry.build(name, **config)
    except ValueError as error:
        raise CheckpointError(f"cannot rebuild the checkpoint's model {name!r} from config {config}: {error}") from None


# -- random-number states ------------------------------------------------------------
def seed_all(seed: int) -> None:
    """Seed torch (CPU and CUDA), Python's ``random`` and NumPy's global generator with ``seed``,
    so that runs in separate processes (the command line's) save the same generator states."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def rng_state() -> dict:
    """States of torch's CPU (and, when available, CUDA) generators, Python's ``random`` and NumPy's."""
    numpy_state = np.random.get_state(legacy=False)
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        "numpy": {"bit_generator": numpy_state["bit_generator"],
                  "key": torch.from_numpy(numpy_state["state"]["key"].astype(np.int64)),
                  "pos": int(numpy_state["state"]["pos"]), "has_gauss": int(numpy_state["has_gauss"]),
                  "gauss": float(numpy_state["gauss"])},
    }


def set_rng_state(state: dict) -> None:
    """Restore the generators saved by :func:`rng_state` (CUDA only when both sides have it)."""
    torch.set_rng_state(state["torch"].cpu())
    if state["cuda"] and torch.cuda.is_available():
        saved = [s.cpu() for s in state["cuda"]]
        for device in range(min(len(saved), torch.cuda.device_count())):
            torch.cuda.set_rng_state(saved[device], device)
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy_state = state["numpy"]
    np.random.set_state({"bit_generator": numpy_state["bit_generator"],
                         "state": {"key": numpy_state["key"].numpy().astype(np.uint32), "pos": numpy_state["pos"]},
                         "has_gauss": numpy_state["has_gauss"], "gauss": numpy_state["gauss"]})


# -- files -----------------------------------------------------------------------------
def resume_advice(folder: Union[str, os.PathLike]) -> str:
    """What to do when a run's checkpoint folder could not be written: its last complete epoch is on disk."""
    return f"Free space, then resume the run from its last complete epoch, {Path(folder) / 'last.pt'} (--resume)."


def _plain(value: Any) -> Any:
    """A JSON-like value rebuilt through JSON, so that its pickled bytes depend on its contents only
    (pickle shares repeated objects: the same keys read back from a checkpoint and written by a
    literal would otherwise pickle differently)."""
    return json.loads(json.dumps(json_safe(value)))


def _data_fingerprint(data: Union[TemporalData, str]) -> str:
    return data if isinstance(data, str) else fingerprint(data)


def save_checkpoint(
    path: Union[str, os.PathLike],
    model: NeuralLinkModel,
    optimizer: Optional[Optimizer],
    *,
    epoch: int,
    data: Union[TemporalData, str],
    early_stopping: Optional[dict] = None,
    history: Optional[list] = None,
    training: Optional[dict] = None,
    best_parameters: Optional[dict] = None,
    state: Optional[State] = None,
    state_training: Optional[bool] = None,
    rng: Optional[list] = None,
    trained_on: Optional[Segment] = None,
) -> str:
    """Write a checkpoint of ``model`` (and ``optimizer``) atomically; return the file's ``"sha256:<hex>"``.

    Args:
        path: the file to write (folders are created).
        model: a registered neural model (:mod:`tgeval.models.registry`); its parameters, ``config`` and state
            snapshot are saved.
        optimizer: its ``state_dict`` is saved (``None``: no optimizer state).
        epoch: index of the last completed epoch.
        data: the training stream or its :func:`~tgeval.data.hashing.fingerprint`.
        early_stopping: bookkeeping of early stopping (JSON-like values).
        history: per-epoch records so far.
        training: the training specification (sampler, loss, ``K``, lr, batch size, seed, ...).
        best_parameters: the best epoch's parameters (:func:`~tgeval.stream.state.parameters_of`) when
            they are not ``model``'s own.
        state: the state snapshot to store (default ``model.snapshot()``); :func:`~tgeval.training.fitting.fit`
            stores the state at the end of the epoch's training, before any validation event.
        state_training: whether ``state`` was taken in training mode (default: ``model``'s mode
            now). Loading restores it in that mode before switching to eval mode, so a module
            that changes its state on the switch (PyG's ``TGNMemory`` applies its pending
            messages) does so exactly once, as it would have in the run.
        rng: the generator states (:func:`rng_state`) of every process of the run, in rank
            order (:func:`~tgeval.training.fitting.fit` gathers them under ``torch.distributed``);
            default: this process's alone.
        trained_on: the segment the parameters were trained on (:func:`~tgeval.training.fitting.fit` gives
            ``split.train``): its events and times are recorded, and :func:`~tgeval.eval.engine.evaluate` refuses
            a segment that overlaps them. ``None``: not recorded, and ``evaluate`` refuses the checkpoint's model
            unless told (``allow_trained_events=True``).
    """
    payload = {
        "format_version": FORMAT_VERSION,
        "model": {"name": model_name(model), "config": _plain(dataclasses.asdict(model.config))},
        "parameters": parameters_of(model),
        "best_parameters": best_parameters,
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "state": model.snapshot() if state is None else state,
        "state_training": bool(model.training if state_training is None else state_training),
        "as_built": model.as_built(),  # parameters never trained: a model loaded from it warns when evaluated
        "rng": [rng_state()] if rng is None else rng,
        "epoch": int(epoch),
        "early_stopping": _plain(early_stopping or {}),
        "history": _plain(history or []),
        "training": _plain(training or {}),
        "data_fingerprint": _data_fingerprint(data),
        "versions": versions(),
        "trained_on": None if trained_on is None else _plain(trained_on.to_dict()),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()
    header = CHECKPOINT_MAGIC + f" {FORMAT_VERSION} sha256:{hashlib.sha256(body).hexdigest()}\n".encode()
    content = header + body
    with full_disk_refused(path, resume_advice(Path(path).parent)):
        write_atomic(path, content)
    return sha256_of(content)


@dataclass
class Checkpoint:
    """A loaded checkpoint.

    Attributes:
        model: the rebuilt model, with the saved parameters and state snapshot.
        name: its registry name.
        optimizer: the optimizer's ``state_dict`` (``None`` if none was saved); load it with
            ``optimizer.load_state_dict``.
        rng: generator states (:func:`rng_state`) of each process of the run, in rank order (one
            in a single process); :meth:`restore_rng` applies this process's.
        epoch: last completed epoch.
        early_stopping, history, training: as given to :func:`save_checkpoint`.
        best_parameters: the best epoch's parameters when they differ from ``model``'s.
        data_fingerprint: fingerprint of the training stream.
        versions: package versions at save time.
        path: the file read; sha256: ``"sha256:<hex>"`` of its bytes.
        trained_on: the training segment's record (``start``, ``end``, ``t_first``, ``t_last``, ...), ``None``
            when the file does not record it (written before tgeval did, or without ``trained_on``).
    """

    model: NeuralLinkModel
    name: str
    optimizer: Optional[dict]
    rng: list
    epoch: int
    early_stopping: dict
    history: list
    training: dict
    best_parameters: Optional[dict]
    data_fingerprint: str
    versions: dict
    path: str
    sha256: str
    trained_on: Optional[dict] = None

    def restore_rng(self) -> None:
        """Set every random-number generator of this process to its state at save time: under
        ``torch.distributed``, rank ``r`` takes rank ``r``'s (each rank's dropout stream is its own).

        Raises:
            CheckpointError: the run had another number of processes.
        """
        rank, world = rank_and_world()
        if len(self.rng) != world:
            raise CheckpointError(f"{self.path} holds the generator states of a run of {len(self.rng)} process(es), "
                                  f"this one has {world}: resume it with as many (torchrun --nproc-per-node "
                                  f"{len(self.rng)}, or one process for 1), else the run would not be the same.")
        try:
            set_rng_state(self.rng[rank])
        except (RuntimeError, ValueError, TypeError, KeyError) as error:
            raise CheckpointError(f"{self.path} holds generator states that cannot be restored ({error}): it was "
                                  f"edited or written by another version. Resume from another checkpoint of the run "
                                  f"(best.pt / last.pt), or train again.") from None

    def describe(self) -> dict:
        """What a result manifest records about the checkpoint: file, model, epoch, the training
        specification (sampler and options, loss, ``K``, epochs, seed, validation protocol), the
        training sampler's counts over the checkpoint's epoch (``sampler_counts``; ``None`` when
        its history lacks them), the data fingerprint, the training segment (``trained_on``; ``None``:
        not recorded), early stopping and versions."""
        record = next((r for r in self.history if r.get("epoch") == self.epoch), {})
        return {"path": self.path, "sha256": self.sha256, "model": self.name,
                "config": dataclasses.asdict(self.model.config),
                "epoch": self.epoch, "training": self.training, "sampler_counts": record.get("sampler"),
                "data_fingerprint": self.data_fingerprint, "trained_on": self.trained_on,
                "early_stopping": self.early_stopping, "versions": self.versions}


#: what a checkpoint payload holds, by type (:func:`~tgeval.eval.result.schema_mismatch`), checked before any is used
PAYLOAD_SCHEMA = {
    "model": {"name": str, "config": dict}, "parameters": dict, "best_parameters": Nullable(dict),
    "optimizer": Nullable(dict), "epoch": int, "early_stopping": dict, "history": [dict], "training": dict,
    "data_fingerprint": Nullable(str), "versions": dict, "?state_training": bool, "?as_built": bool,
    "?trained_on": Nullable(dict),
    "rng": [{"torch": torch.Tensor, "cuda": list, "python": tuple,
             "numpy": {"bit_generator": str, "key": torch.Tensor, "pos": int, "has_gauss": int, "gauss": float}}]}
#: the entries every checkpoint payload holds (``state_training``, ``as_built`` and ``trained_on`` are optional: older
#: files lack them)
PAYLOAD_KEYS = ("model", "parameters", "best_parameters", "optimizer", "state", "rng", "epoch", "early_stopping",
                "history", "training", "data_fingerprint", "versions")


def _read(path: str, map_location: Union[str, torch.device, None]) -> tuple[dict, str]:
    check_input_file(path, what="checkpoint")
    with open(path, "rb") as handle:
        content = handle.read()
    header, newline, body = content.partition(b"\n")
    parts = header.split(b" ")
    if not newline or len(parts) != 3 or parts[0] != CHECKPOINT_MAGIC or not parts[2].startswith(b"sha256:"):
        raise CheckpointError(f"{path} is not a tgeval checkpoint (no checkpoint header). Give a file written by "
                              f"`tgeval train --checkpoint-dir` or tgeval.training.checkpoint.save_checkpoint.")
    if parts[1] != str(FORMAT_VERSION).encode():
        raise CheckpointError(f"{path} has checkpoint format {parts[1].decode(errors='replace')}, this tgeval "
                              f"reads format {FORMAT_VERSION}. Load it with the tgeval version that wrote it.")
    if hashlib.sha256(body).hexdigest().encode() != parts[2][len(b"sha256:"):]:
        raise CheckpointError(f"{path} is corrupted: its content does not match its checksum (truncated or "
                              f"modified). Use another checkpoint of the run (last.pt / best.pt) or train again.")
    try:
        payload = torch.load(io.BytesIO(body), map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:  # torch's safe loader refused it: never suggest loading it unsafely
        raise CheckpointError(f"{path} {refused_payload(error, 'a tgeval checkpoint')}. Check where the file came "
                              f"from: a checkpoint of `tgeval train --checkpoint-dir` holds tensors and plain values "
                              f"only. Use one you wrote, or train again.") from None
    except Exception as error:  # torch raises several types for unreadable archives
        raise CheckpointError(f"{path} passed its checksum but torch cannot read it ({error}). If it was saved "
                              f"on another device, pass map_location (the CLI's --device); else load it with the "
                              f"torch / tgeval versions that wrote it, or train again.") from error
    missing = [key for key in PAYLOAD_KEYS if not isinstance(payload, dict) or key not in payload]
    if not missing and not (isinstance(payload["model"], dict) and {"name", "config"} <= payload["model"].keys()):
        missing = ["model.name / model.config"]
    if missing:
        raise CheckpointError(f"{path} passed its checksum but lacks {', '.join(missing)}: it was not written by "
                              f"tgeval.training.checkpoint.save_checkpoint (or by a version with another layout). "
                              f"Use a checkpoint of `tgeval train --checkpoint-dir`, or train again.")
    wrong = schema_mismatch(payload, PAYLOAD_SCHEMA, "checkpoint")
    if wrong:
        raise CheckpointError(f"{path} passed its checksum but {wrong}: it was not written by "
                              f"tgeval.training.checkpoint.save_checkpoint (or was edited and its checksum "
                              f"recomputed). Use a checkpoint of `tgeval train --checkpoint-dir`, or train again.")
    return payload, sha256_of(content)


def load_checkpoint(
    path: Union[str, os.PathLike],
    map_location: Union[str, torch.device, None] = None,
    *,
    data: Union[TemporalData, str, None] = None,
    model: Optional[NeuralLinkModel] = None,
) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Args:
        path: the file.
        map_location: device of the loaded tensors and model (default: as saved).
        data: the stream (or its fingerprint) the checkpoint will be used with; it must be
            the one it was trained on.
        model: load into this model (same registered class and ``config``) instead of
            building a new one.

    Returns:
        Checkpoint: with the model's parameters and state snapshot restored, in eval mode
        (the random generators are not touched; call :meth:`Checkpoint.restore_rng`). The
        model carries the checkpoint's :meth:`Checkpoint.describe` as ``model.checkpoint_record``
        (:attr:`~tgeval.models.base.TemporalLinkModel.checkpoint_record`): the provenance a result of it records.

    Raises:
        InputPathError: no such file, a folder, or no regular file (a pipe, a device).
        CheckpointError: not a checkpoint, corrupted, unknown model, other data, or a
            ``model`` of another class / configuration.
    """
    path = os.fspath(path)
    payload, digest = _read(path, map_location)
    name, config = payload["model"]["name"], payload["model"]["config"]
    if data is not None:
        expected = _data_fingerprint(data)
        if payload["data_fingerprint"] != expected:
            raise CheckpointError(f"{path} was trained on other data (fingerprint {payload['data_fingerprint']}, "
                                  f"this data {expected}). Use it with the data it was trained on (same file and "
                                  f"reader options), or train a checkpoint on this data.")
    if model is None:
        model = _rebuild(name, config)
        if map_location is not None:
            model = model.to(map_location)
    elif model_name(model) != name or _plain(dataclasses.asdict(model.config)) != config:
        raise CheckpointError(f"{path} holds a {name!r} model with config {config}, not the given "
                              f"{model_name(model)!r} with {model.config}. Build the model with the checkpoint's "
                              f"config, or start a fresh run.")
    model.train(payload.get("state_training", True))  # the mode the state was taken in (tgeval's models: no effect)
    try:
        load_parameters(model, payload["parameters"])
        restore_detached(model, payload["state"])
    except (RuntimeError, KeyError, ValueError, TypeError, AttributeError) as error:
        said = (f"it holds no state of part {error}" if isinstance(error, KeyError) else
                " ".join(str(error).replace("Error(s) in loading state_dict for", "").split()).rstrip("."))
        raise CheckpointError(f"{path} passed its checksum but its parameters or state do not fit the {name!r} model "
                              f"its config describes (num_nodes={config.get('num_nodes')}): "
                              f"{said if len(said) <= 300 else said[:300] + ' ...'}. It was edited, or written by "
                              f"another version of the model: use a checkpoint of `tgeval train --checkpoint-dir`, "
                              f"or train again.") from None
    model.eval()
    if payload.get("as_built", False):  # optional: older files lack it
        model.mark_as_built()
    checkpoint = Checkpoint(model=model, name=name, optimizer=payload["optimizer"], rng=payload["rng"],
                            epoch=payload["epoch"], early_stopping=payload["early_stopping"],
                            history=payload["history"], training=payload["training"],
                            best_parameters=payload["best_parameters"], data_fingerprint=payload["data_fingerprint"],
                            versions=payload["versions"], path=path, sha256=digest,
                            trained_on=payload.get("trained_on"))  # optional: older files lack it
    model.checkpoint_record = json_safe(checkpoint.describe())
    return checkpoint
