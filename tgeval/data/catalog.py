r"""Destination catalogs: the candidates of all-entity ranking and of uniform sampling (docs/protocol.md §7).

A catalog is a set of destination ids, each with the time from which it may be offered:
item ``c`` is a candidate for an event at time ``t`` iff ``available_from[c] < t``. Four
definitions are built from a stream:

* ``"train"`` (the default, fixed): every destination of the training prefix, always
  available.
* ``"time-available"``: every destination of the stream, available strictly after its
  first appearance as a destination (``available_from`` = that time), so an event at
  ``t`` sees exactly the destinations observed before ``t``.
* ``"all"``: every destination of the whole stream, always available. It uses knowledge of
  the future destination set and is offered only as a named variant.
* ``"range"``: every id from the smallest to the largest destination of the whole stream,
  always available: the candidates TGB draws its evaluation negatives from (ids in the range
  that never occur as a destination included). Like ``"all"``, it uses the future.

Items are stored sorted by ``(available_from, id)``, so the candidates of an event at ``t``
are the prefix ``items[:num_available(t)]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.core.choices import CATALOG_KINDS
from tgeval.data.hashing import BuiltFrom
from tgeval.errors import CatalogError

__all__ = ["Catalog", "CatalogKind", "CATALOG_KINDS", "build_catalog"]

CatalogKind = Literal["train", "time-available", "all", "range", "custom"]


@dataclass(frozen=True)
class Catalog:
    """Candidate destinations with availability times.

    Attributes:
        kind: how the catalog was defined (``"train"``, ``"time-available"``, ``"all"``,
            ``"range"`` or ``"custom"``).
        items: int64 ``[N]`` distinct ids, sorted by ``(available_from, id)``.
        available_from: ``[N]`` times (dtype of the stream's ``t``), non-decreasing; item
            ``k`` is offered to events with ``t > available_from[k]``. ``None`` means every
            item is always available.
        num_nodes: exclusive upper bound of ids (size of the membership table).
        definition: how the items were chosen (recorded in result manifests).
        built_from: the events it was built from (:class:`~tgeval.data.hashing.BuiltFrom`:
            the training prefix for ``"train"``, the whole stream otherwise; ``None`` for
            hand-made catalogs); ``evaluate`` refuses it on a stream without those events.
    """

    kind: str
    items: Tensor
    available_from: Tensor | None
    num_nodes: int
    definition: dict = field(default_factory=dict)
    built_from: BuiltFrom | None = None

    def __post_init__(self) -> None:
        items, af = self.items, self.available_from
        if items.dim() != 1 or items.dtype != torch.long:
            raise CatalogError(f"catalog items must be an int64 tensor [N], got {items.dtype} {tuple(items.shape)}.")
        if items.numel() == 0:
            raise CatalogError(f"the {self.kind!r} catalog is empty: there is no destination to rank against. "
                               f"Use a longer training prefix or another catalog.")
        if int(items.max()) >= self.num_nodes or int(items.min()) < 0:
            raise CatalogError(f"catalog ids must lie in [0, num_nodes={self.num_nodes}), got "
                               f"[{int(items.min())}, {int(items.max())}]. Pass a larger num_nodes.")
        if torch.unique(items).numel() != items.numel():
            raise CatalogError("catalog items must be distinct: a duplicate would be ranked and sampled twice.")
        if af is not None:
            if af.shape != items.shape:
                raise CatalogError(f"available_from must have one time per item {tuple(items.shape)}, "
                                   f"got {tuple(af.shape)}.")
            if bool((af[1:] < af[:-1]).any()):
                raise CatalogError("catalog items must be sorted by available_from (then id), so that the items "
                                   "available at t form a prefix. Sort both tensors by available_from.")
        table = torch.full((self.num_nodes,), -1, dtype=torch.long, device=items.device)
        table[items] = torch.arange(self.size, device=items.device)
        object.__setattr__(self, "_table", table)  # id -> position, built once
        object.__setattr__(self, "_indicator", (table >= 0).long())

    @property
    def size(self) -> int:
        return self.items.numel()

    @property
    def device(self) -> torch.device:
        return self.items.device

    @property
    def table(self) -> Tensor:
        """int64 ``[num_nodes]``: the position of each id in ``items``, ``-1`` outside the catalog."""
        return self._table  # type: ignore[attr-defined]

    @property
    def indicator(self) -> Tensor:
        """int64 ``[num_nodes]``: 1 for the catalog's ids, 0 for the others (sums count items)."""
        return self._indicator  # type: ignore[attr-defined]

    def to(self, device: torch.device | str) -> "Catalog":
        af = None if self.available_from is None else self.available_from.to(device)
        return Catalog(self.kind, self.items.to(device), af, self.num_nodes, self.definition, self.built_from)

    def num_available(self, t: Tensor) -> Tensor:
        """Number of items available at each time: int64 ``[B]`` for ``t`` ``[B]``."""
        if self.available_from is None:
            return torch.full(t.shape, self.size, dtype=torch.long, device=t.device)
        dtype = torch.promote_types(self.available_from.dtype, t.dtype)
        return torch.searchsorted(self.available_from.to(dtype), t.to(dtype), right=False)

    def position(self, ids: Tensor) -> Tensor:
        """Position of each id in ``items``, or ``-1`` for ids outside the catalog: int64, shape of ``ids``."""
        inside = (ids >= 0) & (ids < self.num_nodes)
        return torch.where(inside, self.table[ids.clamp(0, self.num_nodes - 1)], torch.full_like(ids, -1))

    def available(self, ids: Tensor, t: Tensor) -> Tensor:
        """Whether each id is a candidate at the matching time: bool, shape of ``ids`` (broadcast with ``t``)."""
        pos = self.position(ids)
        if self.available_from is None:
            return pos >= 0
        return (pos >= 0) & (self.available_from[pos.clamp(min=0)] < t)  # torch promotes mixed dtypes

    def describe(self) -> dict:
        return {"kind": self.kind, "size": self.size, "time_masked": self.available_from is not None,
                **self.definition, "num_nodes": self.num_nodes,
                "built_from": None if self.built_from is None else self.built_from.to_dict()}


def build_catalog(data: TemporalData, kind: str = "train", *, train_end: int | None = None,
                  num_nodes: int | None = None) -> Catalog:
    """Build a catalog of ``data`` (validated, time-sorted).

    Args:
        data: the whole stream.
        kind: ``"train"``, ``"time-available"``, ``"all"`` or ``"range"`` (see the module docstring).
        train_end: end (exclusive event index) of the training prefix; required for ``"train"``.
        num_nodes: id bound; defaults to ``max(src, dst) + 1``.
    """
    if kind not in CATALOG_KINDS:
        raise CatalogError(f"catalog kind must be one of {CATALOG_KINDS}, got {kind!r}.")
    n = int(num_nodes) if num_nodes is not None else int(max(int(data.src.max()), int(data.dst.max())) + 1)
    if kind == "train":
        if train_end is None:
            raise CatalogError("a 'train' catalog needs `train_end`, the end of the training prefix.")
        items = torch.unique(data.dst[:train_end])
        return Catalog("train", items, None, n, {"rule": "destinations of events [0, train_end)",
                                                 "train_end": int(train_end)}, BuiltFrom.of(data, train_end))
    if kind == "all":
        return Catalog("all", torch.unique(data.dst), None, n,
                       {"rule": "destinations of the whole stream (uses the future destination set)"},
                       BuiltFrom.of(data))
    if kind == "range":
        low, high = int(data.dst.min()), int(data.dst.max())
        return Catalog("range", torch.arange(low, high + 1, device=data.dst.device), None, n,
                       {"rule": "every id from the smallest to the largest destination of the whole stream "
                                "(TGB's negatives; uses the future destination range)", "first": low, "last": high},
                       BuiltFrom.of(data))
    # time-available: first appearance of each destination (t is sorted, so the first index wins).
    ids, inverse = torch.unique(data.dst, return_inverse=True)
    first_index = torch.full((ids.numel(),), data.dst.numel(), dtype=torch.long, device=ids.device)
    first_index.scatter_reduce_(0, inverse, torch.arange(data.dst.numel(), device=ids.device), reduce="amin")
    first_time = data.t[first_index]
    # sort by (first_time, id): ids are already ascending, so a stable sort by time suffices.
    order = torch.sort(first_time, stable=True).indices
    return Catalog("time-available", ids[order], first_time[order], n,
                   {"rule": "destinations of the stream, each offered strictly after its first appearance"},
                   BuiltFrom.of(data))
