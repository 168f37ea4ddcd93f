r"""Uniform negatives over a destination catalog (SPEC §5).

For event :math:`i` the pool is the catalog items available at :math:`t_i` minus the
excluded items (source, simultaneous positives, true destination). Without replacement the
``K`` negatives are a uniformly random ordered ``K``-subset of the pool; with replacement
they are ``K`` independent uniform draws from it.

Collision rule: draws that hit an excluded item (or, without replacement, repeat an
earlier draw of the same row) are rejected and redrawn. Keeping the first ``K`` accepted
draws of an i.i.d. uniform sequence is exactly sequential sampling without replacement,
so the rule does not bias the distribution. Rows that keep failing (pools barely larger
than ``K``) are finished exactly by ranking random keys over the whole pool.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog, excluded_candidates
from tgeval.errors import SamplerError
from tgeval.samplers.base import NegativeSampler

__all__ = ["UniformSampler"]

_REJECTION_ROUNDS = 4


def _first_distinct_mask(draws: Tensor) -> Tensor:
    """True at the first occurrence of each value in each row of ``draws`` ``[B, M]``."""
    sorted_vals, order = torch.sort(draws, dim=1, stable=True)
    first_sorted = torch.ones_like(sorted_vals, dtype=torch.bool)
    first_sorted[:, 1:] = sorted_vals[:, 1:] != sorted_vals[:, :-1]
    return torch.zeros_like(first_sorted).scatter_(1, order, first_sorted)


class UniformSampler(NegativeSampler):
    """Uniform negatives over ``catalog`` (items available at each event's time).

    Args:
        catalog: candidate destinations.
        replace: draw with replacement (duplicates allowed) instead of distinct negatives.

    Raises (from :meth:`sample`):
        SamplerError: if an event's pool holds fewer than ``K`` items without
            replacement, or none at all with replacement.
    """

    name = "uniform"

    def __init__(self, catalog: Catalog, *, replace: bool = False) -> None:
        self.catalog = catalog
        self.replace = replace

    def describe(self) -> dict:
        return {"name": self.name, "replace": self.replace, "catalog": self.catalog.describe()}

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Tensor:
        src, dst, t = batch.src, batch.dst, batch.t
        device = src.device
        b, k = src.numel(), int(num_negatives)
        if k < 0:
            raise ValueError(f"num_negatives must be >= 0, got {num_negatives}.")
        if k == 0 or b == 0:
            return torch.zeros(b, k, dtype=torch.long, device=device)
        if self.catalog.device != device:  # move once; later batches reuse it
            self.catalog = self.catalog.to(device)
        catalog = self.catalog
        n = catalog.num_nodes
        ex_event, ex_item = excluded_candidates(src, dst, t, catalog)
        ex_key = ex_event * n + ex_item
        pool_size = catalog.num_available(t)  # items available (a prefix of catalog.items)
        pool = pool_size - torch.bincount(ex_event, minlength=b)
        need = 1 if self.replace else k
        short = pool < need
        if bool(short.any()):
            i = int(torch.nonzero(short)[0, 0])
            raise SamplerError(
                f"event {i} of the batch (src={int(src[i])}, t={t[i].tolist()}) has {int(pool[i])} candidate "
                f"negatives in the {catalog.kind!r} catalog after exclusions, fewer than the {need} required "
                f"({k} negatives, replace={self.replace}). Lower K, use a larger catalog, or pass replace=True."
            )

        def excluded(rows: Tensor, items: Tensor) -> Tensor:
            if ex_key.numel() == 0:
                return torch.zeros_like(items, dtype=torch.bool)
            key = rows[:, None] * n + items
            pos = torch.searchsorted(ex_key, key).clamp(max=ex_key.numel() - 1)
            return ex_key[pos] == key

        # Every round draws a full [B, M] block, so row i's draws sit at fixed offsets of the
        # generator stream: they do not depend on the rows after it (later events of the batch).
        out = torch.empty(b, k, dtype=torch.long, device=device)
        todo = torch.ones(b, dtype=torch.bool, device=device)
        rows = torch.arange(b, device=device)
        draws = 2 * k + 8
        for _ in range(_REJECTION_ROUNDS):
            u = torch.rand(b, draws, generator=generator, device=device, dtype=torch.float64)
            items = catalog.items[(u * pool_size[:, None]).long().clamp(max=catalog.size - 1)]
            ok = ~excluded(rows, items)
            if not self.replace:
                ok &= _first_distinct_mask(items)
            rank = torch.cumsum(ok.long(), 1)
            done = todo & (rank[:, -1] >= k)
            take = ok & (rank <= k) & done[:, None]
            out[done] = items[take].view(-1, k)
            todo &= ~done
            if not bool(todo.any()):
                return out
            draws *= 4
        # Exact finish for the remaining rows: random keys over the whole pool, excluded items last.
        width = int(pool_size.max())
        keys = torch.rand(b, width, generator=generator, device=device, dtype=torch.float64)
        todo_rows = rows[todo]
        items = catalog.items[:width].expand(todo_rows.numel(), width)
        invalid = excluded(todo_rows, items) | (torch.arange(width, device=device)[None, :] >= pool_size[todo, None])
        order = torch.argsort(keys[todo].masked_fill(invalid, 2.0), dim=1)  # valid items first, shuffled
        if self.replace:
            u = torch.rand(b, k, generator=generator, device=device, dtype=torch.float64)[todo]
            cols = order.gather(1, (u * pool[todo, None]).long())
        else:
            cols = order[:, :k]
        out[todo] = items.gather(1, cols)
        return out
