r"""Recency and popularity combined in a fixed priority order (Cornell et al., "On the Power of
Heuristics in Temporal Graphs", 2025): the first key ranks the candidates, the second breaks its ties.

The four keys, each over the events strictly before the query's time :math:`t`:

* ``recency-local``: the last time the pair ``(u, v)`` occurred; ``recency-global``: the last time
  ``v`` was a destination (none: below every time);
* ``popularity-local``: the pair's number of events; ``popularity-global``: ``v``'s number of
  events as a destination.

A score is one float64 that orders as the pair of keys does:
:math:`s = k_1 \cdot 2^{26} + k_2`, with times replaced by their timestamp code (the number of
distinct timestamps fed up to and including it, ``0`` for none), exact while every code of the first
key stays below :math:`2^{27}` and of the second below :math:`2^{26}` (a longer stream is refused
with :class:`~tgeval.errors.ModelCapabilityError`, never rounded).
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.sorted_keys import Occurrences
from tgeval.errors import ModelCapabilityError, ModelConfigError
from tgeval.models.base import CandidateScorer, time_store
from tgeval.models.capabilities import Capabilities
from tgeval.models.counting import SourceOrder, distinct_pairs, key_changes, ordered_counts, source_pairs
from tgeval.models.heuristics import EdgeBank, _BufferState, _counted_pairs, _lowest
from tgeval.stream.state import State, clone_state

__all__ = ["Lexicographic", "LocalGlobal", "LocalRecencyPopularity", "GlobalRecencyPopularity", "KEYS"]

#: the keys a combination orders by: the pair's or the destination's last time or number of events
KEYS = ("recency-local", "popularity-local", "recency-global", "popularity-global")
#: the second key's codes stay below this; the score is ``first * SECOND_BOUND + second``
SECOND_BOUND = 2**26
#: the first key's codes stay below this: ``FIRST_BOUND * SECOND_BOUND = 2^53``, exact in float64
FIRST_BOUND = 2**27


class _Batch:
    """What :meth:`Lexicographic.within_batch` keeps of a time-sorted batch: its events, each one's
    timestamp code, and its pairs and destinations indexed by time."""

    def __init__(self, model: "Lexicographic", batch: TemporalData) -> None:
        self.t = batch.t
        self.codes = model._codes(batch.t)
        self.pairs = Occurrences(model._pair(batch.src, batch.dst), batch.t, times_sorted=True)
        self.nodes = Occurrences(batch.dst, batch.t, times_sorted=True)

    def last_code(self, occurrences: Occurrences, key: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
        """``(count, code)``: the key's occurrences before ``t`` and the code of the latest (arbitrary if none)."""
        count = occurrences.count_before(key, t)
        start = torch.searchsorted(occurrences.keys, key.contiguous())
        time = occurrences.times.take(start + (count - 1).clamp(min=0))
        return count, self.codes.take(torch.searchsorted(self.t, time.contiguous()).clamp(max=self.t.numel() - 1))


