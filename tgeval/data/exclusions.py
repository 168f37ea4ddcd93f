r"""Items that are never candidates of an event: its source and its simultaneous positives (docs/protocol.md §5, §7).

For event :math:`i = (u_i, v_i, t_i)` of a batch, the excluded items are :math:`u_i` and
every destination :math:`v'` of an event :math:`(u_i, v', t_i)` (which includes
:math:`v_i`); for undirected data also every :math:`v'` of an event :math:`(v', u_i, t_i)`.
They depend only on the event's *group* :math:`(t_i, u_i)`, so they are stored once per
group, as sorted int64 keys ``group * num_nodes + item`` restricted to catalog items
available at :math:`t_i`: memory is linear in the batch even when one source has thousands
of simultaneous events.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tgeval.data.catalog import Catalog
from tgeval.data.groups import group_ids
from tgeval.data.sorted_keys import is_member

__all__ = ["Exclusions", "build_exclusions"]


@dataclass(frozen=True)
class Exclusions:
    """Excluded catalog items of a batch's events, stored per ``(t, src)`` group.

    Attributes:
        group: int64 ``[B]``, the group of each event.
        keys: int64 ``[X]``, sorted distinct ``group * num_nodes + item``.
        count: int64 ``[B]``, excluded available items of each event.
        num_nodes: the key stride (the catalog's ``num_nodes``).
    """

    group: Tensor
    keys: Tensor
    count: Tensor
    num_nodes: int

    def contains(self, rows: Tensor, items: Tensor) -> Tensor:
        """Whether ``items[r, j]`` is excluded for event ``rows[r]``: bool, shape of ``items`` (``[b, c]``)."""
        return is_member(self.keys, self.group[rows][:, None] * self.num_nodes + items)

    def items(self) -> tuple[Tensor, Tensor]:
        """``(group, item)`` of every stored key: int64 ``[X]`` each."""
        return self.keys // self.num_nodes, self.keys % self.num_nodes


def build_exclusions(src: Tensor, dst: Tensor, t: Tensor, catalog: Catalog, *, directed: bool = True) -> Exclusions:
    """Excluded items of each event of a time-sorted batch (see the module docstring).

    Args:
        src, dst, t: int64 ``[B]`` events of one batch, sorted by ``t``.
        catalog: only its items available at the event's time are stored and counted.
        directed: if ``False``, an event ``(a, b, t)`` also makes ``a`` a simultaneous
            positive of source ``b``.
    """
    num_events = src.numel()
    device = src.device
    n = catalog.num_nodes
    if num_events == 0:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return Exclusions(empty, empty, empty, n)
    stride = int(torch.maximum(src.max(), dst.max())) + 1
    tid = group_ids(t)
    # (t, node) pairs that act as a source: every event's source, and for undirected data its destination.
    owners = [tid * stride + src] + ([] if directed else [tid * stride + dst])
    members = [dst] + ([] if directed else [src])
    _, inverse = torch.unique(torch.cat(owners), return_inverse=True)
    group = inverse[:num_events]
    rows = torch.cat([inverse, group])  # each member item under its owner; each event's source under its group
    items = torch.cat(members + [src])
    row_time = torch.cat([t] * len(members) + [t])
    keep = catalog.available(items, row_time)
    keys = torch.unique(rows[keep] * n + items[keep])
    starts = torch.searchsorted(keys, group * n)
    ends = torch.searchsorted(keys, group * n + n)
    return Exclusions(group, keys, ends - starts, n)
