r"""DGB inductive negatives, conditioned on the source (SPEC §5). **Uses the whole stream.**

DGB's inductive sampler corrupts with pairs observed in the evaluated segment but never in
training. Per source (tgeval samplers keep the source and return destinations), with
:math:`E_{train}` the pairs of the training prefix, :math:`E_{seg}` the pairs of the
evaluated segment (all of it, including events *after* the batch) and
:math:`B_u = \{v : (u, v) \in B\}` the source's destinations in the current batch, the
negatives of :math:`(u, v^+, t) \in B` are uniform over

.. math::
    \{v : (u, v) \in E_{seg} \setminus E_{train}\} \setminus (B_u \cup \{u\}).

Because :math:`E_{seg}` holds future pairs, this is an evaluation protocol, not a leak-free
sampler: :attr:`InductiveSampler.uses_whole_stream` is ``True`` and it must not be used for
training. (DyGLib's implementation instead restricts :math:`E_{seg}` to the segment's pairs
seen before the batch.) Empty pools follow ``fallback`` and are counted.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.samplers._draw import KeyPool, history_keys
from tgeval.samplers._pooled import PooledSampler

__all__ = ["InductiveSampler"]


class InductiveSampler(PooledSampler):
    """DGB inductive negatives from pairs of the evaluated segment unseen in training (whole-stream knowledge).

    Args:
        data: the whole time-sorted stream.
        train_end: end (exclusive event index) of the training prefix.
        start: first event of the evaluated segment (default ``train_end``).
        end: end of the evaluated segment (default: end of the stream).
        num_nodes: id bound (default ``max(src, dst) + 1``).
        catalog, replace, directed, fallback: as :class:`~tgeval.samplers._pooled.PooledSampler`.

    Attributes:
        keys: int64 ``[P]``, sorted keys ``u * num_nodes + v`` of :math:`E_{seg} \\setminus E_{train}`.
    """

    name = "inductive"
    uses_whole_stream = True
    scope = "batch"
    _what = "inductive (segment-minus-training pairs)"

    def __init__(self, data: TemporalData, *, train_end: int, start: Optional[int] = None, end: Optional[int] = None,
                 num_nodes: Optional[int] = None, catalog: Optional[Catalog] = None, replace: bool = False,
                 directed: bool = True, fallback: str = "uniform") -> None:
        n = int(num_nodes) if num_nodes is not None else int(torch.maximum(data.src.max(), data.dst.max())) + 1
        super().__init__(n, catalog=catalog, replace=replace, directed=directed, fallback=fallback)
        start = int(train_end) if start is None else int(start)
        end = data.num_events if end is None else int(end)
        if not 0 <= train_end <= start <= end <= data.num_events:
            raise ValueError(f"need 0 <= train_end <= start <= end <= {data.num_events} events, got "
                             f"train_end={train_end}, start={start}, end={end}.")
        self.span = (int(train_end), start, end)
        train = history_keys(data.src[:train_end], data.dst[:train_end], n, directed=directed)
        segment = history_keys(data.src[start:end], data.dst[start:end], n, directed=directed)
        self.keys = segment[~torch.isin(segment, train)]

    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        if self.keys.device != batch.src.device:
            self.keys = self.keys.to(batch.src.device)
        return KeyPool(self.keys, self.num_nodes), batch.src

    def _options(self) -> dict:
        train_end, start, end = self.span
        return {"train_end": train_end, "segment": [start, end], "num_pairs": int(self.keys.numel())}
