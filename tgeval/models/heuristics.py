r"""Parameter-free baselines with the common model interface (docs/protocol.md §6).

All state lives in registered buffers (so ``.to(device)`` moves it), all operations are
batch-vectorised torch, and scores are float64 so that integer-valued scores (degree
products) compare exactly.

* :class:`EdgeBank` — :math:`s_t(u, v) = 1\{(u, v) \in E_{<t}\}`, or with a window ``w``
  :math:`1\{(u, v)` seen in :math:`[t - w, t)\}`. Storage: sorted int64 pair keys
  ``u * num_nodes + v`` and the last time each pair was seen, O(distinct pairs).
* :class:`PairMembership` — the minimal scorer :math:`b + \beta M` with
  :math:`M = 1\{(u, v) \in H_{<t}\}`.
* :class:`NodeMemory` — :math:`1\{u \in U_{<t} \wedge v \in U_{<t}\}`.
* :class:`PreferentialAttachment` — :math:`k_u k_v`, degrees counted over past events.
* :class:`Popularity` — destination in-degree over past events, optionally decayed with a
  half-life.
* :class:`LocalRecency` / :class:`GlobalRecency` — :math:`-(t - \tau)`, :math:`\tau` the last time
  of the pair ``(u, v)`` / of ``v`` as a destination (optionally within a window).
* :class:`LocalPopularity` / :class:`GlobalPopularity` — the number of past events of the pair /
  of ``v`` as a destination, within a window or decayed with a half-life.
"""

from __future__ import annotations

import math
import numbers
from typing import Optional, Union

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.core.compat import ApplyHookModule, tensor_version
from tgeval.data.catalog import Catalog
from tgeval.data.sorted_keys import PAD, Occurrences, merge_slots
from tgeval.data.strata import MAX_PAIR_KEY_NODES, pair_keys
from tgeval.errors import ModelConfigError, TemporalDataError
from tgeval.models.base import CandidateScorer, TemporalLinkModel, pairwise_scorer, time_store
from tgeval.models.capabilities import Capabilities
from tgeval.models.clock import Clock, EventClock, describe_clock, event_clock
from tgeval.models.counting import (SourceOrder, bisect_counts, constant_thresholds, counter_at, counter_changes,
                                    distinct_pairs, key_changes, ordered_counts, source_pairs, table_counts)
from tgeval.stream.state import State, clone_state

__all__ = ["EdgeBank", "PairMembership", "NodeMemory", "PreferentialAttachment", "Popularity", "LocalRecency",
           "GlobalRecency", "LocalPopularity", "GlobalPopularity", "edgebank_window", "tgb_time_window",
           "UNLIMITED_WINDOW", "WINDOW_ANCHORS", "SCOPES"]

#: windows at or beyond this duration are unlimited: 2^63, past every difference ``t - s >= 0`` of int64
#: times in ``[0, 2^63)`` (a stream whose times span more, from negative times, is the one case it shortens)
UNLIMITED_WINDOW = 2**63


def edgebank_window(window: Union[int, float, None]) -> Union[int, float, None]:
    """A memory window as :class:`EdgeBank` keeps it: ``None`` (unlimited) for ``None`` and for a
    duration at or beyond :data:`UNLIMITED_WINDOW` (``inf``, ``1e300``, ``9.3e18``), else the
    positive duration itself (an int stays an exact int; numpy scalars become Python numbers).

    Raises:
        ModelConfigError: ``window`` is NaN, zero, negative or not a number.
    """
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, numbers.Real):
        raise ModelConfigError(f"window must be a positive duration (int or float) or None, got {window!r}.")
    value = int(window) if isinstance(window, numbers.Integral) else float(window)
    if not value > 0:  # NaN included
        raise ModelConfigError(f"window must be a positive duration or None (unlimited), got {window!r}; for unlimited "
                               f"memory pass None or inf.")
    return None if value >= UNLIMITED_WINDOW else value


#: where :class:`EdgeBank`'s window ends: at the query time, or at the latest event time fed (TGB's rule)
WINDOW_ANCHORS = ("query", "latest")


def tgb_time_window(t_min: Union[int, float], t_max: Union[int, float], ratio: float = 0.15) -> float:
    r"""The window duration of TGB's ``EdgeBankPredictor`` (``fixed_time_window``) initialised with
    events spanning ``[t_min, t_max]``, with TGB's float64 arithmetic (for ``EdgeBank(window=...,
    anchor="latest")``):

    .. math:: w = t_{max} - (t_{min} + (t_{max} - t_{min})(1 - r)),

    about ``r`` times the span. TGB's link-prediction examples initialise it with the training
    events and keep it through validation and test.

    Raises:
        ModelConfigError: ``ratio`` is not in ``(0, 1]``.
        TemporalDataError: the events span no time (``w`` is not positive).
    """
    if not 0 < ratio <= 1:
        raise ModelConfigError(f"ratio must be in (0, 1] (TGB's default: 0.15), got {ratio!r}.")
    start = float(t_min) + float(t_max - t_min) * (1 - ratio)  # as numpy computes it: int64 span, then float64
    window = float(t_max) - start
    if not window > 0:
        raise TemporalDataError(f"the events span no time (t_min={t_min!r}, t_max={t_max!r}), so TGB's window would be "
                               f"{window!r}; initialise it with events of more than one timestamp.")
    return window


