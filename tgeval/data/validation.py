"""Checks and canonicalisation of :class:`~torch_geometric.data.TemporalData` (docs/protocol.md §1, §12).

A canonical event stream has ``src``, ``dst`` int64 ``[E]`` with ids ``>= 0``, ``t``
int64 or float64 ``[E]``, finite and non-decreasing, and every other per-event field
(``msg``, labels, ...) with ``E`` rows. :func:`validate` returns such a stream or raises
:class:`~tgeval.errors.TemporalDataError` naming the problem and the fix.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.errors import TemporalDataError

__all__ = ["validate", "sort_by_time", "is_time_sorted", "permute_events"]

_EVENT_KEYS = ("src", "dst", "t")


def is_time_sorted(t: Tensor) -> bool:
    """Whether ``t`` (``[E]``) is non-decreasing."""
    return bool((t[1:] >= t[:-1]).all()) if t.numel() > 1 else True


def per_event_keys(data: TemporalData) -> list[str]:
    """The fields of ``data`` that hold one row per event (tensors whose first dimension is ``E``)."""
    num_events = data.t.numel()
    return [key for key, value in data.to_dict().items()
            if isinstance(value, Tensor) and value.dim() > 0 and value.size(0) == num_events]


def permute_events(data: TemporalData, perm: Tensor) -> TemporalData:
    """A copy of ``data`` with every per-event field (:func:`per_event_keys`) reordered by ``perm``."""
    per_event = set(per_event_keys(data))
    out = TemporalData()
    for key, value in data.to_dict().items():
        out[key] = value[perm] if key in per_event else value
    return out


def sort_by_time(data: TemporalData) -> TemporalData:
    """Stable sort of every per-event field by ``t``.

    Events that share a timestamp keep their file order (which carries no meaning:
    they are simultaneous, docs/protocol.md §2), so the result is reproducible.
    """
    return permute_events(data, torch.sort(data.t, stable=True).indices)


def _as_ids(name: str, value: Tensor) -> Tensor:
    if value.dtype.is_floating_point or value.dtype == torch.bool or value.is_complex():
        raise TemporalDataError(
            f"`{name}` must hold integer node ids, but has dtype {value.dtype}. "
            f"Convert it with `.long()` after checking the values are whole numbers."
        )
    value = value.long()
    if value.numel() and bool((value < 0).any()):
        first = int(torch.nonzero(value < 0)[0, 0])
        raise TemporalDataError(
            f"`{name}` must hold node ids >= 0, but {name}[{first}]={int(value[first])}. "
            f"Remap ids to [0, num_nodes) (e.g. `tgeval.data.read_events(..., remap=True)`)."
        )
    return value


def _as_times(t: Tensor) -> Tensor:
    if t.dtype == torch.bool or t.is_complex():
        raise TemporalDataError(f"`t` must be integer or float timestamps, but has dtype {t.dtype}.")
    if t.dtype in (torch.float16, torch.bfloat16):
        exact = round(2 / torch.finfo(t.dtype).eps)  # 2^(mantissa bits + 1): 2048 for float16, 256 for bfloat16
        raise TemporalDataError(f"`t` has dtype {t.dtype}, which holds whole numbers exactly only up to {exact}: "
                                f"the timestamps were rounded (events merged or reordered) before tgeval saw them. "
                                f"Build `t` as int64 (integer times) or float64 from the original values.")
    if t.dtype.is_floating_point:
        t = t.double()
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            first = int(torch.nonzero(bad)[0, 0])
            raise TemporalDataError(
                f"`t` must be finite, but t[{first}]={float(t[first])}. "
                f"Drop or repair events with missing timestamps before building the stream."
            )
        return t
    return t.long()


def validate(data: TemporalData, *, sort: bool = False, num_nodes: Optional[int] = None) -> TemporalData:
    """Return a canonical copy of ``data`` or raise :class:`TemporalDataError`.

    Args:
        data: events with ``src``, ``dst``, ``t`` ``[E]`` and optional per-event fields
            such as ``msg`` ``[E, d]``.
        sort: if ``t`` is not non-decreasing, stable-sort the events instead of raising.
        num_nodes: if given, every id must be ``< num_nodes``.

    Returns:
        TemporalData: ``src``/``dst`` int64, ``t`` int64 (integer input) or float64,
        sorted by ``t``; other fields unchanged. The input is not modified.
    """
    if not isinstance(data, TemporalData):
        raise TypeError(f"expected a torch_geometric.data.TemporalData, got {type(data).__name__}.")
    for key in _EVENT_KEYS:
        value = getattr(data, key, None)
        if value is None:
            raise TemporalDataError(f"`{key}` is missing: a TemporalData needs `src`, `dst` and `t`.")
        if not isinstance(value, Tensor) or value.dim() != 1:
            raise TemporalDataError(
                f"`{key}` must be a 1-D tensor [E], got "
                f"{tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__}."
            )
    lengths = {key: data[key].numel() for key in _EVENT_KEYS}
    if len(set(lengths.values())) != 1:
        raise TemporalDataError(
            f"`src`, `dst` and `t` must have equal lengths, got {lengths}. "
            f"Each event needs one source, one destination and one timestamp."
        )
    num_events = lengths["t"]
    if num_events == 0:
        raise TemporalDataError("the event stream is empty: there is nothing to batch, split or score.")

    out = TemporalData()
    for key, value in data.to_dict().items():
        out[key] = value
    out.src = _as_ids("src", data.src)
    out.dst = _as_ids("dst", data.dst)
    out.t = _as_times(data.t)

    msg = getattr(data, "msg", None)
    if msg is not None:
        if not isinstance(msg, Tensor) or msg.dim() != 2 or msg.size(0) != num_events:
            shape = tuple(msg.shape) if isinstance(msg, Tensor) else type(msg).__name__
            raise TemporalDataError(
                f"`msg` must be a 2-D tensor with one row per event [{num_events}, d], got {shape}. "
                f"Use shape [E, 0] (or omit `msg`) for data without event features."
            )
        if msg.dtype.is_floating_point and msg.numel() and not bool(torch.isfinite(msg).all()):
            row = int(torch.nonzero(~torch.isfinite(msg))[0, 0])
            raise TemporalDataError(
                f"`msg` must be finite, but row {row} holds NaN or inf. Impute or drop those features."
            )

    if num_nodes is not None:
        for key in ("src", "dst"):
            too_big = out[key] >= num_nodes
            if bool(too_big.any()):
                first = int(torch.nonzero(too_big)[0, 0])
                raise TemporalDataError(
                    f"`{key}` ids must be < num_nodes={num_nodes}, but {key}[{first}]={int(out[key][first])}. "
                    f"Pass the true number of nodes or remap ids."
                )

    if not is_time_sorted(out.t):
        if not sort:
            t = out.t
            first = int(torch.nonzero(t[1:] < t[:-1])[0, 0]) + 1
            raise TemporalDataError(
                f"`t` must be non-decreasing, but t[{first}]={t[first].tolist()} follows "
                f"t[{first - 1}]={t[first - 1].tolist()}. Call `validate(data, sort=True)` "
                f"(a stable sort) or `sort_by_time(data)` first."
            )
        out = sort_by_time(out)
    return out
