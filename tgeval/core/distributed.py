r"""Process-group plumbing for evaluation and training on several processes (``torch.distributed``).

``torchrun`` starts ``W`` processes, each with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` in its environment; :func:`init_from_env` turns them into the default process
group (gloo for CPU tensors, NCCL for CUDA ones). Sharded evaluation
(``evaluate(..., distributed=True)``) replays every event on every rank and splits only the
catalog: rank ``r`` of ``W`` owns the contiguous candidate range :func:`shard` of the
available prefix, and the per-rank counts are summed with one ``all_reduce``. Data-parallel
training (``train_epoch(..., distributed=True)``) splits each batch's events the same way and
sums the gradients with one ``all_reduce`` per batch (:func:`sum_gradients`).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Optional

import torch
import torch.distributed as dist
from torch import nn

from tgeval.errors import DistributedError

__all__ = ["init_from_env", "launched", "local_device", "refuse_launch", "shard", "is_main", "rank_and_world",
           "require_group", "gather_objects", "check_same", "state_digest", "sum_gradients"]

#: the variables ``torchrun`` sets for every process; all present means "launched distributed"
LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def launched() -> bool:
    """Whether this process was started by ``torchrun`` (every :data:`LAUNCH_VARIABLES` is set)."""
    return all(name in os.environ for name in LAUNCH_VARIABLES)


def local_device(device: torch.device) -> torch.device:
    """The device of this process: under ``torchrun``, ``cuda`` without an index becomes
    ``cuda:$LOCAL_RANK`` (one GPU per process, as NCCL needs); anything else is kept."""
    if launched() and device.type == "cuda" and device.index is None:
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return device


def refuse_launch(command: str) -> None:
    """Raise :class:`~tgeval.errors.DistributedError` when ``command`` (one that has no sharded
    form) was started by ``torchrun``: its ranks would repeat the work and race on its files."""
    if launched() and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise DistributedError(f"`tgeval {command}` runs in one process; only `tgeval evaluate` and `tgeval train` "
                               f"run under torchrun. Run `tgeval {command} ...` without torchrun.")


def init_from_env(device: Optional[torch.device] = None) -> bool:
    """Initialise the default process group from ``torchrun``'s environment, once.

    The backend follows the device the tensors live on: ``"nccl"`` for CUDA, ``"gloo"``
    otherwise. Does nothing (and returns ``False``) in a process that was not launched
    distributed; a group that is already initialised is kept.

    Returns:
        bool: whether this process is part of an initialised process group.
    """
    if dist.is_available() and dist.is_initialized():
        return True
    if not launched():
        return False
    if not dist.is_available():
        raise DistributedError("this PyTorch build has no torch.distributed: evaluate in one process "
                               "(drop torchrun) or install a build with distributed support.")
    backend = "nccl" if device is not None and device.type == "cuda" else "gloo"
    dist.init_process_group(backend=backend)
    return True


def require_group() -> None:
    """Raise :class:`~tgeval.errors.DistributedError` unless a default process group exists."""
    if not (dist.is_available() and dist.is_initialized()):
        raise DistributedError("distributed=True needs an initialised process group: launch with torchrun "
                               "(`torchrun --nproc-per-node N -m tgeval evaluate ...`) or call "
                               "torch.distributed.init_process_group first.")


def rank_and_world() -> tuple[int, int]:
    """``(rank, world size)`` of the default group; ``(0, 1)`` without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main() -> bool:
    """Whether this process is rank 0 (or the only process): the one that prints and writes files."""
    return rank_and_world()[0] == 0


def shard(n: int, rank: int, world: int) -> tuple[int, int]:
    r"""The contiguous range ``[start, stop)`` of ``n`` items that ``rank`` of ``world`` owns.

    .. math::
        \mathrm{start}_r = \lfloor n r / W \rfloor, \qquad \mathrm{stop}_r = \mathrm{start}_{r + 1}

    so the ranges of ranks ``0 .. W - 1`` are disjoint, in order, cover ``[0, n)`` exactly,
    and their sizes differ by at most one (a rank owns nothing when ``n < W`` and
    ``n r / W`` and ``n (r + 1) / W`` fall between the same integers).

    Example:
        >>> [shard(5, r, 3) for r in range(3)]
        [(0, 1), (1, 3), (3, 5)]
    """
    if world < 1 or not 0 <= rank < world:
        raise DistributedError(f"rank must lie in [0, world) with world >= 1, got rank={rank}, world={world}.")
    if n < 0:
        raise DistributedError(f"n must be >= 0, got {n}.")
    return n * rank // world, n * (rank + 1) // world


def gather_objects(value: Any) -> list[Any]:
    """Every rank's ``value`` (picklable), in rank order, on every rank: one ``all_gather_object``."""
    values: list = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def check_same(what: str, value: Any) -> None:
    """Raise :class:`~tgeval.errors.DistributedError` on every rank unless all ranks hold an
    equal ``value`` (a picklable summary; one ``all_gather_object``)."""
    values = gather_objects(value)
    different = [r for r, v in enumerate(values) if v != values[0]]
    if different:
        raise DistributedError(f"ranks disagree on {what}: rank {different[0]} has {values[different[0]]!r}, "
                               f"rank 0 has {values[0]!r}. Every rank must replay the same data with the same "
                               f"model and options (load the same checkpoint, seed the same way).")


def state_digest(model: nn.Module) -> str:
    """sha256 of every parameter and buffer of ``model`` (names, dtypes, shapes and bytes)."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        if not isinstance(tensor, torch.Tensor):
            continue
        value = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{value.dtype}:{tuple(value.shape)}".encode())
        digest.update(value.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def sum_gradients(params: list[torch.Tensor], extra: torch.Tensor) -> torch.Tensor:
    r"""Replace each parameter's gradient by its sum over the ranks, in one ``all_reduce``.

    With every rank's loss a part :math:`L_r` of the batch loss :math:`L = \sum_r L_r`, the
    summed gradients are :math:`\nabla L` (up to the order of the sum). A parameter whose
    gradient is ``None`` on every rank (unused by the whole batch) keeps ``None``, so that an
    optimizer skips it as it would in one process; one that some rank used gets zeros added
    elsewhere. ``extra`` (a scalar, e.g. the loss) is summed in the same call and returned.
    All parameters share one floating dtype. Nothing is read back to the host unless this rank
    left some parameter without a gradient.
    """
    dtype = params[0].dtype if params else extra.dtype
    missing = [i for i, p in enumerate(params) if p.grad is None]  # unused here: maybe by every rank
    used = torch.ones(len(params), dtype=dtype, device=extra.device)
    used[missing] = 0
    grads = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
    flat = torch.cat([*grads, used, extra.detach().reshape(1).to(dtype)])
    dist.all_reduce(flat)
    # a parameter used here was used somewhere: only the ones missing here need the summed flags (a host read)
    counts = flat[-1 - len(params):-1][missing].tolist() if missing else []
    unused = {i for i, count in zip(missing, counts) if count == 0}
    offset = 0
    for i, p in enumerate(params):
        p.grad = None if i in unused else flat[offset:offset + p.numel()].view_as(p).clone()
        offset += p.numel()
    return flat[-1].to(extra.dtype)