class Lexicographic(_BufferState):
    r"""Two of :data:`KEYS` in priority order, scored with exact per-timestamp history.

    ``Lexicographic(n, ("recency-local", "recency-global"))`` is the ``local-global`` heuristic: the
    destinations a source reached most recently first, every other destination after them by how
    recently anyone reached it.

    State: the timestamp code of the latest time fed; per node its last code and count as a
    destination (``[N]`` each); per pair, for a local key, its last code or its count in an
    :class:`~tgeval.models.heuristics.EdgeBank` store (sorted pair keys, updates
    :math:`O(B \log P)` amortised). All-entity counts are exact and counted (:meth:`catalog_counts`):
    the catalog sorted by the destinations' global code, a source's stored pairs ordered by their first
    code, and a few pairs scored one by one.

    Args:
        num_nodes: exclusive upper bound of node ids.
        keys: two distinct names of :data:`KEYS`, the first one first.
    """

    capabilities = Capabilities(exact_history=True, state_in_registered_tensors=True)
    #: the name :meth:`describe` records (a registered combination's registry name)
    name = "lexicographic"
    _state_keys = ("clock", "latest", "node_last", "node_count")
    clock: Tensor  # int64 []: code of the latest timestamp fed (0: none)
    latest: Tensor  # []: the latest time fed (the lowest of its dtype: none)
    node_last: Tensor  # int64 [N]: code of each node's last event as a destination (0: none)
    node_count: Tensor  # int64 [N]: its number of events as a destination

    def __init__(self, num_nodes: int, keys: Sequence[str] = ("recency-local", "recency-global")) -> None:
        super().__init__(num_nodes)
        keys = tuple(keys)
        unknown = [key for key in keys if key not in KEYS]
        if len(keys) != 2 or len(set(keys)) != 2 or unknown:
            raise ModelConfigError(f"keys must be two distinct names of {', '.join(KEYS)} (the first ranks, the second "
                                   f"breaks its ties), got {keys!r}.")
        self.keys = keys
        # per local key, a pair store whose "time" is the pair's last code or its running count
        self.pair_last = EdgeBank(num_nodes) if "recency-local" in keys else None
        self.pair_count = EdgeBank(num_nodes) if "popularity-local" in keys else None
        self.register_buffer("clock", torch.zeros((), dtype=torch.long), persistent=False)
        self.register_buffer("latest", torch.tensor(_lowest(torch.long)), persistent=False)
        self.register_buffer("node_last", torch.zeros(num_nodes, dtype=torch.long), persistent=False)
        self.register_buffer("node_count", torch.zeros(num_nodes, dtype=torch.long), persistent=False)
        self._fed = 0  # host bound of every code: the events fed

    # -- codes ----------------------------------------------------------------------------
    def _pair(self, src: Tensor, dst: Tensor) -> Tensor:
        return torch.add(dst, src, alpha=self.num_nodes)

    def _codes(self, t: Tensor) -> Tensor:
        """int64 ``[B]``: the timestamp code of each of a time-sorted batch's events, continuing the stored clock
        (a batch that begins at the latest time fed keeps its code)."""
        latest = self.latest.to(t.dtype) if t.is_floating_point() else self.latest
        step = torch.ones(t.shape, dtype=torch.long, device=t.device)
        step[1:] = (t[1:] != t[:-1]).long()
        step[:1] = (t[:1] != latest).long()
        return self.clock + torch.cumsum(step, 0)

    def _stores(self) -> list[EdgeBank]:
        return [store for store in (self.pair_last, self.pair_count) if store is not None]

    def _key_code(self, key: str, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """int64, the broadcast shape: the code of ``key`` for the pairs, from the state and, inside
        :meth:`within_batch`, the batch's events strictly before ``t``."""
        earlier: Optional[_Batch] = self.earlier
        local = key.endswith("local")
        if local:
            pair = self._pair(src, dst)
            found, stored = (self.pair_last if key == "recency-local" else self.pair_count)._lookup(pair)
            stored = torch.where(found, stored, torch.zeros_like(stored))
        else:
            stored = (self.node_last if key == "recency-global" else self.node_count).take(dst)
        if earlier is None:
            return stored
        occurrences, lookup = (earlier.pairs, pair) if local else (earlier.nodes, dst.expand_as(stored))
        if key.startswith("popularity"):
            return stored + occurrences.count_before(lookup, t)
        count, code = earlier.last_code(occurrences, lookup, t)
        return torch.where(count > 0, code, stored)

    # -- scoring ----------------------------------------------------------------------------
    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        first, second = (self._key_code(key, src, dst, t) for key in self.keys)
        return (first * SECOND_BOUND + second).double()

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        return self._blocks(src, t, candidates)

    def index_earlier(self, batch: TemporalData) -> _Batch:
        return _Batch(self, batch)

    def _global_code(self, dst: Tensor, t: Optional[Tensor] = None) -> Tensor:
        """int64, the shape of ``dst``: the score of ``dst`` as the destination of a pair never seen (the local
        keys' codes ``0``), from the stored state (``t=None``) or at the times ``t`` (inside :meth:`within_batch`,
        with the batch's events before ``t``)."""
        def code(key: str) -> Tensor:
            if key.endswith("local"):
                return torch.zeros_like(dst)
            if t is None:
                return (self.node_last if key == "recency-global" else self.node_count).take(dst)
            return self._key_code(key, dst, dst, t)
        first, second = (code(key) for key in self.keys)
        return first * SECOND_BOUND + second

    def _changes(self, earlier: _Batch, t: Tensor, catalog: Catalog,
                 stored: Tensor) -> Optional[tuple[Tensor, Tensor, Tensor]]:
        """How the batch's events change the destinations' global codes (``stored``: before the batch,
        :func:`~tgeval.models.counting.key_changes`)."""
        if all(key.endswith("local") for key in self.keys):
            return None
        nodes = earlier.nodes  # occurrences sorted by destination, each destination's in time order
        rank = torch.arange(nodes.order.numel(), device=t.device) - nodes.run_start + 1  # among its node's, from 1
        dst, code = nodes.keys[:-1], earlier.codes.take(nodes.order)
        codes = {"recency-global": code, "popularity-global": self.node_count.take(dst) + rank}
        first, second = (codes.get(key, torch.zeros_like(code)) for key in self.keys)
        return key_changes(nodes, first * SECOND_BOUND + second, stored, t, catalog)

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        r"""Exact counts by order statistics (:mod:`~tgeval.models.counting`); ``None`` for a catalog with
        availability times (the engine scores it).

        Every item scores at least its global code ``g`` (the local codes ``0``), and the catalog's items above
        ``p`` by ``g`` are counted on the catalog sorted by ``g`` (the batch's earlier events as key changes).
        With a local first key, a source's stored pairs above ``p`` by their first code are a dominance count
        on ``(source, code)``; scored one by one are only the pairs whose first code ties the positive's, the
        batch's earlier pairs of the source and, when the positive is a pair the source never reached (``p``
        below every seen pair's score), the source's stored pairs (whose ``g`` the global count took for
        theirs). Otherwise the source's pairs are all scored one by one.
        """
        if catalog.available_from is not None:
            return None
        n, earlier = self.num_nodes, self.earlier
        p = pos_score.long()  # an integer below 2^53: exact
        stored = self._global_code(torch.arange(n, device=src.device))
        changes = None if earlier is None else self._changes(earlier, t, catalog, stored)

        def global_at(dst: Tensor, when: Tensor) -> Tensor:
            return self._global_code(dst, None if earlier is None else when)
        empty = src.new_zeros(0)
        above, equal = ordered_counts(self.score, src, t, pos_score, catalog, stored, p, p, empty, empty, global_at,
                                      changes)
        stores = self._stores()
        if not stores:
            return above, equal
        parts = [] if earlier is None else [source_pairs(earlier.pairs.keys, src, n, earlier.pairs, t)]
        first = {"recency-local": self.pair_last, "popularity-local": self.pair_count}.get(self.keys[0])
        counted_above, counted_least = torch.zeros_like(p), torch.zeros_like(p)  # stored pairs' global codes
        if first is None:  # a global first key: every pair of the source, scored
            parts += [source_pairs(keys, src, n) for keys in (stores[0].keys, stores[0].delta_keys)]
            counted = torch.zeros_like(p)
            first_code = torch.full_like(p, FIRST_BOUND)  # no stored pair is counted by its first code
        else:
            first_code = torch.div(p, SECOND_BOUND, rounding_mode="floor")
            counted = torch.zeros_like(p)
            # positives the source never reached (p < SECOND_BOUND): its stored pairs were counted by their global
            # code, which a dominance count by that code takes back where no earlier event of the batch changed
            # one ("quiet"), else they are scored one by one
            never = first_code == 0
            busy = torch.zeros_like(never) if earlier is None else torch.searchsorted(earlier.t, t.contiguous()) > 0
            quiet, scored = torch.nonzero(never & ~busy).flatten(), torch.nonzero(never & busy).flatten()
            queried = torch.zeros(n, dtype=torch.bool, device=src.device).index_fill_(0, src, True)
            quiet_sources = torch.zeros_like(queried).index_fill_(0, src.take(quiet), True)
            for keys, values in first.stored_slices():
                order = SourceOrder(keys, values, _counted_pairs(keys, catalog, queried, n), n, bound=FIRST_BOUND)
                start, end = order.range(src, first_code + 1)
                counted = counted + (end - start)
                parts.append(order.pairs(*order.range(src, first_code, first_code + 1)))
                rows, items = source_pairs(keys, src.take(scored), n)
                parts.append((scored.take(rows), items))
                if quiet.numel():
                    counted_pairs = _counted_pairs(keys, catalog, quiet_sources, n)
                    by_code = SourceOrder(keys, stored.take(keys % n), counted_pairs, n)
                    for taken_back, lower in ((counted_above, p + 1), (counted_least, p)):
                        start, end = by_code.range(src.take(quiet), lower.take(quiet))
                        taken_back.index_add_(0, quiet, end - start)
        rows, items = distinct_pairs(torch.cat([r for r, _ in parts]), torch.cat([i for _, i in parts]), n)
        # each such pair's own score replaces what the counts above took for it: its global code, and its first
        # code's count when stored above the positive's
        when, src_rows, code_rows = t.take(rows), src.take(rows), p.take(rows)
        scores, code = self.score(src_rows, items, when), global_at(items, when)
        found, stored_first = (stores[0] if first is None else first)._lookup(self._pair(src_rows, items))
        taken = (found & (stored_first > first_code.take(rows))).long()
        inside = catalog.indicator.take(items)

        def own(above_it: Tensor, taken_by_code: Tensor) -> Tensor:
            return counted.index_add(0, rows, inside * (above_it.long() - taken - taken_by_code.long()))
        at_least = above + equal + own(scores >= pos_score.take(rows), code >= code_rows) - counted_least
        above = above + own(scores > pos_score.take(rows), code > code_rows) - counted_above
        return above, at_least - above

    # -- state ------------------------------------------------------------------------------
    def update(self, batch: TemporalData) -> None:
        size = batch.src.numel()
        if size == 0:
            return
        codes = self._codes(batch.t)
        self.node_last = self.node_last.scatter_reduce(0, batch.dst, codes, reduce="amax")
        self.node_count = self.node_count.index_add(0, batch.dst, torch.ones_like(batch.dst))
        pairs = self._pair(batch.src, batch.dst)
        if self.pair_last is not None:
            self.pair_last.update(TemporalData(src=batch.src, dst=batch.dst, t=codes))
        if self.pair_count is not None:  # each occurrence's running count: the stored one + its rank in the batch
            found, stored = self.pair_count._lookup(pairs)
            occurrences = Occurrences(pairs, batch.t, times_sorted=True)
            rank = torch.arange(size, device=pairs.device) - occurrences.run_start + 1
            running = torch.empty_like(rank).scatter_(0, occurrences.order, rank)
            self.pair_count.update(TemporalData(src=batch.src, dst=batch.dst,
                                                t=torch.where(found, stored, 0) + running))
        self.clock = codes[-1].clone()
        self.latest = batch.t[-1].to(time_store(self.latest, batch.t).dtype)
        self._fed += size
        if self._fed >= SECOND_BOUND:
            self._check_bounds()

    def _check_bounds(self) -> None:
        """Refuse codes that the float64 score could not hold exactly (one device read, only past 2^26 events)."""
        bounds = {"recency-local": self.clock, "recency-global": self.clock,
                  "popularity-local": self.node_count.max(), "popularity-global": self.node_count.max()}
        for key, bound, place in zip(self.keys, (FIRST_BOUND, SECOND_BOUND), ("first", "second")):
            code = int(bounds[key])
            if code >= bound:
                raise ModelCapabilityError(
                    f"{key} reached code {code:,}: as the {place} key its codes must stay below {bound:,} for the "
                    f"float64 score to hold them exactly. Evaluate the stream in shorter segments, or rank by one key.")

    def reset_state(self) -> None:
        for store in self._stores():
            store.reset_state()
        self.clock = torch.zeros_like(self.clock)
        self.latest = torch.full((), _lowest(torch.long), dtype=torch.long, device=self.clock.device)
        self.node_last = torch.zeros_like(self.node_last)
        self.node_count = torch.zeros_like(self.node_count)
        self._fed = 0

    def snapshot(self) -> State:
        state = {key: clone_state(getattr(self, key)) for key in self._state_keys}
        for name in ("pair_last", "pair_count"):
            store = getattr(self, name)
            if store is not None:
                state.update({f"{name}.{key}": value for key, value in store.snapshot().items()})
        return state

    def restore(self, state: State) -> None:
        for key in self._state_keys:
            setattr(self, key, clone_state(state[key]).to(self.node_count.device))
        self._fed = int(self.node_count.sum())  # every event fed counts once at its destination
        for name in ("pair_last", "pair_count"):
            store = getattr(self, name)
            if store is not None:
                store.restore({key: state[f"{name}.{key}"] for key in store.snapshot()})

    def describe(self) -> dict:
        return {"name": self.name, "keys": list(self.keys), "num_nodes": self.num_nodes}


class LocalGlobal(Lexicographic):
    """``local-global``: the pair's last time, ties (every pair never seen among them) broken by the
    destination's last time as anyone's destination (:class:`Lexicographic`)."""

    name = "local-global"

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes, ("recency-local", "recency-global"))


class LocalRecencyPopularity(Lexicographic):
    """``recency-popularity-local``: the pair's last time, ties broken by its number of events
    (:class:`Lexicographic`)."""

    name = "recency-popularity-local"

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes, ("recency-local", "popularity-local"))


class GlobalRecencyPopularity(Lexicographic):
    """``recency-popularity-global``: the destination's last time as a destination, ties broken by its number
    of events as one (:class:`Lexicographic`)."""

    name = "recency-popularity-global"

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes, ("recency-global", "popularity-global"))
