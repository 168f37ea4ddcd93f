"""Chronological train / validation / test splits at timestamp boundaries (docs/protocol.md §2)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence, Union

import numpy as np
import torch
from torch_geometric.data import TemporalData

from tgeval.data.hashing import BuiltFrom
from tgeval.errors import SplitError

__all__ = ["Segment", "Split", "chronological_split", "check_whole_groups"]

Number = Union[int, float]


@dataclass(frozen=True)
class Segment:
    """A contiguous range of events ``[start, end)`` of a time-sorted stream.

    ``t_first`` / ``t_last`` are the first and last timestamps inside the segment
    (``None`` when the segment is empty). ``built_from`` records the events ``[0, end)`` of
    the stream it was cut from (:class:`~tgeval.data.hashing.BuiltFrom`; ``None`` for
    hand-made segments); ``evaluate`` and ``train_epoch`` refuse it on a stream without them.
    """

    name: str
    start: int
    end: int
    t_first: Number | None
    t_last: Number | None
    built_from: BuiltFrom | None = None

    @property
    def num_events(self) -> int:
        return self.end - self.start

    def select(self, data: TemporalData) -> TemporalData:
        """The segment's events: ``data[start:end]``."""
        return data[self.start : self.end]

    def to_dict(self) -> dict:
        return {"name": self.name, "start": self.start, "end": self.end,
                "num_events": self.num_events, "t_first": self.t_first, "t_last": self.t_last,
                "built_from": None if self.built_from is None else self.built_from.to_dict()}


@dataclass(frozen=True)
class Split:
    """Three consecutive segments covering a stream, cut between distinct timestamps."""

    train: Segment
    val: Segment
    test: Segment
    ratios: tuple[float, float, float]

    def __getitem__(self, name: str) -> Segment:
        if name not in ("train", "val", "test"):
            raise KeyError(f"segment must be 'train', 'val' or 'test', got {name!r}.")
        return getattr(self, name)

    def to_dict(self) -> dict:
        return {"ratios": list(self.ratios),
                **{name: self[name].to_dict() for name in ("train", "val", "test")}}


def _segment(name: str, data: TemporalData, start: int, end: int) -> Segment:
    built_from = BuiltFrom.of(data, end)
    if end <= start:
        return Segment(name, start, end, None, None, built_from)
    return Segment(name, start, end, data.t[start].item(), data.t[end - 1].item(), built_from)


def _quantile_cuts(t: np.ndarray, quantiles: Sequence[float]) -> list:
    """numpy's linear-interpolation quantiles of a sorted ``t``, as cuts for ``t <= cut``.

    Float times and integer times below 2^53 (exact in float64) use ``np.quantile``. For larger
    integer times the virtual index is numpy's and the interpolation is exact rational
    arithmetic, floored (for integers, ``t <= tau`` iff ``t <= floor(tau)``): float64 would
    round ``2^60 + i`` onto a few values and move or empty the segments.
    """
    if t.size == 0 or t.dtype.kind not in "iu" or max(abs(int(t[0])), abs(int(t[-1]))) < 2**53:
        return list(np.quantile(t, quantiles))
    cuts = []
    for q in quantiles:
        h = (t.size - 1) * float(q)  # the virtual index, in float64 as numpy computes it
        i = min(math.floor(h), t.size - 1)
        low, high = int(t[i]), int(t[min(i + 1, t.size - 1)])
        cuts.append(np.int64(low + math.floor(Fraction(h - i) * (high - low))))  # the interpolation, exactly
    return cuts


def chronological_split(data: TemporalData, ratios: Sequence[float] = (0.70, 0.15, 0.15)) -> Split:
    r"""Split a time-sorted stream into train / val / test by time quantiles.

    With :math:`\tau_1, \tau_2` the :math:`(r_{train})` and :math:`(r_{train} + r_{val})`
    quantiles of the per-event timestamps (numpy's linear interpolation, exact for integer
    timestamps beyond 2^53), train holds the events with :math:`t \le \tau_1`, val those
    with :math:`\tau_1 < t \le \tau_2` and test the rest. Each cut therefore falls between two distinct timestamps: a timestamp group is
    never split. Segment sizes follow the ratios only approximately when groups are large.

    Args:
        data: a validated (time-sorted) stream.
        ratios: ``(train, val, test)`` fractions, each ``>= 0``, summing to 1. A segment
            with a positive ratio that ends up empty raises.

    Raises:
        SplitError: if the ratios are invalid or a segment with a positive ratio is empty.
    """
    ratios = tuple(float(r) for r in ratios)
    if len(ratios) != 3 or any(r < 0 or not np.isfinite(r) for r in ratios) or abs(sum(ratios) - 1.0) > 1e-6:
        raise SplitError(
            f"ratios must be three non-negative fractions (train, val, test) summing to 1, got {ratios}. "
            f"Example: (0.70, 0.15, 0.15)."
        )
    t = data.t
    t_np = t.detach().cpu().numpy()
    if t_np.size > 1 and bool((t_np[1:] < t_np[:-1]).any()):
        raise SplitError("`t` must be non-decreasing before splitting. "
                         "Call `tgeval.data.validate(data, sort=True)` first.")
    train_end, val_end = (int(np.searchsorted(t_np, cut, side="right"))  # events with t <= cut
                          for cut in _quantile_cuts(t_np, (ratios[0], ratios[0] + ratios[1])))
    if ratios[0] == 0:
        train_end = 0
    if ratios[2] == 0:
        val_end = t_np.size
    if ratios[1] == 0:
        val_end = train_end
    split = Split(
        _segment("train", data, 0, train_end),
        _segment("val", data, train_end, val_end),
        _segment("test", data, val_end, t_np.size),
        ratios,  # type: ignore[arg-type]
    )
    for name, ratio in zip(("train", "val", "test"), ratios):
        if ratio > 0 and split[name].num_events == 0:
            raise SplitError(
                f"the {name} segment is empty with ratios {ratios} on {t_np.size} events whose "
                f"timestamps take {np.unique(t_np).size} distinct values: a segment must hold whole "
                f"timestamp groups. Use a larger {name} ratio or data with more distinct timestamps."
            )
    return split


def check_whole_groups(t: torch.Tensor, start: int, end: int, what: str = "segment") -> None:
    """Raise :class:`SplitError` unless ``[start, end)`` is a non-empty range of whole timestamp groups of ``t``."""
    num_events = t.numel()
    if not 0 <= start < end <= num_events:
        raise SplitError(f"the {what} [{start}, {end}) must be non-empty and lie inside the {num_events} events.")
    if (start > 0 and bool(t[start - 1] == t[start])) or (end < num_events and bool(t[end - 1] == t[end])):
        raise SplitError(f"the {what} [{start}, {end}) cuts a timestamp group: it must hold whole groups. "
                         f"Use `chronological_split`, which cuts between distinct timestamps.")
