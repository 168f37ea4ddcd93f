"""Batches of whole timestamp groups (SPEC §2)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.groups import group_starts
from tgeval.data.validate import is_time_sorted
from tgeval.errors import TemporalDataError

__all__ = ["TimestampBatchLoader", "timestamp_batch_boundaries", "check_time_sorted"]


def check_time_sorted(t: Tensor) -> None:
    """Raise :class:`TemporalDataError` unless ``t`` is non-decreasing."""
    if not is_time_sorted(t):
        raise TemporalDataError("`t` must be non-decreasing to batch by timestamp. "
                                "Call `tgeval.data.validate(data, sort=True)` first.")


def timestamp_batch_boundaries(t: Tensor, batch_size: int) -> Tensor:
    """Cut a time-sorted ``t`` (``[E]``) into batches of whole timestamp groups.

    Consecutive groups are merged greedily while the batch holds at most ``batch_size``
    events; a group larger than ``batch_size`` forms one batch on its own. No group is
    ever split.

    Returns:
        Tensor: int64 ``[B + 1]`` on CPU; batch ``b`` is ``[bounds[b], bounds[b + 1])``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    starts = group_starts(t).cpu().numpy()  # [G + 1], starts[-1] == E
    num_groups = starts.size - 1
    if num_groups <= 0:
        return torch.zeros(1, dtype=torch.long)
    # For each group start, the furthest group start within batch_size events (vectorised),
    # at least one group further.
    furthest = np.searchsorted(starts, starts[:-1] + batch_size, side="right") - 1
    nxt = np.maximum(furthest, np.arange(1, num_groups + 1))
    # Follow the chain from group 0: one step per batch, not per event.
    chain = [0]
    while chain[-1] < num_groups:
        chain.append(int(nxt[chain[-1]]))
    return torch.from_numpy(starts[np.asarray(chain)]).long()


class TimestampBatchLoader:
    """Iterates a time-sorted :class:`TemporalData` in batches of whole timestamp groups.

    Unlike PyG's ``TemporalDataLoader`` (which cuts by event count), every event of a
    timestamp group lands in the same batch, so a model updated after each batch never
    sees part of a group before scoring the rest.

    Args:
        data: time-sorted events (see :func:`tgeval.data.validate`).
        batch_size: target number of events per batch (a larger group is yielded whole).

    Attributes:
        boundaries: int64 ``[B + 1]`` event offsets of the batches (relative to ``data``).

    Example:
        >>> import torch
        >>> from torch_geometric.data import TemporalData
        >>> d = TemporalData(src=torch.tensor([0, 1, 2, 3]), dst=torch.tensor([1, 2, 3, 0]),
        ...                  t=torch.tensor([1, 1, 1, 2]))
        >>> [b.num_events for b in TimestampBatchLoader(d, batch_size=2)]
        [3, 1]
    """

    def __init__(self, data: TemporalData, batch_size: int = 200) -> None:
        check_time_sorted(data.t)
        self.data = data
        self.batch_size = batch_size
        self.boundaries = timestamp_batch_boundaries(data.t, batch_size)

    def __len__(self) -> int:
        return self.boundaries.numel() - 1

    def spans(self) -> Iterator[tuple[int, int]]:
        """``(start, end)`` event offsets of each batch."""
        bounds = self.boundaries.tolist()
        return iter(zip(bounds[:-1], bounds[1:]))

    def __iter__(self) -> Iterator[TemporalData]:
        num_events = self.data.num_events
        per_event = {key: value for key, value in self.data.to_dict().items()
                     if isinstance(value, Tensor) and value.dim() > 0 and value.size(0) == num_events}
        for start, end in self.spans():
            # Views of the per-event tensors (no copies): batches are read-only inputs.
            yield TemporalData(**{key: value[start:end] for key, value in per_event.items()})
