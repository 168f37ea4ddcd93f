r"""DGB inductive negatives, conditioned on the source (docs/protocol.md §5). **Uses the whole stream.**

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
seen before the batch.) Empty pools follow ``fallback``, short ones ``short``; both are counted.

**Which pairs count as seen** (``seen``, recorded in :meth:`~InductiveSampler.describe`):
``"train"`` (the default) removes the pairs of the training prefix only, DGB's definition
(inductive = observed in the evaluated segment, not in training), so for the test segment a
pair first seen in validation is still inductive; ``"train+val"`` removes every pair seen
before the evaluated segment, as DyGLib counts training and validation pairs as seen. The
two agree on the validation segment. On SocioPatterns Hospital the choice moves EdgeBank's
sampled AP by several hundredths, so a result must name it.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.hashing import BuiltFrom
from tgeval.errors import SamplerError
from tgeval.samplers._draw import KeyPool, history_keys
from tgeval.samplers._pooled import PooledSampler

__all__ = ["InductiveSampler", "SEEN_SETS"]

#: which earlier pairs are not inductive: the training prefix (DGB) or everything before the segment (DyGLib)
SEEN_SETS = ("train", "train+val")


class InductiveSampler(PooledSampler):
    """DGB inductive negatives from pairs of the evaluated segment unseen before it (whole-stream knowledge).

    Args:
        data: the whole time-sorted stream.
        train_end: end (exclusive event index) of the training prefix.
        start: first event of the evaluated segment (default ``train_end``).
        end: end of the evaluated segment (default: end of the stream).
        num_nodes: id bound (default ``max(src, dst) + 1``).
        seen: ``"train"`` (pairs of ``[0, train_end)``, DGB) or ``"train+val"`` (pairs of
            ``[0, start)``, DyGLib): the pairs that are not inductive (see the module docstring).
        catalog, replace, directed, fallback, short: as :class:`~tgeval.samplers._pooled.PooledSampler`.

    Attributes:
        keys: int64 ``[P]``, sorted keys ``u * num_nodes + v`` of :math:`E_{seg} \\setminus E_{train}`.
    """

    name = "inductive"
    uses_whole_stream = True
    scope = "batch"
    _what = "inductive (segment pairs not seen before)"

    def __init__(self, data: TemporalData, *, train_end: int, start: Optional[int] = None, end: Optional[int] = None,
                 num_nodes: Optional[int] = None, catalog: Optional[Catalog] = None, replace: bool = False,
                 directed: bool = True, fallback: str = "uniform", short: str = "fill", seen: str = "train") -> None:
        if seen not in SEEN_SETS:
            raise SamplerError(f"seen must be one of {SEEN_SETS}, got {seen!r}.")
        n = int(num_nodes) if num_nodes is not None else int(torch.maximum(data.src.max(), data.dst.max())) + 1
        super().__init__(n, catalog=catalog, replace=replace, directed=directed, fallback=fallback, short=short)
        start = int(train_end) if start is None else int(start)
        end = data.num_events if end is None else int(end)
        if not 0 <= train_end <= start <= end <= data.num_events:
            raise SamplerError(f"need 0 <= train_end <= start <= end <= {data.num_events} events, got "
                               f"train_end={train_end}, start={start}, end={end}.")
        self.span = (int(train_end), start, end)
        self.seen = seen
        self.built_from = BuiltFrom.of(data)
        seen_end = int(train_end) if seen == "train" else start
        known = history_keys(data.src[:seen_end], data.dst[:seen_end], n, directed=directed)
        segment = history_keys(data.src[start:end], data.dst[start:end], n, directed=directed)
        self.keys = segment[~torch.isin(segment, known)]

    def _pool(self, batch: TemporalData) -> tuple[KeyPool, Tensor]:
        if self.keys.device != batch.src.device:
            self.keys = self.keys.to(batch.src.device)
        return KeyPool(self.keys, self.num_nodes), batch.src

    def _options(self) -> dict:
        train_end, start, end = self.span
        return {"train_end": train_end, "segment": [start, end], "seen": self.seen,
                "seen_pairs": f"events [0, {train_end if self.seen == 'train' else start})",
                "num_pairs": int(self.keys.numel())}
