"""Device idioms: one explicit host read, compaction to a known size, deterministic CUDA kernels.

On a GPU, an operator whose output shape depends on the data (``nonzero``, ``unique``,
boolean-mask indexing) makes the host wait for the device, and so does turning a tensor into
a Python number. The hot paths avoid both: where a size is unavoidable they compute every
size they need on the device, read them in one :func:`host_ints` call, and then compact with
:func:`positions`, whose output size is given. :func:`host_ints` is annotated for the
profiler (``tgeval.host_read``) so that benchmarks count these reads with the others.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import torch
from torch import Tensor
from torch.profiler import record_function

from tgeval.errors import DeviceError

__all__ = ["host_ints", "positions", "deterministic", "device_of", "HOST_READ"]

#: profiler range of every :func:`host_ints` call
HOST_READ = "tgeval.host_read"


def device_of(name: str) -> torch.device:
    """``torch.device(name)``, checked to exist on this machine before any work is done.

    Raises:
        DeviceError: an unknown device string, CUDA without a CUDA device, an index beyond
            the devices present (the message names the devices there are), ``meta`` (its
            tensors hold no values) or a backend this build of torch cannot use.
    """
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise DeviceError(f"{name!r} is not a device name; use 'cpu' or 'cuda[:index]'.") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise DeviceError(f"--device {name}: this machine has no usable CUDA device "
                              f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); use --device cpu.")
        if device.index is not None and device.index >= count:
            raise DeviceError(f"--device {name}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}.")
    elif device.type == "meta":
        raise DeviceError(f"--device {name}: meta tensors hold shapes but no values, so nothing can be computed "
                          f"on them; use --device cpu or cuda.")
    elif device.type != "cpu":
        try:
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DeviceError(f"--device {name} is not usable on this machine ({first}); use --device cpu.") from None
    return device


def host_ints(*values: Tensor) -> list[int]:
    """The integer scalars ``values`` on the host, in one device-to-host copy (one sync)."""
    if not values:
        return []
    with record_function(HOST_READ):
        return torch.stack([value.reshape(()) for value in values]).tolist()


def positions(mask: Tensor, count: int) -> Tensor:
    """Indices of the ``True`` entries of a 1-D ``mask``, ascending, when their number ``count``
    is known on the host: int64 ``[count]``, a fixed-shape ``nonzero``.

    Example:
        >>> positions(torch.tensor([False, True, True, False]), 2)
        tensor([1, 2])
    """
    return torch.nonzero_static(mask, size=count).view(-1)


@contextmanager
def deterministic(enabled: bool = True) -> Iterator[None]:
    """Run the block with PyTorch's deterministic kernels, restoring the previous setting after.

    On a CPU, evaluation is bitwise reproducible anyway, and :func:`~tgeval.training.train.train_epoch`
    enters this block itself (with two or more threads, the backward of indexing adds in thread
    order without it). On CUDA, float sums through
    ``scatter_add`` / ``index_add`` (TGN's and DyRep's attention softmax and aggregation, the
    mean of a node's messages) use atomics whose order varies between runs, so two runs from
    the same state give scores that agree to about 1e-7 relative (inside every neural model's
    ``tie_tolerance``, so ranks agree unless a candidate lies on the band's edge). Inside this
    block ``torch.use_deterministic_algorithms(True, warn_only=True)`` selects the sort-based
    kernels for those operations, and repeated runs are bit-identical, at some cost in speed;
    an operation without a deterministic kernel warns. ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` is
    set when unset (cuBLAS needs it for reproducible matrix products).

    Example:
        >>> with deterministic():                      # doctest: +SKIP
        ...     result = tgeval.evaluate(model, data, split.test, catalog=catalog)
    """
    previous = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