class _BufferState(TemporalLinkModel):
    """State = the registered buffers named in ``_state_keys`` (non-persistent: ``state_dict``
    holds parameters only; the state travels in :meth:`snapshot`)."""

    _state_keys: tuple[str, ...] = ()
    capabilities = Capabilities(state_in_registered_tensors=True)

    def snapshot(self) -> State:
        return {key: clone_state(getattr(self, key)) for key in self._state_keys}

    def restore(self, state: State) -> None:
        for key in self._state_keys:
            setattr(self, key, clone_state(state[key]).to(getattr(self, key).device))

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """A block is :meth:`score` on the broadcast grid ``(src[:, None], candidates[None, :], t[:, None])``.

        Every heuristic's :meth:`score` is elementwise and broadcasts, so what depends on one side only is
        computed once per row or per column (a destination's stored count or last time: ``c`` lookups,
        not ``b x c``; a source's degree; a query's window start) and only what depends on the pair (a
        pair key's lookup, a count before ``t[i]``) per element of the ``[b, c]`` block: exact (the same
        operations on the same values as :meth:`score` of the expanded pairs), with no pair expanded.
        A subclass whose :meth:`score` is its own (written for ``[P]`` pairs, as the contract of
        :meth:`~tgeval.models.base.TemporalLinkModel.score` says) is scored pair by pair.
        """
        if type(self).score.__module__ != __name__:
            return pairwise_scorer(self.score, src, t, candidates)
        return self._blocks(src, t, candidates)

    def _blocks(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """:meth:`candidate_scorer` of a model whose :meth:`score` broadcasts: blocks on the broadcast grid."""
        def scores(ev: slice, cand: Union[slice, Tensor]) -> Tensor:
            rows, cols = src[ev], candidates[cand]
            return self.score(rows[:, None], cols[None, :], t[ev][:, None]).expand(rows.numel(), cols.numel())
        return scores


class EdgeBank(_BufferState):
    r"""EdgeBank: remembers every pair seen (or seen within ``window`` time units).

    Storage is two padded sorted arrays with fixed shapes (no host synchronisation on a GPU):
    the main one (``keys``, ``last_seen``) and a small delta (``delta_keys``, ``delta_seen``)
    holding the pairs first seen since it was last merged into the main one (the two are
    disjoint). Each holds distinct pair keys ``u * num_nodes + v`` in ascending order followed
    by padding (the largest int64, never a pair key) and the latest time of each pair (padding:
    the lowest value of its dtype). An update of ``B`` events refreshes in place the times of
    its pairs already in the main array (capacity ``C``), :math:`O(B \log C)`, and merges the
    others into the delta (capacity :math:`D \approx \sqrt{BC}`), :math:`O(D + B \log B)`; the
    delta is merged into the main array, :math:`O(C + D \log C)`, only when the host's bound of
    its size reaches ``D``, every ``D / B`` updates at the soonest: :math:`O(B \log C + \sqrt{BC})`
    per update amortised, not :math:`O(C)`. Lookups consult both arrays. Capacities grow
    geometrically ahead of need; the host keeps upper bounds of the numbers of pairs and reads
    the true numbers from the device only when the main array's bound reaches its capacity
    (amortised: a few times per pass). Times keep the data's precision: int64 for integer ``t``,
    float64 otherwise.

    Args:
        num_nodes: exclusive upper bound of node ids.
        window: ``None`` for unlimited memory, else a positive duration ``w`` (int or float): a
            pair counts at time ``t`` if it was last seen in ``[t - w, t)``. A window at or beyond
            ``2^63`` (``inf``, ``1e300``, ``9.3e18``) is unlimited and recorded as ``None``
            (:func:`edgebank_window`).
        directed: if ``False``, ``(u, v)`` and ``(v, u)`` are the same pair.
        anchor: where the window ends. ``"query"``: at the query time ``t`` (the window is
            ``[t - w, t)``). ``"latest"``: at the latest event time ``T`` observed so far (TGB's
            EdgeBank: a pair counts if last seen at or after ``T - w``; ``T`` moves forward with
            each update, and inside :meth:`within_batch` with the batch's events before ``t``);
            :func:`tgb_time_window` gives TGB's ``w``.
    """

    _state_keys = ("keys", "last_seen", "latest")
    #: per catalog, the main array's prefix counts, rebuilt when the main keys change; the keys looked up in
    #: both arrays since the delta was last emptied (not state: they decide only where the pairs are kept)
    state_scratch = ("_held_index", "_looked_up")
    capabilities = Capabilities(exact_history=True, state_in_registered_tensors=True)
    keys: Tensor  # int64 [capacity]: sorted distinct pair keys of the main array, then PAD
    last_seen: Tensor  # [capacity]: last time each pair occurred (int64 or float64), then its dtype's lowest value
    delta_keys: Tensor  # int64 [delta capacity]: sorted pair keys first seen since the last merge, then PAD
    delta_seen: Tensor  # [delta capacity]: their last times (dtype of last_seen), then its lowest value
    latest: Tensor  # []: latest time of an event fed (dtype of last_seen; its lowest value before any event)
    #: smallest capacity of the padded arrays
    min_capacity = 1024
    #: an update of more events than this and than the capacity (a warm-up) is merged straight into the
    #: main array, then compacted to twice the pairs stored (one host read), not left at the room it reserved
    bulk_events = 2**16

    def __init__(self, num_nodes: int, window: Union[int, float, None] = None, directed: bool = True,
                 anchor: str = "query") -> None:
        super().__init__(num_nodes)
        if anchor not in WINDOW_ANCHORS:
            raise ModelConfigError(f"anchor must be one of {', '.join(map(repr, WINDOW_ANCHORS))}, got {anchor!r}.")
        if num_nodes > MAX_PAIR_KEY_NODES:
            raise ModelConfigError(f"num_nodes={num_nodes} is too large for int64 pair keys (at most "
                                   f"{MAX_PAIR_KEY_NODES:,}).")
        self.window = edgebank_window(window)
        #: the window asked for when it was clamped to unlimited (recorded by describe), else None
        self.window_given = None if self.window is not None or window is None else repr(window)
        # integer times: a pair counts iff last seen at or after t - floor(w) (exact, int64)
        self._floor = None if self.window is None else math.floor(self.window)
        self.directed = directed
        self.anchor = anchor
        for name, capacity in (("keys", self.min_capacity), ("delta_keys", self.min_capacity)):
            self.register_buffer(name, torch.full((capacity,), PAD, dtype=torch.long), persistent=False)
        for name in ("last_seen", "delta_seen"):
            self.register_buffer(name, torch.full((self.min_capacity,), _lowest(torch.long), dtype=torch.long),
                                 persistent=False)
        self.register_buffer("latest", torch.tensor(_lowest(torch.long)), persistent=False)
        self._bound = 0  # host-side upper bound of the number of pairs in the main array
        self._delta_bound = 0  # and in the delta
        self._held_index: Optional[tuple] = None
        self._looked_up = 0

    # -- storage ----------------------------------------------------------------------
    def _key(self, src: Tensor, dst: Tensor) -> Tensor:
        if self.directed:
            return torch.add(dst, src, alpha=self.num_nodes)
        return pair_keys(src, dst, self.num_nodes, directed=False)

    def _store(self, keys: Tensor, last_seen: Tensor, capacity: int, incoming: int = 0) -> None:
        """Install ``P`` sorted distinct keys and their times as the main array, padded to
        ``capacity > P``, and an empty delta with room for ``incoming`` more keys."""
        self.keys, self.last_seen = _padded(keys, last_seen, capacity)
        self.latest = self.latest.to(last_seen.dtype)
        self._bound = keys.numel()
        self._empty_delta(incoming)

    def _delta_capacity(self, incoming: int) -> int:
        """``max(min_capacity, 2 (B + 1), sqrt(C B))`` for batches of ``B = incoming`` events: merging a
        batch into the delta, O(D), then costs about as much per update as merging the delta into the
        main array, O(C) every ``D / B`` updates."""
        return max(self.min_capacity, 2 * (incoming + 1), math.isqrt(self.keys.numel() * incoming))

    def _empty_delta(self, incoming: int) -> None:
        """An empty delta with room for batches of ``incoming`` events (:meth:`_delta_capacity`)."""
        capacity = self._delta_capacity(incoming)
        self.delta_keys, self.delta_seen = _padded(self.keys[:0], self.last_seen[:0], capacity)
        self._delta_bound = self._looked_up = 0

    def _stored(self) -> tuple[Tensor, Tensor]:
        """The stored keys and times without padding, sorted: the main array's, merged with the
        delta's when it holds any (reads both sizes from the device, in one read)."""
        pad = torch.full((1,), PAD, dtype=torch.long, device=self.keys.device)
        size, delta = torch.cat([torch.searchsorted(self.keys, pad), torch.searchsorted(self.delta_keys, pad)]).tolist()
        if delta == 0:
            return self.keys[:size], self.last_seen[:size]
        return _merge_disjoint(self.keys[:size], self.last_seen[:size], self.delta_keys[:delta],
                               self.delta_seen[:delta], size + delta)

    def _time_dtype(self, time_dtype: torch.dtype) -> None:
        """Keep the data's time precision: the first floating-point times turn the stored ones to float64."""
        if time_dtype.is_floating_point and not self.last_seen.is_floating_point():
            keys, times = self._stored()
            self._store(keys, times.to(torch.float64), self.keys.numel())

    def _flush(self, incoming: int) -> None:
        """Merge the delta into the main array (with a host read of the sizes only when the main
        array's bound leaves too little room) and empty it with room for ``incoming`` more keys."""
        capacity = self.keys.numel()
        if self._bound + self._delta_bound + 1 >= capacity:
            keys, times = self._stored()
            self._store(keys, times, max(capacity, 2 * (keys.numel() + incoming + 1)), incoming)
            return
        self.keys, self.last_seen = _merge_disjoint(self.keys, self.last_seen, self.delta_keys, self.delta_seen,
                                                    capacity)
        self._bound += self._delta_bound
        self._empty_delta(incoming)

    def _reserve(self, incoming: int) -> None:
        """Empty the delta into the main array and make room there for ``incoming`` more keys plus
        one padding slot; reads the true size from the device only when the host bound is too high."""
        if self._delta_bound:
            self._flush(0)
        if self._bound + incoming < self.keys.numel():
            return
        keys, times = self._stored()
        self._store(keys, times, max(self.keys.numel(), 2 * (keys.numel() + incoming + 1)))

    def stored_slices(self) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
        """The main array's and the delta's keys and times up to the host's bounds of their sizes (their stored
        pairs, then a little padding), not their whole capacity."""
        return ((self.keys[:self._bound + 1], self.last_seen[:self._bound + 1]),
                (self.delta_keys[:self._delta_bound + 1], self.delta_seen[:self._delta_bound + 1]))

    def _lookup(self, key: Tensor) -> tuple[Tensor, Tensor]:
        """Whether each key is stored and its last time (arbitrary where it is not): shape of ``key``."""
        self._looked_up += key.numel() if self._delta_bound else 0
        pos, at = torch.searchsorted(self.keys, key), torch.searchsorted(self.delta_keys, key)  # padding ends both
        in_main = self.keys.take(pos) == key
        found = in_main | (self.delta_keys.take(at) == key)
        return found, torch.where(in_main, self.last_seen.take(pos), self.delta_seen.take(at))

    def _is_stored(self, key: Tensor) -> Tensor:
        return self._lookup(key)[0]

    # -- scoring ----------------------------------------------------------------------
    def _end(self, t: Tensor) -> Tensor:
        """Where the window of a query at ``t`` ends (shape of ``t``): ``t`` itself, or with
        ``anchor="latest"`` the latest event time fed before ``t`` (the stored :attr:`latest`, or
        inside :meth:`within_batch` the batch's latest time before ``t`` when later)."""
        if self.anchor == "query":
            return t
        latest = self.latest
        if t.is_floating_point() and not latest.is_floating_point():
            latest = latest.double()
        earlier: Optional[Occurrences] = self.earlier
        if earlier is None:
            return latest.expand_as(t)
        times = earlier.all_times  # time-sorted batch
        if times.dtype != latest.dtype or t.dtype != latest.dtype:
            times, t, latest = times.double(), t.double(), latest.double()
        before = torch.searchsorted(times, t.contiguous()) - 1  # index of the batch's latest time < t, or -1
        batch_latest = torch.where(before >= 0, times.take(before.clamp(min=0)), latest)
        return torch.maximum(batch_latest, latest)

    def _since(self, t: Tensor) -> Tensor:
        """Earliest last-seen time inside the window at ``t`` (shape of ``t``): with ``e`` its end
        (:meth:`_end`), ``e - floor(w)`` for integer times (exact: ``s >= e - w`` iff
        ``s >= e - floor(w)`` for integers; where that is below the int64 range, the lowest int64,
        so every stored time counts, never a wrap-around), ``e - w`` in float64 otherwise."""
        return _window_start(self._end(t), self.window, self._floor, self.last_seen.is_floating_point())

    def membership(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """``M`` (bool, shape of ``src``): the pair was seen before ``t`` (within the window):
        in the stored history, or inside :meth:`within_batch` among the batch's earlier events."""
        key = self._key(src, dst)
        earlier: Optional[Occurrences] = self.earlier
        if self.window is None:
            found = self._is_stored(key)
            return found if earlier is None else found | earlier.first_before(key, t)
        found, last = self._lookup(key)
        since = self._since(t)
        found = found & (last >= since)  # not in place: shapes may broadcast
        if earlier is not None:  # an occurrence in [t - w, t)
            found = found | (earlier.count_before(key, t) > earlier.count_before(key, since))
        return found

    def index_earlier(self, batch: TemporalData) -> Occurrences:
        return Occurrences(self._key(batch.src, batch.dst), batch.t, times_sorted=True)

    def _values(self) -> tuple[Union[float, Tensor], Union[float, Tensor]]:
        """Scores of an unseen and of a seen pair."""
        return 0.0, 1.0

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        unseen, seen = self._values()
        member = self.membership(src, dst, t).to(torch.float64)
        return member if (unseen, seen) == (0.0, 1.0) else unseen + (seen - unseen) * member

    # -- state ------------------------------------------------------------------------
    def update(self, batch: TemporalData) -> None:
        r"""Insert the batch's pairs and refresh their last-seen times, with fixed shapes: the
        times of pairs in the main array in place, :math:`O(B \log C)`; the other pairs merged
        into the delta (:func:`_merge_batch`), :math:`O(D + B \log B)`, after merging the delta
        into the main array when its bound leaves too little room, or when the keys looked up since it
        was emptied (each a search of both arrays) outnumber the main array's slots. A pair's time is the latest
        of its batch occurrences (batches arrive in time order). A bulk update (more events than
        :attr:`bulk_events` and the capacity), or any while the main array is no more than four
        times the delta (small arrays, or batches of more than about ``C / 16`` events), is merged
        straight into the main array (:meth:`_reserve`), :math:`O(C + B \log B)`.
        """
        size = batch.src.numel()
        if size == 0:
            return
        self._time_dtype(batch.t.dtype)
        times = batch.t if batch.t.dtype == self.last_seen.dtype else batch.t.to(self.last_seen.dtype)
        key, lowest = self._key(batch.src, batch.dst), _lowest(times.dtype)
        bulk = size > max(self.keys.numel(), self.bulk_events)  # a warm-up: one merge, then a compaction
        # a delta of a quarter of the main array or more would save little: straight into the main array
        if bulk or 4 * max(self.delta_keys.numel(), self._delta_capacity(size)) >= self.keys.numel():
            self._reserve(size)
            ks, order = torch.topk(key, size, largest=False)  # ascending
            self.keys, self.last_seen = _merge_batch(self.keys, self.last_seen, ks, times.take(order))
            self._bound += size
            if bulk:
                keys, stored = self._stored()  # fit the capacity to the pairs stored (one host read)
                self._store(keys, stored, max(self.min_capacity, 2 * (keys.numel() + 1)))
        else:
            # first (the keys looked up in the main array below must stay there): when the delta is full, or
            # when the lookups since it was emptied, each searching both arrays, outnumber the main array's
            # slots, so that merging (O(C)) costs no more than the second search did
            if self._delta_bound + size + 1 >= self.delta_keys.numel() or self._looked_up >= self.keys.numel():
                self._flush(size)
            pos = torch.searchsorted(self.keys, key)
            in_main = self.keys.take(pos) == key
            # the last slot is padding, whose time stays the lowest: the target of the other keys
            slot = torch.where(in_main, pos, self.keys.numel() - 1)
            self.last_seen.scatter_reduce_(0, slot, torch.where(in_main, times, lowest), reduce="amax",
                                           include_self=False)  # the batch's latest time replaces
            ks, order = torch.topk(torch.where(in_main, PAD, key), size, largest=False)  # ascending, stored last
            self.delta_keys, self.delta_seen = _merge_batch(
                self.delta_keys, self.delta_seen, ks, torch.where(in_main, lowest, times).take(order))
            self._delta_bound += size
        self.latest = torch.maximum(self.latest, times.max())

    def reset_state(self) -> None:
        self.latest = torch.full((), _lowest(torch.long), dtype=torch.long, device=self.keys.device)
        self._store(self.keys.new_zeros(0), self.last_seen.new_zeros(0).long(), self.min_capacity)

    def snapshot(self) -> State:
        keys, last_seen = self._stored()
        return {"keys": keys.clone(), "last_seen": last_seen.clone(), "latest": self.latest.clone()}

    def restore(self, state: State) -> None:
        device = self.keys.device
        keys, last_seen = state["keys"].to(device), state["last_seen"].to(device)
        self.latest = state["latest"].to(device)
        self._store(keys, last_seen, max(self.min_capacity, 2 * (keys.numel() + 1)))

    # -- all-entity shortcut ----------------------------------------------------------
    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        r"""Exact counts from per-source numbers of seen catalog destinations.

        With :math:`n_1(u, t)` the catalog items :math:`c` available at :math:`t` for which
        :math:`(u, c)` counts as seen and :math:`n(t)` the items available at :math:`t`, seen
        items score :math:`s_1` and the others :math:`s_0`, so ``above``
        :math:`= n_1 [s_1 > p] + (n - n_1)[s_0 > p]` (likewise ``equal``). :math:`n_1` sums over
        the main array and the delta (disjoint). Without a window or availability times, it is a
        difference of prefix sums over the sorted keys, and so with a window ending at the latest
        time fed (``anchor="latest"``: one window start for every query; :math:`O(C)` a call, no
        sort); otherwise a dominance count on keys
        ``src * (C + 1) + rank(time)``, which order each source's pairs by last-seen time (window)
        or by the destination's availability time. The main array's prefix sums (or dominance
        keys by availability time) depend only on its keys and the catalog: they are kept until
        either changes, so a query costs :math:`O(B \log C + D)`, not :math:`O(C)`. Offered for
        directed banks; ``None`` with both a window and a time-masked catalog. Inside
        :meth:`within_batch`, the batch's pairs first seen before ``t`` add to :math:`n_1` (plain
        catalogs without a window; otherwise ``None``).
        """
        earlier: Optional[Occurrences] = self.earlier
        available_from = catalog.available_from
        timed = self.window is not None or available_from is not None
        if not self.directed or (self.window is not None and available_from is not None) or (
                earlier is not None and timed):
            return None
        n = self.num_nodes
        stride = self.keys.numel() + 1 if timed else 0 if earlier is None else earlier.keys.numel()
        if n * max(stride, self.delta_keys.numel() + 1 if timed else 0) >= 2**62:
            return None  # the composite keys of a dominance count would overflow int64
        if self.window is not None and self.anchor == "latest":  # one window for every query: prefix counts
            since = self._since(t.new_zeros(()))  # the window ends at the latest time fed, whatever the query
            n_seen = sum(_prefix_count(_counted_before(included & (seen >= since)), keys, src, n)
                         for keys, seen, included in (
                             (self.keys, self.last_seen, self._main_index(catalog)[0]),
                             (self.delta_keys, self.delta_seen, self._in_catalog(self.delta_keys, catalog))))
        elif self.window is not None:  # last seen in [t - w, t): the times change at every update
            since = self._since(t)
            n_seen = sum(_count_in_time(_dominance_index(keys, seen, self._in_catalog(keys, catalog), n), src,
                                        lower=since)
                         for keys, seen in ((self.keys, self.last_seen), (self.delta_keys, self.delta_seen)))
        else:
            main = self._main_index(catalog)[1]
            delta = _catalog_index(self.delta_keys, catalog, n, self._in_catalog(self.delta_keys, catalog))
            if available_from is None:
                n_seen = _prefix_count(main, self.keys, src, n) + _prefix_count(delta, self.delta_keys, src, n)
                if earlier is not None:
                    n_seen = n_seen + self._new_pairs_before(earlier, src, t, catalog)
            else:  # destination available at t: available_from < t
                upper = t.to(available_from.dtype)
                n_seen = _count_in_time(main, src, upper=upper) + _count_in_time(delta, src, upper=upper)
        return self._counts(n_seen, catalog.size if available_from is None else catalog.num_available(t), pos_score)

    def _in_catalog(self, keys: Tensor, catalog: Catalog) -> Tensor:
        """bool, shape of ``keys``: a stored pair (not padding) whose destination is in the catalog."""
        return (catalog.indicator.take(keys % self.num_nodes) > 0) & (keys != PAD)

    def _main_index(self, catalog: Catalog) -> tuple[Tensor, Union[Tensor, tuple[Tensor, Tensor, int]]]:
        """``(included, index)`` of the main array: :meth:`_in_catalog` and :func:`_catalog_index`, rebuilt
        only when its keys or the catalog change."""
        held = self._held_index
        if held is not None and held[0] is self.keys and held[1] == tensor_version(self.keys) and held[2] is catalog:
            return held[3]
        included = self._in_catalog(self.keys, catalog)
        index = included, _catalog_index(self.keys, catalog, self.num_nodes, included)
        self._held_index = (self.keys, tensor_version(self.keys), catalog, index)
        return index

    def _new_pairs_before(self, earlier: Occurrences, src: Tensor, t: Tensor, catalog: Catalog) -> Tensor:
        """Per query, the catalog destinations of ``src[i]`` that the batch pairs with it before
        ``t[i]`` and the store does not hold: int64 ``[B]``.

        A dominance count on ``source * (M + 1) + rank(time)`` of each such pair's first
        occurrence (``rank``: the number of the batch's occurrences strictly earlier), the
        others mapped to padding; a query counts the keys in ``[u (M + 1), u (M + 1) + rank(t))``.
        """
        keys, n, stride = earlier.keys[:-1], self.num_nodes, earlier.keys.numel()
        new = earlier.first & ~self._is_stored(keys) & (catalog.indicator.take(keys % n) > 0)
        composite = torch.sort(torch.where(new, keys // n * stride + earlier.rank, PAD)).values
        base = src * stride
        return torch.searchsorted(composite, base + torch.searchsorted(earlier.all_times, t.contiguous())) - (
            torch.searchsorted(composite, base))

    def _counts(self, n_seen: Tensor, n_available: Union[int, Tensor], pos_score: Tensor) -> tuple[Tensor, Tensor]:
        n_unseen = n_available - n_seen
        unseen, seen = self._values()
        zero = torch.zeros((), dtype=torch.long, device=n_seen.device)
        above = torch.where(pos_score < seen, n_seen, zero) + torch.where(pos_score < unseen, n_unseen, zero)
        equal = torch.where(pos_score == seen, n_seen, zero) + torch.where(pos_score == unseen, n_unseen, zero)
        return above, equal

    def describe(self) -> dict:
        clamped = {} if self.window_given is None else {"window_given": self.window_given,
                                                         "window_rule": "a window at or beyond 2^63 is unlimited"}
        anchor = {} if self.window is None or self.anchor == "query" else {"anchor": self.anchor}
        return {"name": "edgebank" if self.window is None else "edgebank-window",
                "window": self.window, **clamped, **anchor, "directed": self.directed, "num_nodes": self.num_nodes}


def _padded(keys: Tensor, times: Tensor, capacity: int) -> tuple[Tensor, Tensor]:
    """``P`` sorted keys and their times, padded to ``capacity > P`` with :data:`PAD` and the lowest time."""
    padded = torch.full((capacity,), PAD, dtype=torch.long, device=keys.device)
    seen = torch.full((capacity,), _lowest(times.dtype), dtype=times.dtype, device=keys.device)
    padded[:keys.numel()], seen[:keys.numel()] = keys, times
    return padded, seen


def _merge_disjoint(keys: Tensor, times: Tensor, other: Tensor, other_times: Tensor,
                    capacity: int) -> tuple[Tensor, Tensor]:
    """Two sorted key arrays with no key in common (padding aside) and their times, merged and cut
    to ``capacity`` slots: :func:`~tgeval.data.sorted_keys.merge_slots`, :math:`O(C + D \\log C)`."""
    old_slot, new_slot = merge_slots(keys.numel(), torch.searchsorted(keys, other))
    merged = torch.empty(keys.numel() + other.numel(), dtype=torch.long, device=keys.device)
    merged.scatter_(0, old_slot, keys).scatter_(0, new_slot, other)
    seen = torch.empty(merged.numel(), dtype=times.dtype, device=keys.device)
    seen.scatter_(0, old_slot, times).scatter_(0, new_slot, other_times)
    return merged[:capacity], seen[:capacity]


def _merge_batch(keys: Tensor, times: Tensor, ks: Tensor, batch_times: Tensor) -> tuple[Tensor, Tensor]:
    r"""A batch's sorted keys ``ks`` (``B``, repeats and :data:`PAD` allowed) merged into a padded
    sorted array of capacity ``C`` with room for them, each key at the latest of its batch times:
    fixed shapes, :math:`O(C + B)`.

    With ``pos`` the insertion points of ``ks`` among the stored keys and ``new`` marking the
    last occurrence of each key not stored yet, every occurrence's key ends at slot ``pos`` plus
    the number of new keys before it in ``ks``, and stored key ``i`` moves to ``i`` plus the
    number of new keys inserted at or before ``i``; the batch's times replace the stored ones
    (batches arrive in time order).
    """
    size, capacity = ks.numel(), keys.numel()
    pos = torch.searchsorted(keys, ks)  # < capacity: the array ends with padding
    last = torch.searchsorted(ks, ks, right=True) == torch.arange(1, size + 1, device=ks.device)
    new = torch.bitwise_and(last, keys.take(pos) != ks).long()
    slot = pos + torch.cumsum(new, 0) - new  # merged slot of each occurrence's key
    bump = torch.zeros(capacity, dtype=torch.long, device=ks.device).index_add_(0, pos, new)
    moved = torch.arange(capacity, device=ks.device) + bump.cumsum(0)  # + new keys inserted at or before
    # The merged arrays are written at every slot below capacity + (new keys); the rest is cut off.
    merged = torch.empty(capacity + size, dtype=torch.long, device=ks.device)
    merged.scatter_(0, moved, keys).scatter_(0, slot, ks)
    seen = torch.empty(capacity + size, dtype=times.dtype, device=ks.device)
    seen.scatter_(0, moved, times).scatter_reduce_(0, slot, batch_times, reduce="amax", include_self=False)
    return merged[:capacity], seen[:capacity]


def _stored_pair_counts(model: _BufferState, store: EdgeBank, src: Tensor, t: Tensor, pos_score: Tensor,
                        catalog: Catalog, above_from: Tensor, least_from: Tensor,
                        every_item: Tensor) -> tuple[Tensor, Tensor]:
    """Exact counts of a pair-keyed score whose stored pairs (``store``: a value per pair key) score above the
    positive iff their value is at least ``above_from`` (at least the positive iff at least ``least_from``), every
    other pair never above it, and at least it for the queries where ``every_item``: a dominance count on
    ``(source, value)`` (:class:`~tgeval.models.counting.SourceOrder`), the batch's earlier pairs of the source
    scored one by one in place of what the count took for them."""
    n, earlier = model.num_nodes, model.earlier
    above = at_least = torch.zeros_like(src)
    queried = torch.zeros(n, dtype=torch.bool, device=src.device).index_fill_(0, src, True)
    for keys, values in store.stored_slices():
        order = SourceOrder(keys, values, _counted_pairs(keys, catalog, queried, n), n)
        start, end = order.range(src, above_from)
        above = above + (end - start)
        start, end = order.range(src, least_from)
        at_least = at_least + (end - start)
    if earlier is not None:
        rows, items = distinct_pairs(*source_pairs(earlier.keys, src, n, earlier, t), n)
        p, pair = pos_score.take(rows), torch.add(items, src.take(rows), alpha=n)
        scores = model.score(src.take(rows), items, t.take(rows))
        found, stored = store._lookup(pair)
        inside = catalog.indicator.take(items)
        above = above.index_add(0, rows, inside * (
            (scores > p).long() - (found & (stored >= above_from.take(rows))).long()))
        at_least = at_least.index_add(0, rows, inside * (
            (scores >= p).long() - (found & (stored >= least_from.take(rows))).long()))
    return above, torch.where(every_item, torch.full_like(at_least, catalog.size), at_least) - above


def _counted_pairs(keys: Tensor, catalog: Catalog, queried: Tensor, n: int) -> Tensor:
    """bool, shape of ``keys``: stored pair keys (not padding) of a queried source (``queried``: bool ``[n]``) to a
    catalog item."""
    stored = keys != PAD
    return stored & (catalog.indicator.take(keys % n) > 0) & queried.take(torch.where(stored, keys // n, 0))


#: above every count: no item's key exceeds it
_HIGHEST = torch.iinfo(torch.long).max


def _counted(model: _BufferState, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog, stored: Tensor,
             above: Tensor, least: Tensor, earlier: Optional[Occurrences],
             cap: Optional[int] = None) -> tuple[Tensor, Tensor]:
    """:func:`~tgeval.models.counting.ordered_counts` of a model that scores an item by a count (``stored``, int64
    ``[num_nodes]``, at most ``cap``) that each of the batch's earlier occurrences of it raises by one."""
    empty = src.new_zeros(0)
    changes = None if earlier is None else counter_changes(earlier, stored, t, catalog, cap)
    return ordered_counts(model.score, src, t, pos_score, catalog, stored, above, least, empty, empty,
                          lambda items, when: counter_at(earlier, stored, items, when, cap), changes)


def _endpoints(batch: TemporalData) -> Occurrences:
    """Every endpoint of a time-sorted batch, at its event's time (a self-loop counts twice, as in ``update``)."""
    return Occurrences(torch.stack([batch.src, batch.dst], 1).view(-1), torch.stack([batch.t, batch.t], 1).view(-1),
                       times_sorted=True)


def _lowest(dtype: torch.dtype) -> Union[int, float]:
    """The lowest value of ``dtype`` (padding of time arrays)."""
    return float("-inf") if dtype.is_floating_point else torch.iinfo(dtype).min


def _window_start(end: Tensor, window: Union[int, float], floor: int, float_times: bool) -> Tensor:
    """``end - window``, the earliest time inside a window ending at ``end``: ``end - floor`` in int64
    for integer times (``floor = floor(window)``, ``0 <= floor < 2^63``: exact, since ``s >= end - w``
    iff ``s >= end - floor(w)`` for integers; the lowest int64 where that is below the range, so every
    time counts, never a wrap-around), in float64 when either side holds floating-point times."""
    if float_times or end.is_floating_point():
        return end.to(torch.float64) - window
    return end.clamp(min=_lowest(torch.long) + floor) - floor


def _catalog_index(keys: Tensor, catalog: Catalog, n: int,
                   include: Tensor) -> Union[Tensor, tuple[Tensor, Tensor, int]]:
    """What a per-source count over the padded sorted ``keys`` needs: without availability times,
    the number of included keys before each slot (:func:`_prefix_count`); with them, the dominance
    index of the keys by their destination's availability time (:func:`_count_in_time`)."""
    if catalog.available_from is None:
        return _counted_before(include)
    time = catalog.available_from.take(catalog.table.take(keys % n).clamp(min=0))
    return _dominance_index(keys, time, include, n)


def _counted_before(include: Tensor) -> Tensor:
    """int64, shape of ``include``: the number of included slots before each slot (exclusive prefix sum)."""
    counted = include.long()
    return torch.cumsum(counted, 0) - counted


def _prefix_count(below: Tensor, keys: Tensor, src: Tensor, n: int) -> Tensor:
    """int64 ``[B]``: the included keys of source ``src[i]``, ``below`` counting them before each slot
    (padding is beyond every source's range ``[u n, (u + 1) n)``, never read)."""
    base = src * n
    return below.take(torch.searchsorted(keys, base + n)) - below.take(torch.searchsorted(keys, base))


def _dominance_index(keys: Tensor, time: Tensor, include: Tensor, n: int) -> tuple[Tensor, Tensor, int]:
    """``(ordered, composite, stride)`` of :func:`_count_in_time`: the sorted times, and the included
    keys sorted by ``source * stride + rank(time)`` (``rank`` = number of times below, ``stride``
    = capacity + 1), excluded keys last (:data:`PAD`)."""
    stride = keys.numel() + 1
    ordered = torch.sort(time).values
    composite = torch.where(include, (keys // n) * stride + torch.searchsorted(ordered, time), PAD)
    return ordered, torch.sort(composite).values, stride


def _count_in_time(index: tuple[Tensor, Tensor, int], src: Tensor, *,
                   lower: Optional[Tensor] = None, upper: Optional[Tensor] = None) -> Tensor:
    r"""Per query ``i``, the included keys of source ``src[i]`` whose time lies in
    ``[lower[i], upper[i])`` (a missing bound is open): int64 ``[B]``, a dominance count with
    fixed shapes on a :func:`_dominance_index`: each bound is one ``searchsorted`` inside the
    source's run."""
    ordered, composite, stride = index
    base = src * stride
    below = torch.searchsorted(composite, base if lower is None else base + torch.searchsorted(ordered, lower))
    above = torch.searchsorted(composite, base + stride if upper is None
                               else base + torch.searchsorted(ordered, upper))
    return above - below


class PairMembership(EdgeBank):
    r"""Minimal pair-membership scorer :math:`s = b + \beta M` (docs/protocol.md §6); ``EdgeBank`` with
    ``beta=1, bias=0``. With ``beta < 0`` it prefers unseen pairs.

    ``beta`` and ``bias`` are float64 parameters, so the scorer can be fitted with
    :func:`tgeval.training.train.train_epoch` (e.g. BCE against a sampler's negatives); the bank of
    seen pairs is state, as in :class:`EdgeBank`.
    """

    def __init__(self, num_nodes: int, beta: float = 1.0, bias: float = 0.0, directed: bool = True) -> None:
        super().__init__(num_nodes, window=None, directed=directed)
        self.beta = nn.Parameter(torch.tensor(float(beta), dtype=torch.float64))
        self.bias = nn.Parameter(torch.tensor(float(bias), dtype=torch.float64))

    def _values(self) -> tuple[Tensor, Tensor]:
        return self.bias.detach(), (self.bias + self.beta).detach()

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        return self.bias + self.beta * self.membership(src, dst, t).double()

    def describe(self) -> dict:
        return {"name": "membership", "beta": float(self.beta.detach()), "bias": float(self.bias.detach()),
                "directed": self.directed, "num_nodes": self.num_nodes}


class NodeMemory(_BufferState):
    """``1{u seen and v seen}``: both endpoints took part in an earlier event."""

    _state_keys = ("seen",)
    capabilities = Capabilities(exact_history=True, state_in_registered_tensors=True)
    seen: Tensor  # bool [N]

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes)
        self.register_buffer("seen", torch.zeros(num_nodes, dtype=torch.bool), persistent=False)

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        seen_src, seen_dst = self.seen[src], self.seen[dst]
        earlier: Optional[Occurrences] = self.earlier
        if earlier is not None:
            seen_src, seen_dst = seen_src | earlier.first_before(src, t), seen_dst | earlier.first_before(dst, t)
        return (seen_src & seen_dst).double()

    def index_earlier(self, batch: TemporalData) -> Occurrences:
        return _endpoints(batch)

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        """Exact counts by order statistics (:func:`~tgeval.models.counting.ordered_counts`) on whether each item
        was seen; ``None`` for a catalog with availability times."""
        if catalog.available_from is not None:
            return None
        earlier: Optional[Occurrences] = self.earlier
        stored, p = self.seen.long(), pos_score.long()
        seen_src = counter_at(earlier, stored, src, t, cap=1) > 0
        none, every = torch.full_like(p, 2), torch.full_like(p, -1)  # an unseen source scores 0 everywhere
        above, least = torch.where(seen_src, p, none), torch.where(seen_src, p, torch.where(p <= 0, every, none))
        return _counted(self, src, t, pos_score, catalog, stored, above, least, earlier, cap=1)

    def update(self, batch: TemporalData) -> None:
        self.seen[batch.src] = True
        self.seen[batch.dst] = True

    def reset_state(self) -> None:
        self.seen = torch.zeros_like(self.seen)

    def describe(self) -> dict:
        return {"name": "node-memory", "num_nodes": self.num_nodes}


class PreferentialAttachment(_BufferState):
    """Degree product ``k_u * k_v``; ``k`` counts past events touching a node (as source or destination)."""

    _state_keys = ("degree",)
    capabilities = Capabilities(exact_history=True, state_in_registered_tensors=True)
    degree: Tensor  # float64 [N]

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes)
        self.register_buffer("degree", torch.zeros(num_nodes, dtype=torch.float64), persistent=False)

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        k_src, k_dst = self.degree[src], self.degree[dst]
        earlier: Optional[Occurrences] = self.earlier
        if earlier is not None:
            k_src, k_dst = k_src + earlier.count_before(src, t), k_dst + earlier.count_before(dst, t)
        return k_src * k_dst

    def index_earlier(self, batch: TemporalData) -> Occurrences:
        return _endpoints(batch)

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        r"""Exact counts by order statistics on the degrees: for :math:`k_u > 0`, :math:`k_u k_c > p` iff
        :math:`k_c > \lfloor p / k_u \rfloor` and :math:`k_u k_c \ge p` iff :math:`k_c \ge \lceil p / k_u \rceil`
        (integers below :math:`2^{53}`); a source of degree 0 scores 0 everywhere. ``None`` for a catalog with
        availability times."""
        if catalog.available_from is not None:
            return None
        earlier: Optional[Occurrences] = self.earlier
        stored, p = self.degree.long(), pos_score.long()
        k_src = counter_at(earlier, stored, src, t)
        divisor = k_src.clamp(min=1)
        none, every = torch.full_like(p, _HIGHEST), torch.full_like(p, -1)
        above = torch.where(k_src > 0, torch.div(p, divisor, rounding_mode="floor"), none)
        least = torch.where(k_src > 0, -torch.div(-p, divisor, rounding_mode="floor"), every)
        return _counted(self, src, t, pos_score, catalog, stored, above, least, earlier)

    def update(self, batch: TemporalData) -> None:
        ones = torch.ones(batch.src.numel(), dtype=torch.float64, device=self.degree.device)
        self.degree.index_add_(0, batch.src, ones).index_add_(0, batch.dst, ones)

    def reset_state(self) -> None:
        self.degree = torch.zeros_like(self.degree)

    def describe(self) -> dict:
        return {"name": "pa", "num_nodes": self.num_nodes}


class Popularity(_BufferState):
    r"""Destination popularity: past in-degree of ``v``, optionally decayed.

    Without ``half_life`` the score is the number of past events with destination ``v``.
    With ``half_life=h`` an event at time :math:`s` contributes :math:`2^{-(t - s)/h}` to the
    popularity at time :math:`t`, and the score is its base-2 logarithm,

    .. math::
        s_t(v) = \log_2 c_v - (t - t_{ref}) / h,

    a monotone transform of the decayed count (same ranks, AUROC and AP) computed with
    exactly rounded arithmetic only: a per-query ``exp2`` would round differently in
    vectorised and scalar code paths, making a score depend on the length of the tensor it
    was computed in (i.e. on the other events of its batch). ``-inf`` for ``c_v = 0``.

    Without ``half_life`` it scores from exact per-timestamp history (``capabilities.exact_history``);
    the decayed counts are kept as of the batch start.

    With ``clock=EventClock(tau, origins)`` (:class:`~tgeval.models.clock.EventClock`) ages are
    counted in ticks of ``tau`` events instead of time: a query whose timestamp group starts at
    stream position :math:`p` has tick :math:`k = c(p)` and scores
    :math:`\log_2 \sum_{e:\, c_e < k,\, v_e = v} 2^{-(k - c_e)/h}` over the events of the earlier
    ticks (PopTrack's rule: add a batch's events, then decay once). It has exact history: a
    query's score depends on its position only, not on how the engine batches the stream, up
    to rounding (the counts are running sums; :class:`GlobalPopularity` recomputes them from the
    events, bit for bit whatever the batching). Events are numbered in the engine's canonical
    order ``(t, src, dst)``. State: the decayed counts of the ticks before the next event's, as of that tick, and the
    destinations of the events of that tick fed so far.
    """

    _state_keys = ("in_degree", "reference_time")
    in_degree: Tensor  # float64 [N], decayed counts as of reference_time
    reference_time: Tensor  # [] in the stream's time kind (int64, or float64 for float time); a tick (int64)

    def __init__(self, num_nodes: int, half_life: Optional[float] = None, clock: Clock = "time") -> None:
        super().__init__(num_nodes)
        if half_life is not None and not half_life > 0:
            raise ModelConfigError(f"half_life must be positive or None, got {half_life}.")
        self.clock = event_clock(clock)
        if self.clock is not None and half_life is None:
            raise ModelConfigError("an event clock ages events for a half-life: give half_life (in ticks) too.")
        self.half_life = half_life
        self.capabilities = self.capabilities.replace(exact_history=half_life is None or self.clock is not None)
        self.register_buffer("in_degree", torch.zeros(num_nodes, dtype=torch.float64), persistent=False)
        # in_degree holds the decayed counts as of reference_time.
        self.register_buffer("reference_time", torch.zeros((), dtype=torch.long), persistent=False)
        if self.clock is not None:  # the destinations of the current tick's events fed so far; their number
            self._state_keys = ("in_degree", "reference_time", "pending", "fed")
            self.register_buffer("pending", torch.zeros(0, dtype=torch.long), persistent=False)
            self.register_buffer("fed", torch.zeros((), dtype=torch.long), persistent=False)
            self._fed = 0  # host copy of fed

    def _decay(self, elapsed: Tensor) -> Tensor:
        if self.half_life is None:
            return torch.ones_like(elapsed)
        return torch.exp2(-elapsed / self.half_life)

    def _decayed(self, counts: Tensor, elapsed: Tensor) -> Tensor:
        """``counts * decay(elapsed)``, with zero counts staying 0 (no ``0 * inf``)."""
        if self.half_life is None:
            return counts
        return torch.where(counts > 0, counts * self._decay(elapsed), torch.zeros_like(counts))

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        if self.clock is not None:
            earlier: Optional[_TickIndex] = self.earlier
            if earlier is None:
                return torch.log2(self.in_degree)[dst] + torch.zeros_like(t, dtype=torch.float64)
            return earlier.tables[earlier.offset(t), dst]
        if self.half_life is None:
            earlier_events: Optional[Occurrences] = self.earlier
            return self.in_degree[dst] if earlier_events is None else (
                self.in_degree[dst] + earlier_events.count_before(dst, t))
        # log2 over the whole [N] table: the same code path whatever the batch.
        return torch.log2(self.in_degree)[dst] - (t - self.reference_time).double() / self.half_life

    def index_earlier(self, batch: TemporalData) -> Union[Occurrences, "_TickIndex"]:
        if self.clock is None:
            return Occurrences(batch.dst, batch.t, times_sorted=True)
        # one table per tick a query of the batch can have: the counts of the ticks before it, decayed to it
        dst, ticks, first = self._unclosed(batch)
        last = self.clock.tick_of(self._fed + max(batch.dst.numel() - 1, 0))
        shift = torch.arange(last - first + 1, device=dst.device)
        tables = (self.in_degree[None, :] * self._decay(shift[:, None].double())).flatten()
        tick = first + shift[:, None]
        seen = ticks[None, :] < tick  # [D + 1, P]: the event is of a tick before the table's
        slot = (shift[:, None] * self.num_nodes + dst[None, :])[seen]
        tables.index_add_(0, slot, self._decay((tick - ticks[None, :])[seen].double()))
        return _TickIndex(torch.log2(tables).view(-1, self.num_nodes), self.clock, self._fed, first, batch.t)

    def _unclosed(self, batch: TemporalData) -> tuple[Tensor, Tensor, int]:
        """The destinations and ticks of the events of the current tick fed so far and of ``batch``, and that
        tick (``reference_time``, host)."""
        assert self.clock is not None
        first = self.clock.tick_of(self._fed)
        positions = torch.arange(self._fed, self._fed + batch.dst.numel(), device=batch.dst.device)
        ticks = torch.cat([torch.full_like(self.pending, first), self.clock.ticks(positions)])
        return torch.cat([self.pending, batch.dst]), ticks, first

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        """Exact counts by order statistics (:mod:`tgeval.models.counting`): on the destinations' counts; with an
        event clock, on each tick's table of log-counts; with a half-life in time, by bisection of the catalog
        sorted by log-count (a query's score is the log-count minus its age). ``None`` for a catalog with
        availability times."""
        if catalog.available_from is not None:
            return None
        if self.clock is not None:
            earlier: Optional[_TickIndex] = self.earlier
            if earlier is None:
                return table_counts(torch.log2(self.in_degree)[None, :], catalog, torch.zeros_like(src), pos_score)
            return table_counts(earlier.tables, catalog, earlier.offset(t), pos_score)
        if self.half_life is not None:
            age = (t - self.reference_time).double() / self.half_life  # as score computes it
            logs = torch.sort(torch.log2(self.in_degree).take(catalog.items)).values
            return bisect_counts(logs, lambda log_count: log_count - age, pos_score)
        p = pos_score.long()
        return _counted(self, src, t, pos_score, catalog, self.in_degree.long(), p, p, self.earlier)

    def update(self, batch: TemporalData) -> None:
        if self.clock is not None:
            dst, ticks, first = self._unclosed(batch)
            self._fed += batch.dst.numel()
            now = self.clock.tick_of(self._fed)
            closed = self.clock.start_of(now) - self.clock.start_of(first)  # events of the ticks before now
            decayed = self.in_degree * self._decay(torch.tensor(float(now - first), dtype=torch.float64))
            self.in_degree = decayed.index_add(0, dst[:closed], self._decay((now - ticks[:closed]).double()))
            self.pending = dst[closed:]
            self.reference_time = torch.tensor(now, device=self.in_degree.device)
            self.fed = torch.tensor(self._fed, device=self.in_degree.device)
            return
        # elapsed times are differences in the stream's time kind (exact for int64 beyond 2^53), then float64
        self.reference_time = time_store(self.reference_time, batch.t)
        now = batch.t.max()
        decayed = self._decayed(self.in_degree, (now - self.reference_time).double())
        self.in_degree = decayed.index_add(0, batch.dst, self._decay((now - batch.t).double()))
        self.reference_time = now

    def reset_state(self) -> None:
        self.in_degree = torch.zeros_like(self.in_degree)
        self.reference_time = torch.zeros_like(self.reference_time)
        if self.clock is not None:
            self.pending, self.fed, self._fed = self.pending[:0], torch.zeros_like(self.fed), 0

    def restore(self, state: State) -> None:
        super().restore(state)
        if self.clock is not None:
            self._fed = int(self.fed)

    def describe(self) -> dict:
        return {"name": "popularity", "half_life": self.half_life, "clock": describe_clock(self.clock),
                "num_nodes": self.num_nodes}


class _TickIndex:
    """Inside :meth:`~tgeval.models.base.TemporalLinkModel.within_batch` with an event clock: per tick ``first +
    j`` a query of the batch can have, what scores it (``tables[j]``: one ``[N]`` log-count table, or
    :class:`_EventCounts`' decayed index); ``offset`` maps query times to ``j``."""

    def __init__(self, tables, clock: EventClock, fed: int, first: int, times: Tensor) -> None:
        self.tables, self.clock, self.fed, self.first, self.times = tables, clock, fed, first, times

    def offset(self, t: Tensor) -> Tensor:
        """``j = c(p) - first`` for queries at times ``t``, ``p`` the position of the first event at ``t``: the
        events fed before the batch and the batch's events strictly before ``t``."""
        position = self.fed + torch.searchsorted(self.times, t.contiguous())
        return self.clock.ticks(position) - self.first


#: what a recency or popularity heuristic keys on: the pair ``(u, v)``, or the destination ``v`` alone
SCOPES = ("local", "global")


class _Recency(EdgeBank):
    r"""Recency: :math:`s_t(u, v) = -(t - \tau)`, with :math:`\tau` the last time before :math:`t` of
    the pair ``(u, v)`` (:class:`LocalRecency`) or of ``v`` as a destination (:class:`GlobalRecency`);
    ``-inf`` when there is none (or none in :math:`[t - w, t)` with a ``window``).

    The gap :math:`t - \tau` is taken in the stream's time kind (exact in int64), then rounded to
    float64 (exact below :math:`2^{53}`; beyond, rounding keeps the order, possibly tying close
    gaps). A decayed recency :math:`2^{-(t - \tau)/h}` ranks the same, so none is offered. Storage and
    updates are :class:`EdgeBank`'s (the last time of each key), with exact history.
    """

    scope = "local"

    def __init__(self, num_nodes: int, window: Union[int, float, None] = None) -> None:
        super().__init__(num_nodes, window=window)

    def _key(self, src: Tensor, dst: Tensor) -> Tensor:
        return dst if self.scope == "global" else super()._key(src, dst)

    def _last(self, key: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
        """Whether each key occurred before ``t`` and its last time (arbitrary where not): the stored one or,
        inside :meth:`within_batch`, the batch's latest before ``t``."""
        found, last = self._lookup(key)
        earlier: Optional[Occurrences] = self.earlier
        if earlier is not None:  # the key's latest occurrence in the batch before t
            count = earlier.count_before(key, t)
            start = torch.searchsorted(earlier.keys, key.contiguous())
            batch_last = earlier.times.take(start + (count - 1).clamp(min=0))
            if batch_last.dtype != last.dtype:
                batch_last, last = batch_last.double(), last.double()
            last = torch.where(count > 0, torch.maximum(last, batch_last), last)  # stored times are older
            found = found | (count > 0)  # not in place: a block's found may broadcast ([1, c] against [b, c])
        return found, last

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        found, last = self._last(self._key(src, dst), t)
        if self.window is not None:
            found = found & (last >= self._since(t))
        gap = t.double() - last.double() if t.is_floating_point() or last.is_floating_point() else (t - last).double()
        return torch.where(found, -gap, torch.full_like(gap, -math.inf))

    def _source_counts(self, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog,
                       unseen: float) -> tuple[Tensor, Tensor]:
        """Exact counts of a score that is ``unseen`` for every pair neither stored nor in the batch before ``t``:
        the stored pairs of each query's source and its batch pairs before ``t`` scored one by one
        (:func:`~tgeval.models.counting.ordered_counts`; their numbers are read from the device), a
        catalog with no availability times."""
        n, earlier = self.num_nodes, self.earlier
        parts = [source_pairs(self.keys, src, n), source_pairs(self.delta_keys, src, n)]
        if earlier is not None:
            parts.append(source_pairs(earlier.keys, src, n, earlier, t))
        rows, items = distinct_pairs(torch.cat([r for r, _ in parts]), torch.cat([i for _, i in parts]), n)
        zeros = torch.zeros(n, dtype=torch.long, device=src.device)
        above, least = constant_thresholds(unseen, pos_score)
        return ordered_counts(self.score, src, t, pos_score, catalog, zeros, above, least, rows, items,
                              lambda dst, when: zeros.take(dst))

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        r"""Exact counts by order statistics (:mod:`~tgeval.models.counting`), for integer times: a score
        :math:`-(t - \tau) > p` iff :math:`\tau > t + p` when the positive's gap is exact in float64, below
        :math:`2^{53}` (every smaller gap is then exact too, and every larger one rounds to at least
        :math:`-p + 1`; checked with one read of the device). Local: a dominance count on the source's stored
        pairs by last time (within the window), the batch's earlier pairs of the source scored one by one,
        every other item at ``-inf``. Global (no window): the catalog sorted by last time, the batch's earlier
        events as key changes. Otherwise (float times, a rounded gap) local pairs are all scored one by one
        and global ones ``None``, as for a catalog with availability times."""
        if catalog.available_from is not None:
            return None
        exact = not (t.is_floating_point() or self.last_seen.is_floating_point()
                     or bool(((pos_score <= -2.0**53) & (pos_score > -math.inf)).any()))  # the positive's gap rounded
        lowest, finite = _lowest(torch.long), pos_score > -math.inf
        threshold = torch.where(finite, t - (-pos_score).clamp(max=2**53).long(), lowest) if exact else None
        if self.scope == "local":
            if not exact:
                return self._source_counts(src, t, pos_score, catalog, -math.inf)
            since = self._since(t) if self.window is not None else torch.full_like(t, lowest)
            above_from = torch.maximum(threshold + finite.long(), since)  # tau > t + p (any tau when p = -inf)
            return _stored_pair_counts(self, self, src, t, pos_score, catalog, above_from,
                                       torch.maximum(threshold, since), ~finite)
        if self.window is not None or not exact:
            return None
        n, earlier = self.num_nodes, self.earlier
        found, last = self._lookup(torch.arange(n, device=src.device))
        stored = torch.where(found, last, lowest)

        def last_at(dst: Tensor, when: Tensor) -> Tensor:
            seen, time = self._last(dst, when)
            return torch.where(seen, time, lowest)
        changes = None if earlier is None else key_changes(earlier, earlier.times[:-1], stored, t, catalog)
        empty = src.new_zeros(0)
        return ordered_counts(self.score, src, t, pos_score, catalog, stored, threshold, threshold, empty, empty,
                              last_at, changes)

    def describe(self) -> dict:
        return {"name": f"recency-{self.scope}", "window": self.window, "num_nodes": self.num_nodes}


class LocalRecency(_Recency):
    __doc__ = _Recency.__doc__


class GlobalRecency(_Recency):
    __doc__ = _Recency.__doc__
    scope = "global"


class _EventCounts(_BufferState, ApplyHookModule):
    r"""Popularity of the destination: the number of past events of the pair ``(u, v)``
    (:class:`LocalPopularity`) or of ``v`` as a destination (:class:`GlobalPopularity`), before
    :math:`t` (with a ``window`` ``w``: in :math:`[t - w, t)`), with exact history. Every stored event
    counts as before :math:`t` (as in :class:`EdgeBank`: the state holds only events fed before the
    query's batch); inside :meth:`within_batch`, the batch's events strictly before :math:`t` add to them.

    With ``half_life=h`` (instead of a window) an event at time :math:`s` counts
    :math:`2^{-(t - s)/h}`, and the score is the base-2 log of the decayed count, as in
    :class:`Popularity`:

    .. math:: s_t = \log_2 \sum_j 2^{(s_j - \tau)/h} - (t - \tau)/h,

    with :math:`\tau` the key's last time; the sum is recomputed from the stored events at each
    update (so it does not depend on how the events were batched), and the scores are as of the
    batch start (no exact history). ``-inf`` for a key without events.

    With ``clock=EventClock(tau, origins)`` (:class:`~tgeval.models.clock.EventClock`, with a
    ``half_life`` in ticks) the times above are ticks: a query whose timestamp group starts at
    stream position :math:`p` has tick :math:`k = c(p)` and counts the events of the ticks before
    :math:`k`, with exact history (a score depends on the query's position only, never on the
    batching); the decayed index covers the events of the ticks before the next event's, and
    inside :meth:`within_batch` one more index is built per later tick the batch's queries reach.

    State without a window, half-life or clock: the count of each key, for a pair in an
    :class:`EdgeBank` store (``pairs``: its "time" is the count; updates :math:`O(B \log P)`
    amortised for :math:`P` stored pairs), for a destination in a dense int64 ``[N]`` buffer
    (``counts``). Otherwise every event's key and time (with an event clock: its tick) in time order
    (with a window, only those at or after the latest time minus ``w``: no later query can count the
    others), indexed by key (:class:`~tgeval.data.sorted_keys.Occurrences`) at each update,
    :math:`O(M \log M)` for :math:`M` stored events.
    """

    scope = "local"
    keys: Tensor  # int64 [M]: each stored event's key, in time order (event log)
    times: Tensor  # [M]: its time (int64, or float64 for float time) (event log)
    counts: Tensor  # int64 [N]: each destination's number of events (plain global)

    def __init__(self, num_nodes: int, window: Union[int, float, None] = None,
                 half_life: Optional[float] = None, clock: Clock = "time") -> None:
        super().__init__(num_nodes)
        if self.scope == "local" and num_nodes > MAX_PAIR_KEY_NODES:
            raise ModelConfigError(f"num_nodes={num_nodes} is too large for int64 pair keys (at most "
                                   f"{MAX_PAIR_KEY_NODES:,}).")
        if half_life is not None and not half_life > 0:
            raise ModelConfigError(f"half_life must be positive or None, got {half_life}.")
        self.window = edgebank_window(window)
        if self.window is not None and half_life is not None:
            raise ModelConfigError(f"give a window or a half_life, not both (window={window!r}, "
                                   f"half_life={half_life!r}): a half-life already discounts old events.")
        self._floor = None if self.window is None else math.floor(self.window)
        self.clock = event_clock(clock)
        if self.clock is not None and half_life is None:
            raise ModelConfigError("an event clock ages events for a half-life: give half_life (in ticks) too.")
        self.half_life = half_life
        self.capabilities = self.capabilities.replace(exact_history=half_life is None or self.clock is not None)
        #: plain counts (no window, half-life nor clock): one running count per key instead of the event log
        self.plain = self.window is None and half_life is None
        self.pairs = EdgeBank(num_nodes) if self.plain and self.scope == "local" else None  # its "time": the count
        if self.pairs is not None:
            self._state_keys = ()  # the store's snapshot, prefixed (snapshot)
        elif self.plain:
            self._state_keys = ("counts",)
            self.register_buffer("counts", torch.zeros(num_nodes, dtype=torch.long), persistent=False)
        else:
            self._state_keys = ("keys", "times")
            self.register_buffer("keys", torch.zeros(0, dtype=torch.long), persistent=False)
            self.register_buffer("times", torch.zeros(0, dtype=torch.long), persistent=False)
            self._index()

    def _key(self, src: Tensor, dst: Tensor) -> Tensor:
        return dst if self.scope == "global" else torch.add(dst, src, alpha=self.num_nodes)

    def _stored_count(self, key: Tensor) -> Tensor:
        """int64, shape of ``key``: the plain count of each key fed."""
        if self.pairs is None:
            return self.counts.take(key)
        found, count = self.pairs._lookup(key)
        return torch.where(found, count, 0)

    def _index(self) -> None:
        """Index the stored events by key; with a half-life, each key's log-sum and last time (with an event
        clock: of the events of the ticks before the next event's)."""
        if self.half_life is None:
            self._log = Occurrences(self.keys, self.times, times_sorted=True)
            return
        closed = self.keys.numel() if self.clock is None else self.clock.start_of(
            self.clock.tick_of(self.keys.numel()))
        self._log, self._log_sum, self._last = _decayed_index(self.keys[:closed], self.times[:closed],
                                                              self.half_life)

    def _decayed_score(self, key: Tensor, t: Tensor, log: Occurrences, log_sum: Tensor, last_of: Tensor) -> Tensor:
        start = torch.searchsorted(log.keys, key)
        last = last_of.take(start)
        gap = t.double() - last.double() if t.is_floating_point() or last.is_floating_point() else (t - last).double()
        score = log_sum.take(start) - gap / self.half_life
        return torch.where(log.keys.take(start) == key, score, torch.full_like(score, -math.inf))

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        key = self._key(src, dst)
        earlier: Optional[Occurrences] = self.earlier
        # every stored event precedes every query (the engine feeds a batch after scoring it)
        if self.plain:  # the stored count (a destination key: one lookup per candidate of a block, not per pair)
            key = key.contiguous()
            count = self._stored_count(key)
            return (count if earlier is None else count + earlier.count_before(key, t)).double()
        log = self._log
        if self.clock is not None:
            ticks: Optional[_TickIndex] = self.earlier
            if ticks is None:
                now = torch.full_like(t, self.clock.tick_of(self.keys.numel()), dtype=torch.long)
                return self._decayed_score(key, now, log, self._log_sum, self._last)
            offset = ticks.offset(t)
            score = self._decayed_score(key, offset + ticks.first, *ticks.tables[0])
            for j, index in enumerate(ticks.tables[1:], 1):  # one per tick the batch reaches (tau events each)
                score = torch.where(offset == j, self._decayed_score(key, offset + ticks.first, *index), score)
            return score
        if self.half_life is not None:
            return self._decayed_score(key, t, log, self._log_sum, self._last)
        # every stored event precedes every query: the key's run length, no time lookup
        key = key.contiguous()
        count = torch.searchsorted(log.keys, key, right=True) - torch.searchsorted(log.keys, key)
        if earlier is not None:
            count = count + earlier.count_before(key, t)
        since = _window_start(t, self.window, self._floor, self.times.is_floating_point())
        sources = (log,) if earlier is None else (log, earlier)
        return (count - sum(occurrences.count_before(key, since) for occurrences in sources)).double()

    def index_earlier(self, batch: TemporalData) -> Union[Occurrences, _TickIndex]:
        if self.clock is None:
            return Occurrences(self._key(batch.src, batch.dst), batch.t, times_sorted=True)
        # per tick a query of the batch can have, the decayed index of the events of the ticks before it
        fed = self.keys.numel()
        keys, ticks = self._appended(batch)
        first, last = self.clock.tick_of(fed), self.clock.tick_of(fed + max(batch.src.numel() - 1, 0))
        tables = [(self._log, self._log_sum, self._last)] + [
            _decayed_index(keys[:end], ticks[:end], self.half_life)
            for end in (self.clock.start_of(tick) for tick in range(first + 1, last + 1))]
        return _TickIndex(tables, self.clock, fed, first, batch.t)

    def _appended(self, batch: TemporalData) -> tuple[Tensor, Tensor]:
        """The stored keys and times (ticks with an event clock) followed by ``batch``'s."""
        keys = torch.cat([self.keys, self._key(batch.src, batch.dst)])
        if self.clock is None:
            return keys, torch.cat([self.times, batch.t.to(self.times.dtype)])
        fed = self.keys.numel()
        return keys, torch.cat([self.times, self.clock.ticks(torch.arange(fed, keys.numel(), device=keys.device))])

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        """Exact counts by order statistics (:mod:`~tgeval.models.counting`). Local, plain counts: a dominance count
        on the source's stored pairs by count (:func:`_stored_pair_counts`); with a window or a half-life, the
        source's stored pairs and its batch pairs before ``t`` scored one by one, every other item at ``0``
        (``-inf`` with a half-life). Global (no window, no half-life): the catalog by count. ``None`` otherwise,
        with an event clock or for a catalog with availability times."""
        if catalog.available_from is not None or self.clock is not None:
            return None
        n, earlier = self.num_nodes, self.earlier
        if self.pairs is not None:  # a count above p: at least p + 1; every item scores at least 0
            p = pos_score.long()
            return _stored_pair_counts(self, self.pairs, src, t, pos_score, catalog, p + 1, p, p <= 0)
        if self.scope == "local":
            parts = [source_pairs(torch.unique_consecutive(self._log.keys), src, n)]
            if earlier is not None:
                parts.append(source_pairs(earlier.keys, src, n, earlier, t))
            rows, items = distinct_pairs(torch.cat([r for r, _ in parts]), torch.cat([i for _, i in parts]), n)
            zeros = torch.zeros(n, dtype=torch.long, device=src.device)
            above, least = constant_thresholds(-math.inf if self.half_life is not None else 0.0, pos_score)
            return ordered_counts(self.score, src, t, pos_score, catalog, zeros, above, least, rows, items,
                                  lambda dst, when: zeros.take(dst))
        if not self.plain:
            return None
        p = pos_score.long()
        return _counted(self, src, t, pos_score, catalog, self.counts, p, p, earlier)

    def update(self, batch: TemporalData) -> None:
        size = batch.src.numel()
        if size == 0:
            return
        if self.pairs is not None:  # each occurrence's running count: the stored one + its rank in the batch
            pairs = self._key(batch.src, batch.dst)
            occurrences = Occurrences(pairs, batch.t, times_sorted=True)
            rank = torch.arange(size, device=pairs.device) - occurrences.run_start + 1
            running = torch.empty_like(rank).scatter_(0, occurrences.order, rank)
            self.pairs.update(TemporalData(src=batch.src, dst=batch.dst, t=self._stored_count(pairs) + running))
            return
        if self.plain:
            self.counts.index_add_(0, batch.dst, torch.ones_like(batch.dst))
            return
        if self.clock is None:
            self.times = time_store(self.times, batch.t)
        keys, times = self._appended(batch)
        if self.window is not None:  # keep the events at or after the latest time minus w
            first = torch.searchsorted(times, _window_start(times[-1:], self.window, self._floor,
                                                            times.is_floating_point()))
            keys, times = keys[first:], times[first:]
        self.keys, self.times = keys, times
        self._index()

    def reset_state(self) -> None:
        if self.pairs is not None:
            self.pairs.reset_state()
        elif self.plain:
            self.counts = torch.zeros_like(self.counts)
        else:
            self.keys, self.times = self.keys.new_zeros(0), self.times.new_zeros(0).long()
            self._index()

    def snapshot(self) -> State:
        if self.pairs is None:
            return super().snapshot()
        return {f"pairs.{key}": value for key, value in self.pairs.snapshot().items()}

    def restore(self, state: State) -> None:
        if self.pairs is not None:
            self.pairs.restore({key[len("pairs."):]: value for key, value in state.items()})
            return
        super().restore(state)
        if not self.plain:
            self._index()

    def tensors_applied(self, fn) -> None:  # type: ignore[no-untyped-def]
        """Moving the buffers (``.to(device)``) moves the event log's index too."""
        if not self.plain:
            self._index()

    def describe(self) -> dict:
        return {"name": f"popularity-{self.scope}", "window": self.window, "half_life": self.half_life,
                "clock": describe_clock(self.clock), "num_nodes": self.num_nodes}


def _decayed_index(keys: Tensor, times: Tensor, half_life: float) -> tuple[Occurrences, Tensor, Tensor]:
    """Occurrences of time-ordered ``keys`` (``[M]``), with per sorted occurrence the log2 of its key's
    decayed count as of the key's last time (``[M + 1]`` float64) and that time."""
    log = Occurrences(keys, times, times_sorted=True)
    run_end = torch.searchsorted(log.keys, log.keys[:-1], right=True) - 1
    last = log.times.take(run_end)  # the key's last time, per occurrence
    exponent = (log.times[:-1] - last).double() / half_life  # <= 0: no overflow
    sums = torch.zeros(log.keys.numel(), dtype=torch.float64, device=log.keys.device)
    log_sum = torch.log2(sums.index_add_(0, log.run_start, torch.exp2(exponent)))
    last_of = log.times.clone()
    last_of[:-1] = last
    return log, log_sum, last_of


class LocalPopularity(_EventCounts):
    __doc__ = _EventCounts.__doc__


class GlobalPopularity(_EventCounts):
    __doc__ = _EventCounts.__doc__
    scope = "global"
