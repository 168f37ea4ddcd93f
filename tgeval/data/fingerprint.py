"""Content hashes of event arrays and of negatives (SPEC §11)."""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

__all__ = ["fingerprint", "tensor_checksum"]


def _update(digest: "hashlib._Hash", name: str, value: Tensor) -> None:
    value = value.detach().cpu().contiguous()
    header = f"{name}:{value.dtype}:{tuple(value.shape)};".encode()
    digest.update(header)
    digest.update(value.numpy().tobytes())


def tensor_checksum(*tensors: Tensor) -> str:
    """``"sha256:<hex>"`` of the dtypes, shapes and bytes of ``tensors``, in order."""
    digest = hashlib.sha256(b"tgeval-tensors-v1;")
    for i, value in enumerate(tensors):
        _update(digest, str(i), value)
    return f"sha256:{digest.hexdigest()}"


def fingerprint(data: TemporalData) -> str:
    """``"sha256:<hex>"`` of a stream's ``src``, ``dst``, ``t`` and, if present, ``msg``.

    The hash covers the event order, so two files with the same events in a different
    order (or with different timestamp dtypes) have different fingerprints.
    """
    digest = hashlib.sha256(b"tgeval-events-v1;")
    for key in ("src", "dst", "t", "msg"):
        value = getattr(data, key, None)
        if value is not None:
            _update(digest, key, torch.as_tensor(value))
    return f"sha256:{digest.hexdigest()}"
