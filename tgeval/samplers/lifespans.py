r"""Birth–Death negative samplers: HS, OS, IS, HD, OD, ID, HE, OE, IE (docs/protocol.md §4, §5).

**Uses the whole stream.**

**Lifetimes.** For a node or a pair :math:`x`, the *birth* :math:`b_x` is the time of its
first event and the *death* :math:`d_x` the time of its last event **in the full stream**
(a node's events are those where it is the source or the destination). For a split time
:math:`t_{split}` every node / pair that occurs falls in exactly one class:

* historical ``H``: :math:`d_x < t_{split}` (seen only before the split);
* overlap ``O``: :math:`b_x < t_{split} \le d_x`;
* inductive ``I``: :math:`b_x \ge t_{split}` (seen only from the split on).

An event exactly at :math:`t_{split}` counts as "after the split": a node born at
:math:`t_{split}` is inductive, one born before and dying at :math:`t_{split}` is overlap.
:func:`node_lifetimes` and :func:`pair_lifetimes` compute :math:`(b_x, d_x)` with one
``scatter_reduce`` (``amin`` / ``amax``) over the stream.

**Choosing** :math:`t_{split}`. Usually the :math:`(1 - \alpha)` quantile of the per-event
timestamps, :math:`\alpha` the test ratio (0.15 by default), with numpy's linear
interpolation: :func:`split_time`. (:func:`~tgeval.data.split.chronological_split` cuts its
test segment at the same quantile; its test events are those with :math:`t > t_{split}`.)

**Samplers.** Because the classes are defined by the whole stream (births and deaths after
the evaluated batch), these are *evaluation protocols*, not leak-free samplers:
``uses_whole_stream = True``; do not train with them. For a positive :math:`(u, v^+, t)`:

* ``HS`` / ``OS`` / ``IS`` (:class:`BirthDeathNodeSampler`, ``endpoint="src"``): negatives
  :math:`(u', v^+)` with :math:`u'` a node of the class; returned as
  :class:`~tgeval.samplers.base.Negatives` with ``dst`` the positive's destination repeated
  and ``src`` the drawn nodes. Excluded: :math:`u` (the positive itself), :math:`v^+` (a
  self-loop), and every :math:`u'` with :math:`(u', v^+, t)` an event of the batch
  (simultaneous positives; undirected: also :math:`(v^+, u', t)`).
* ``HD`` / ``OD`` / ``ID`` (``endpoint="dst"``): negatives :math:`(u, v')` with :math:`v'` a
  node of the class (``Negatives`` with destinations only). Excluded: :math:`u` (a self-loop)
  and every destination of :math:`u` at time :math:`t` in the batch (which holds
  :math:`v^+`; undirected: also every :math:`a` of an event :math:`(a, u, t)`).
* ``HE`` / ``OE`` / ``IE`` (:class:`BirthDeathEdgeSampler`): negatives are whole pairs
  :math:`(u', v')` of the class, returned as ``Negatives(dst=v', src=u')``. Excluded: every
  pair of an event of the batch at time :math:`t` (which holds the positive itself;
  undirected pairs are unordered).

**Self-loop rule.** Node samplers never return a self-loop: the drawn node never equals the
kept endpoint, whether or not the data has self-loops (the rule of every tgeval sampler: a
negative destination is never the source). Edge samplers draw from pairs that occur in the
stream, so they return a self-loop pair :math:`(w, w)` only if the data has one in the class.

**Draws** use the shared kernel (:func:`~tgeval.samplers._draw.draw_from_pools`): each
class pool is one sorted key array shared by all rows (base ``0``; node ids for node
samplers, positions in the sorted class pair keys ``u * n + v`` for edge samplers, decoded
back into ``(src, dst)``). Collisions (excluded items, repeats) are resampled; negatives of a
row are distinct unless ``replace=True``; randomness is counter-based on
``(seed, batch.position, draw index)``, so draws are deterministic per seed. A row whose
pool holds some but fewer than ``K`` valid items follows ``short`` (default ``"fill"``: the
class items, topped up with uniform draws and counted as ``num_filled_slots``; ``"error"``
keeps the row's support strictly the class, :class:`~tgeval.errors.SamplerError` otherwise).

**Fallback** (rows whose class pool is *empty* after exclusions), counted as
``num_fallback_events`` in :meth:`describe`: ``fallback="uniform"`` draws that row uniformly
from ``catalog`` with :class:`~tgeval.samplers.uniform.UniformSampler` (same exclusions;
node ``src`` samplers draw the *source* from the catalog, keeping :math:`v^+`; ``dst`` and
edge samplers keep :math:`u` and draw the destination); ``fallback="error"`` raises.
Without an explicit ``catalog`` the fallback catalog is every node of the stream.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions, build_exclusions
from tgeval.data.hashing import BuiltFrom
from tgeval.data.groups import group_ids
from tgeval.data.strata import pair_keys
from tgeval.data.strata import MAX_PAIR_KEY_NODES
from tgeval.errors import SamplerError, TemporalDataError
from tgeval.samplers._draw import (KeyPool, batch_position, draw_from_pools)
from tgeval.samplers._pooled import PooledSampler
from tgeval.samplers.base import Negatives, SampledNegatives

__all__ = ["Lifetimes", "node_lifetimes", "pair_lifetimes", "lifetime_classes", "split_time",
           "BirthDeathNodeSampler", "BirthDeathEdgeSampler", "birth_death", "factories", "BIRTH_DEATH_NAMES",
           "CLASSES"]

#: Lifetime classes, in the order of the codes returned by :func:`lifetime_classes` (0, 1, 2).
CLASSES = ("H", "O", "I")
#: The nine sampler names: node samplers replacing the Source / Destination, Edge samplers.
BIRTH_DEATH_NAMES = ("HS", "OS", "IS", "HD", "OD", "ID", "HE", "OE", "IE")


Number = Union[int, float]


# ---- lifetimes -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lifetimes:
    """Birth and death of every node (or pair) that occurs in a stream.

    Attributes:
        keys: int64 ``[M]``, sorted distinct node ids, or pair keys ``u * num_nodes + v``
            (undirected: ``(min, max)``).
        birth: ``[M]`` time of the first event of each key (dtype of the stream's ``t``).
        death: ``[M]`` time of its last event.
    """

    keys: Tensor
    birth: Tensor
    death: Tensor

    def classes(self, t_split: Number) -> Tensor:
        """Class code of each key for ``t_split``: int64 ``[M]``, 0 = H, 1 = O, 2 = I (see :data:`CLASSES`)."""
        return lifetime_classes(self.birth, self.death, t_split)

    def of_class(self, cls: str, t_split: Number) -> Tensor:
        """Sorted keys of class ``cls`` (``"H"``, ``"O"`` or ``"I"``) for ``t_split``: int64."""
        return self.keys[self.classes(t_split) == _class_code(cls)]


def _lifetimes(keys: Tensor, t: Tensor) -> Lifetimes:
    unique, inverse = torch.unique(keys, return_inverse=True)
    birth = torch.zeros(unique.numel(), dtype=t.dtype, device=t.device)
    death = torch.zeros(unique.numel(), dtype=t.dtype, device=t.device)
    birth.scatter_reduce_(0, inverse, t, reduce="amin", include_self=False)
    death.scatter_reduce_(0, inverse, t, reduce="amax", include_self=False)
    return Lifetimes(unique, birth, death)


def node_lifetimes(data: TemporalData) -> Lifetimes:
    """Birth / death of every node of ``data`` (as source or destination), over the full stream."""
    return _lifetimes(torch.cat([data.src, data.dst]), torch.cat([data.t, data.t]))


def pair_lifetimes(data: TemporalData, num_nodes: Optional[int] = None, *, directed: bool = True) -> Lifetimes:
    """Birth / death of every pair of ``data``, keyed ``u * num_nodes + v`` (undirected: ``(min, max)``).

    ``num_nodes`` defaults to ``max(src, dst) + 1``.
    """
    n = _num_nodes(data, num_nodes)
    return _lifetimes(pair_keys(data.src, data.dst, n, directed=directed), data.t)


def lifetime_classes(birth: Tensor, death: Tensor, t_split: Number) -> Tensor:
    """Class codes (0 = H: ``d < t_split``; 1 = O: ``b < t_split <= d``; 2 = I: ``b >= t_split``): int64.

    Integer times are compared exactly with ``ceil(t_split)``; floating times in float64.
    """
    split = float(t_split)
    if not math.isfinite(split):
        raise SamplerError(f"t_split must be a finite time, got {t_split!r}.")
    if birth.dtype.is_floating_point:
        b, d, s = birth.double(), death.double(), torch.tensor(split, dtype=torch.float64, device=birth.device)
    else:  # for integers x: x >= s  <=>  x >= ceil(s), exactly
        b, d = birth.long(), death.long()
        s = torch.tensor(math.ceil(split), dtype=torch.long, device=birth.device)
    out = torch.ones(birth.shape, dtype=torch.long, device=birth.device)
    out[d < s] = 0
    out[b >= s] = 2
    return out


def split_time(data: TemporalData, test_ratio: float = 0.15) -> float:
    """The usual ``t_split``: the ``(1 - test_ratio)`` quantile of the per-event timestamps
    (numpy's default linear interpolation), as a float.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> d = TemporalData(src=torch.zeros(5, dtype=torch.long), dst=torch.ones(5, dtype=torch.long),
        ...                  t=torch.tensor([0, 10, 20, 30, 40]))
        >>> split_time(d, 0.25)
        30.0
    """
    ratio = float(test_ratio)
    if not 0.0 < ratio < 1.0:
        raise SamplerError(f"test_ratio must lie in (0, 1), got {test_ratio!r}.")
    if data.t.numel() == 0:
        raise TemporalDataError("split_time needs a non-empty stream.")
    return float(np.quantile(data.t.detach().cpu().numpy(), 1.0 - ratio))


def _class_code(cls: str) -> int:
    if cls not in CLASSES:
        raise SamplerError(f"cls must be one of {CLASSES} (historical, overlap, inductive), got {cls!r}.")
    return CLASSES.index(cls)


def _num_nodes(data: TemporalData, num_nodes: Optional[int]) -> int:
    largest = int(torch.maximum(data.src.max(), data.dst.max())) + 1 if data.src.numel() else 1
    n = largest if num_nodes is None else int(num_nodes)
    if n < largest:
        raise TemporalDataError(f"num_nodes={n} is smaller than the largest node id + 1 ({largest}) of the stream.")
    if n > MAX_PAIR_KEY_NODES:
        raise SamplerError(f"num_nodes must be at most {MAX_PAIR_KEY_NODES} (int64 pair keys), got {n}.")
    return n


def _stream_catalog(data: TemporalData, n: int) -> Catalog:
    return Catalog("custom", torch.unique(torch.cat([data.src, data.dst])), None, n,
                   {"rule": "every node of the whole stream (fallback of a whole-stream Birth-Death sampler)"},
                   BuiltFrom.of(data))


# ---- samplers ----------------------------------------------------------------------------------
class _BirthDeathSampler(PooledSampler):
    """Shared draw / fallback logic; subclasses give the pool, the exclusions and the decoding."""

    uses_whole_stream = True
    history_free = True  # class pools fixed by the whole stream and the split time

    def __init__(self, data: TemporalData, t_split: Number, *, cls: str, num_nodes: Optional[int],
                 catalog: Optional[Catalog], replace: bool, directed: bool, fallback: str, short: str) -> None:
        _class_code(cls)
        n = _num_nodes(data, num_nodes)
        if catalog is None:
            catalog = _stream_catalog(data, n)
        super().__init__(n, catalog=catalog, replace=replace, directed=directed, fallback=fallback, short=short)
        self.cls = cls
        self.t_split = float(t_split)
        self.built_from = BuiltFrom.of(data)
        lifetime_classes(torch.zeros(1), torch.zeros(1), self.t_split)  # validates t_split

    # hooks ----------------------------------------------------------------------------------
    def _pool_and_exclusions(self, batch: TemporalData) -> tuple[KeyPool, Exclusions]:
        raise NotImplementedError

    def _decode(self, batch: TemporalData, items: Tensor) -> SampledNegatives:
        """Negatives from the drawn items ``[B, K]`` (rows to fall back hold ``-1``)."""
        raise NotImplementedError

    def _fallback_size(self, batch: TemporalData) -> Tensor:
        """Size of each row's uniform-fallback pool: int64 ``[B]``."""
        assert self.catalog is not None
        catalog = self.catalog.to(batch.src.device) if self.catalog.device != batch.src.device else self.catalog
        excl = build_exclusions(batch.src, batch.dst, batch.t, catalog, directed=self.directed)
        return catalog.num_available(batch.t) - excl.count

    def _draw_inputs(self, batch: TemporalData) -> tuple[KeyPool, Tensor, Exclusions]:
        pool, excl = self._pool_and_exclusions(batch)  # one class pool shared by every row (base 0)
        return pool, torch.zeros_like(batch.src), excl

    def log_q(self, batch: TemporalData, negatives: Any = None) -> Tensor:  # type: ignore[override]
        r"""Log-probability of one draw of each row's proposal: float64 ``[B, K]`` (``K`` from ``negatives``).

        Every Birth–Death pool is uniform, so this is :math:`-\log |P_i \setminus X_i|` for every
        slot of row :math:`i` (for fallback rows, minus the log of the uniform fallback pool size).
        """
        pool, excl = self._pool_and_exclusions(batch)
        b = batch.src.numel()
        base = torch.zeros(b, dtype=torch.long, device=batch.src.device)
        size = draw_from_pools(pool, base, excl, 0, replace=True, seed=0, position=batch_position(batch)).size
        if bool((size == 0).any()):
            size = torch.where(size == 0, self._fallback_size(batch), size)
        k = 1 if negatives is None else int((negatives.dst if isinstance(negatives, Negatives) else negatives).size(1))
        return (-torch.log(size.double()))[:, None].expand(b, k).contiguous()

    @property
    def _what(self) -> str:  # type: ignore[override]
        """The pool's name in error messages, e.g. ``"HS (historical nodes)"``."""
        return f"{self.name} ({dict(H='historical', O='overlap', I='inductive')[self.cls]} {self._kind})"

    _kind = "nodes"

    def _everything_catalog(self, device: torch.device) -> Catalog:
        if self._everything is None or self._everything.device != device:
            ids = torch.arange(self.num_nodes, device=device)
            self._everything = Catalog("custom", ids, None, self.num_nodes, {"rule": "every node id"})
        return self._everything


class BirthDeathNodeSampler(_BirthDeathSampler):
    r"""HS / OS / IS (``endpoint="src"``) and HD / OD / ID (``endpoint="dst"``): node negatives of a
    lifetime class. **Uses the whole stream** (see the module docstring).

    Args:
        data: the whole stream (lifetimes are computed over all of it).
        t_split: the split time (e.g. :func:`split_time`).
        cls: ``"H"``, ``"O"`` or ``"I"``.
        endpoint: the endpoint replaced: ``"src"`` (returns :class:`~tgeval.samplers.base.Negatives`
            with ``src`` the drawn nodes and ``dst`` the positive's destination) or ``"dst"``
            (``Negatives`` with the drawn destinations only).
        catalog_of_nodes: restrict the candidates to these node ids (a
            :class:`~tgeval.data.catalog.Catalog` or an int64 tensor), e.g. the user side of
            bipartite data; ``None``: every node of the stream.
        num_nodes: id bound (default ``max(src, dst) + 1``).
        directed: if ``False``, an event ``(a, b, t)`` also makes ``(b, a)`` a simultaneous positive.
        replace: i.i.d. draws instead of distinct negatives per row.
        fallback: ``"uniform"`` or ``"error"``, for rows whose class pool is empty.
        short: ``"fill"`` (default), ``"replace"`` or ``"error"``, for rows whose class pool holds
            fewer than ``K`` valid items (see :class:`~tgeval.samplers._pooled.PooledSampler`;
            ``num_filled_slots`` says how many negatives are uniform rather than of the class).
        catalog: candidates of the uniform fallback (default: every node of the stream).

    Attributes:
        nodes: int64 ``[P]``, sorted node ids of the class (the shared pool).
        lifetimes: the :class:`Lifetimes` of the stream's nodes.
    """

    def __init__(self, data: TemporalData, t_split: Number, *, cls: str = "H", endpoint: str = "dst",
                 catalog_of_nodes: Optional[Union[Catalog, Tensor]] = None, num_nodes: Optional[int] = None,
                 directed: bool = True, replace: bool = False, fallback: str = "uniform", short: str = "fill",
                 catalog: Optional[Catalog] = None) -> None:
        if endpoint not in ("src", "dst"):
            raise SamplerError(f"endpoint must be 'src' (HS/OS/IS) or 'dst' (HD/OD/ID), got {endpoint!r}.")
        super().__init__(data, t_split, cls=cls, num_nodes=num_nodes, catalog=catalog, replace=replace,
                         directed=directed, fallback=fallback, short=short)
        self.endpoint = endpoint
        self.name = f"{cls}{'S' if endpoint == 'src' else 'D'}"
        self.lifetimes = node_lifetimes(data)
        nodes = self.lifetimes.of_class(cls, self.t_split)
        self.restricted = catalog_of_nodes is not None
        if catalog_of_nodes is not None:
            allowed = catalog_of_nodes.items if isinstance(catalog_of_nodes, Catalog) else catalog_of_nodes
            nodes = nodes[torch.isin(nodes, allowed.to(nodes.device).long())]
        self.nodes = nodes

    def _pool_and_exclusions(self, batch: TemporalData) -> tuple[KeyPool, Exclusions]:
        device = batch.src.device
        if self.nodes.device != device:
            self.nodes = self.nodes.to(device)
        everything = self._everything_catalog(device)
        if self.endpoint == "dst":  # the source and its simultaneous destinations
            excl = build_exclusions(batch.src, batch.dst, batch.t, everything, directed=self.directed)
        else:  # roles swapped: the destination and its simultaneous sources (u', v, t)
            excl = build_exclusions(batch.dst, batch.src, batch.t, everything, directed=self.directed)
        return KeyPool(self.nodes, self.num_nodes), excl

    def _decode(self, batch: TemporalData, items: Tensor) -> SampledNegatives:
        if self.endpoint == "dst":
            return items
        return Negatives(batch.dst[:, None].expand_as(items).contiguous(), items)

    def _swapped(self, batch: TemporalData) -> TemporalData:
        return TemporalData(src=batch.dst, dst=batch.src, t=batch.t, position=batch_position(batch))

    def _fallback_rows(self, batch: TemporalData, k: int, generator: torch.Generator,
                       rows: Tensor) -> tuple[Tensor, Tensor]:
        if self.endpoint == "dst":
            return super()._fallback_rows(batch, k, generator, rows)
        assert self._fallback_sampler is not None
        src = self._fallback_sampler.draw_destinations(self._swapped(batch), k, generator, rows=rows)
        return src, batch.dst[:, None].expand_as(src)

    def _fallback_size(self, batch: TemporalData) -> Tensor:
        return super()._fallback_size(batch if self.endpoint == "dst" else self._swapped(batch))

    def _options(self) -> dict:
        return {"cls": self.cls, "endpoint": self.endpoint, "t_split": self.t_split,
                "num_class_nodes": int(self.nodes.numel()), "restricted_to_catalog_of_nodes": self.restricted,
                "lifetimes": "birth/death = first/last event of the node (as src or dst) in the full stream",
                "self_loops": "never (the drawn node never equals the kept endpoint)"}


class BirthDeathEdgeSampler(_BirthDeathSampler):
    r"""HE / OE / IE: whole negative pairs of a lifetime class. **Uses the whole stream** (see the module docstring).

    Returns :class:`~tgeval.samplers.base.Negatives` with ``src`` / ``dst`` the drawn pairs
    (undirected pairs as ``(min, max)``); fallback rows keep the positive's source and draw
    a uniform destination from ``catalog``.

    Args:
        data, t_split, cls, num_nodes, replace, fallback, short, catalog: as
            :class:`BirthDeathNodeSampler`.
        directed: if ``False``, ``(u, v)`` and ``(v, u)`` are one pair (lifetimes and exclusions).

    Attributes:
        pairs: int64 ``[P]``, sorted pair keys ``u * num_nodes + v`` of the class.
        lifetimes: the :class:`Lifetimes` of the stream's pairs.
    """

    _kind = "pairs"

    def __init__(self, data: TemporalData, t_split: Number, *, cls: str = "H", num_nodes: Optional[int] = None,
                 directed: bool = True, replace: bool = False, fallback: str = "uniform", short: str = "fill",
                 catalog: Optional[Catalog] = None) -> None:
        super().__init__(data, t_split, cls=cls, num_nodes=num_nodes, catalog=catalog, replace=replace,
                         directed=directed, fallback=fallback, short=short)
        self.name = f"{cls}E"
        self.lifetimes = pair_lifetimes(data, self.num_nodes, directed=directed)
        self.pairs = self.lifetimes.of_class(cls, self.t_split)
        self._positions = torch.arange(self.pairs.numel(), device=self.pairs.device)

    def _pool_and_exclusions(self, batch: TemporalData) -> tuple[KeyPool, Exclusions]:
        device = batch.src.device
        if self.pairs.device != device:
            self.pairs, self._positions = self.pairs.to(device), self._positions.to(device)
        if int(torch.maximum(batch.src.max(), batch.dst.max())) >= self.num_nodes:
            raise TemporalDataError(f"batch node ids must be < num_nodes={self.num_nodes} of {self.name}.")
        p = self.pairs.numel()
        stride = max(p, 1)
        # Items are positions in `pairs`; the group of a row is its timestamp group, whose
        # pairs (the positive and the simultaneous positives) are excluded.
        group = group_ids(batch.t)
        keys = pair_keys(batch.src, batch.dst, self.num_nodes, directed=self.directed)
        if p:
            pos = torch.searchsorted(self.pairs, keys).clamp(max=p - 1)
            found = self.pairs[pos] == keys
            excluded = torch.unique(group[found] * stride + pos[found])
        else:
            excluded = torch.zeros(0, dtype=torch.long, device=device)
        count = (torch.searchsorted(excluded, group * stride + stride) - torch.searchsorted(excluded, group * stride))
        return KeyPool(self._positions, stride), Exclusions(group, excluded, count, stride)

    def _decode(self, batch: TemporalData, items: Tensor) -> SampledNegatives:
        valid = items >= 0
        key = self.pairs[items.clamp(min=0)] if self.pairs.numel() else torch.zeros_like(items)
        src = torch.where(valid, key // self.num_nodes, items)
        dst = torch.where(valid, key % self.num_nodes, items)
        return Negatives(dst, src)

    def _options(self) -> dict:
        return {"cls": self.cls, "t_split": self.t_split, "num_class_pairs": int(self.pairs.numel()),
                "lifetimes": "birth/death = first/last event of the pair in the full stream",
                "fallback_rule": "keep the source, uniform destination from the catalog"}


# ---- by name -----------------------------------------------------------------------------------
def birth_death(name: str, data: TemporalData, t_split: Optional[Number] = None, *, test_ratio: float = 0.15,
                num_nodes: Optional[int] = None, catalog: Optional[Catalog] = None,
                catalog_of_nodes: Optional[Union[Catalog, Tensor]] = None, directed: bool = True,
                replace: bool = False, fallback: str = "uniform", short: str = "fill") -> _BirthDeathSampler:
    """The Birth–Death sampler ``name`` (one of :data:`BIRTH_DEATH_NAMES`). **Uses the whole stream.**

    Args:
        name: ``"HS"``, ``"OS"``, ``"IS"`` (replace the source), ``"HD"``, ``"OD"``, ``"ID"``
            (replace the destination), ``"HE"``, ``"OE"``, ``"IE"`` (replace the pair).
        data: the whole stream.
        t_split: the split time; ``None``: :func:`split_time` ``(data, test_ratio)``.
        test_ratio: :math:`\\alpha` of the default ``t_split``.
        catalog_of_nodes: candidate restriction of node samplers (an edge sampler given one raises).
        num_nodes, catalog, directed, replace, fallback, short: as :class:`BirthDeathNodeSampler`.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> d = TemporalData(src=torch.tensor([0, 1, 2]), dst=torch.tensor([1, 2, 3]), t=torch.tensor([1, 2, 3]))
        >>> birth_death("HD", d, 2.5).nodes.tolist()  # node 0 dies at 1, node 1 at 2
        [0, 1]
    """
    key = str(name).upper()
    if key not in BIRTH_DEATH_NAMES:
        raise SamplerError(f"unknown Birth-Death sampler {name!r}; one of {', '.join(BIRTH_DEATH_NAMES)}.")
    split = split_time(data, test_ratio) if t_split is None else t_split
    cls, what = key[0], key[1]
    common: dict[str, Any] = dict(cls=cls, num_nodes=num_nodes, catalog=catalog, directed=directed,
                                  replace=replace, fallback=fallback, short=short)
    if what == "E":
        if catalog_of_nodes is not None:
            raise SamplerError(f"catalog_of_nodes restricts node samplers; {key} draws whole pairs.")
        return BirthDeathEdgeSampler(data, split, **common)
    return BirthDeathNodeSampler(data, split, endpoint="src" if what == "S" else "dst",
                                 catalog_of_nodes=catalog_of_nodes, **common)


def factories() -> dict[str, Any]:
    """``{name: factory}`` for the nine names (``functools.partial`` of :func:`birth_death`), for a registry."""
    return {name: functools.partial(birth_death, name) for name in BIRTH_DEATH_NAMES}
