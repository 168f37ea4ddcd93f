"""Batches of whole timestamp groups (docs/protocol.md §2)."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader
from torch_geometric.data import TemporalData

from tgeval.data.groups import group_starts
from tgeval.data.validation import is_time_sorted, per_event_keys
from tgeval.errors import ProtocolError, TemporalDataError

__all__ = ["TimestampBatchLoader", "timestamp_batch_boundaries", "same_batch_history", "check_time_sorted"]


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
        raise ProtocolError(f"batch_size must be >= 1, got {batch_size}.")
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


def same_batch_history(src: Tensor, dst: Tensor, t: Tensor, boundaries: Tensor) -> Tensor:
    """Events whose history inside their batch is not empty: bool ``[E]``.

    Event ``i`` is marked when its source or destination takes part (in either role) in an
    event of the same batch with a strictly earlier timestamp. A model that scores a batch from
    its state at the batch start misses that history for exactly these events (stale, not a
    leak). Vectorised: endpoints sorted by node keep their (batch, time) order, and each
    endpoint is compared with the first of its node's run in its batch.

    Args:
        src, dst, t: ``[E]``, time-sorted events.
        boundaries: int64 ``[B + 1]`` batch offsets (:func:`timestamp_batch_boundaries`).
    """
    num_events, device = t.numel(), t.device
    if num_events == 0:
        return torch.zeros(0, dtype=torch.bool, device=device)
    batch = torch.repeat_interleave(torch.arange(boundaries.numel() - 1, device=device),
                                    boundaries.diff().to(device), output_size=num_events)
    nodes, order = torch.sort(torch.stack([src, dst], 1).view(-1), stable=True)  # endpoints of event i: 2i, 2i + 1
    in_batch, time = batch.repeat_interleave(2).take(order), t.repeat_interleave(2).take(order)
    index = torch.arange(2 * num_events, device=device)
    starts = torch.ones(2 * num_events, dtype=torch.bool, device=device)
    starts[1:] = (nodes[1:] != nodes[:-1]) | (in_batch[1:] != in_batch[:-1])
    run_start = torch.cummax(torch.where(starts, index, torch.zeros_like(index)), 0).values
    later = (time.take(run_start) < time).long()  # an earlier event of the node in the batch
    return torch.zeros(num_events, dtype=torch.long, device=device).index_add_(0, order // 2, later) > 0


class TimestampBatchLoader(DataLoader):
    """Iterates a time-sorted :class:`TemporalData` in batches of whole timestamp groups.

    Unlike PyG's ``TemporalDataLoader`` (which cuts by event count), every event of a
    timestamp group lands in the same batch, so a model updated after each batch never
    sees part of a group before scoring the rest. Each batch carries ``position``, the index
    of each event in ``data`` (kept as given when ``data`` already has one, as the replay
    engine sets it), which negative samplers key their draws on (as PyG's loader attaches
    ``n_id``). Batches are views of ``data`` (no copies).

    A ``torch.utils.data.DataLoader`` over the batches: its keyword arguments apply, e.g.
    ``pin_memory=True`` for asynchronous copies to a GPU.

    Args:
        data: time-sorted events (see :func:`tgeval.data.validate`).
        batch_size: target number of events per batch (a larger group is yielded whole).
        **kwargs: passed to ``DataLoader`` (``pin_memory``, ``num_workers``, ...).

    Attributes:
        boundaries: int64 ``[B + 1]`` event offsets of the batches (relative to ``data``).

    Example:
        >>> import torch
        >>> from torch_geometric.data import TemporalData
        >>> d = TemporalData(src=torch.tensor([0, 1, 2, 3]), dst=torch.tensor([1, 2, 3, 0]),
        ...                  t=torch.tensor([1, 1, 1, 2]))
        >>> [(b.num_events, b.position.tolist()) for b in TimestampBatchLoader(d, batch_size=2)]
        [(3, [0, 1, 2]), (1, [3])]
    """

    def __init__(self, data: TemporalData, batch_size: int = 200, **kwargs: Any) -> None:
        check_time_sorted(data.t)
        for reserved in ("batch_size", "shuffle", "sampler", "batch_sampler", "collate_fn", "drop_last"):
            if reserved in kwargs:
                raise TypeError(f"TimestampBatchLoader sets `{reserved}` itself (batches are whole timestamp groups "
                                f"in time order); it takes the other DataLoader options.")
        self.data = data
        self.timestamp_batch_size = batch_size
        self.boundaries = timestamp_batch_boundaries(data.t, batch_size)
        self._bounds = self.boundaries.tolist()
        self._keys = per_event_keys(data)
        self._position = None if "position" in self._keys else torch.arange(data.num_events, device=data.src.device)
        # batch_size=None: the "dataset" of batch indices is read one index at a time, collated into a batch
        super().__init__(range(len(self._bounds) - 1), batch_size=None, shuffle=False,  # type: ignore[arg-type]
                         collate_fn=self._batch, **kwargs)  # type: ignore[arg-type]

    def spans(self) -> Iterator[tuple[int, int]]:
        """``(start, end)`` event offsets of each batch."""
        return iter(zip(self._bounds[:-1], self._bounds[1:]))

    def _batch(self, index: int) -> TemporalData:
        start, end = self._bounds[index], self._bounds[index + 1]
        batch = TemporalData(**{key: self.data[key][start:end] for key in self._keys})
        if self._position is not None:
            batch.position = self._position[start:end]
        return batch
