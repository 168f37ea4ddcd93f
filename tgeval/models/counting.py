r"""Exact all-entity counts of a heuristic by order statistics, not by scoring every pair.

A heuristic's score of a candidate ``c`` for a query ``(u, t)`` mostly depends on ``c`` alone
through a key kept in the state (its count, its last time): only the query's *explicit* items
(the destinations its source was paired with, the items the batch's earlier events touched) can
score otherwise. So, with the catalog sorted once by that source-free key, a query's counts are
two binary searches over the sorted keys plus a correction over its explicit items
(:func:`ordered_counts`):

.. math::
    \text{above}_i = \#\{c \in C : k_c > a_i\}
        + \sum_{c \in X_i \cap C} \big(1\{s_i(c) > p_i\} - 1\{k_c > a_i\}\big),

with ``a_i`` the key above which an item outside ``X_i`` outscores the positive's ``p_i`` (and
likewise ``b_i`` for "at least"), ``s_i(c)`` the model's own score. The other tools:

* :func:`key_changes` / :func:`counter_changes` and :func:`prefix_weight_above`: the batch's earlier events
  change some keys before a query's time: the old and new keys as weighted points, counted on a merge-sort
  tree (:math:`O(M \log^2 M)` for ``M`` events);
* :class:`SourceOrder`: a source's stored pairs ordered by ``(source, value)``, for pair-keyed scores;
* :func:`table_counts`: scores read from one of a few ``[N]`` tables (one per clock tick);
* :func:`bisect_counts`: a score that is a monotone function of a sorted key, found by bisection with
  the score's own arithmetic.

Cost per batch: sorts of the catalog and of the queried sources' pairs, :math:`O(B \log C)` searches and
:math:`O(|X|)` explicit items, never :math:`O(BC)`.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor

from tgeval.data.catalog import Catalog
from tgeval.data.sorted_keys import Occurrences, expand_ranges
from tgeval.errors import ModelCapabilityError

__all__ = ["ordered_counts", "table_counts", "bisect_counts", "prefix_weight_above", "SourceOrder", "key_changes",
           "source_pairs", "counter_changes", "counter_at", "constant_thresholds", "distinct_pairs"]


def ordered_counts(score: Callable[[Tensor, Tensor, Tensor], Tensor], src: Tensor, t: Tensor, pos_score: Tensor,
                   catalog: Catalog, order_key: Tensor, above_key: Tensor, least_key: Tensor,
                   rows: Tensor, items: Tensor, key_at: Callable[[Tensor, Tensor], Tensor],
                   changes: Optional[tuple[Tensor, Tensor, Tensor]] = None) -> tuple[Tensor, Tensor]:
    """Exact ``(above, equal)``, int64 ``[B]``: the catalog items scoring above / equal to ``pos_score``.

    Args:
        score: the model's ``score(src, dst, t)`` (as the engine calls it for this batch).
        src, t, pos_score: ``[B]`` queries and their positives' scores.
        catalog: candidates, all always available.
        order_key: ``[num_nodes]`` source-free key of every node in the stored state (int64 or float64).
        above_key, least_key: ``[B]``, the dtype of ``order_key``: an item ``c`` outside query ``i``'s
            explicit items scores ``> pos_score[i]`` iff its key at ``t[i]`` is ``> above_key[i]``, and
            ``>= pos_score[i]`` iff it is ``>= least_key[i]``.
        rows, items: int64 ``[X]`` distinct ``(query, item)`` pairs, the explicit items (any ids:
            those outside the catalog weigh nothing), scored one by one.
        key_at: ``key_at(items, t)``, the items' keys at the times ``t`` (elementwise): the stored ones
            updated by the batch's events before ``t``.
        changes: ``(before, keys, weights)``: how the batch's events change the keys, as the key of an
            item before and after each change (``keys``, ``weights`` ``[2M]``: the old key with weight ``-1``,
            the new with ``+1``, ``0`` outside the catalog, in time order) and, per query, the number of
            changes strictly before it (``before``, ``[B]``); :func:`key_changes` makes them.
    """
    keys = torch.sort(order_key.take(catalog.items)).values
    size = keys.numel()
    above = size - torch.searchsorted(keys, above_key.contiguous(), right=True)
    at_least = size - torch.searchsorted(keys, least_key.contiguous())
    if changes is not None:
        before, new_keys, weights = changes
        changed_above, changed_least = prefix_weight_above(new_keys, weights, 2 * before, above_key, least_key)
        above, at_least = above + changed_above, at_least + changed_least
    inside = catalog.indicator.take(items)  # 1 for a catalog item, else 0: weights, not a mask (no host read)
    when = t.take(rows)
    scores, p, key = score(src.take(rows), items, when), pos_score.take(rows), key_at(items, when)
    above = above.index_add(0, rows, inside * ((scores > p).long() - (key > above_key.take(rows)).long()))
    at_least = at_least.index_add(0, rows, inside * ((scores >= p).long() - (key >= least_key.take(rows)).long()))
    return above, at_least - above


def table_counts(tables: Tensor, catalog: Catalog, table: Tensor, pos_score: Tensor) -> tuple[Tensor, Tensor]:
    """Exact ``(above, equal)``, int64 ``[B]``, of scores read from tables: query ``i`` scores item ``c``
    ``tables[table[i], c]`` (``tables``: ``[D, num_nodes]``), every catalog item always available.

    One sort of the catalog's ``D x C`` scores: each score's rank among them (a score ``v`` above ``p`` iff
    its rank is above ``p``'s), keyed by its table; a query's counts are searches within its table's run.
    """
    values = tables.index_select(1, catalog.items)  # [D, C]
    ordered = torch.sort(values.flatten()).values
    stride = ordered.numel() + 1
    rank = torch.searchsorted(ordered, values, right=True)  # the scores at or below each
    table_of = torch.arange(values.shape[0], device=values.device)[:, None]
    composite = torch.sort((table_of * stride + rank).flatten()).values
    base = table * stride
    end = torch.searchsorted(composite, base + stride)
    above = end - torch.searchsorted(composite, base + torch.searchsorted(ordered, pos_score.contiguous(), right=True),
                                     right=True)
    at_least = end - torch.searchsorted(composite, base + torch.searchsorted(ordered, pos_score.contiguous()) + 1)
    return above, at_least - above


def bisect_counts(sorted_keys: Tensor, score_of: Callable[[Tensor], Tensor],
                  pos_score: Tensor) -> tuple[Tensor, Tensor]:
    r"""Exact ``(above, equal)``, int64 ``[B]``, when query ``i`` scores every item by ``score_of(keys)[i]``, a
    non-decreasing function of the item's key (``sorted_keys``, ``[C]``): the first key scoring above / at
    least the positive found by bisection with the score's own arithmetic, :math:`\lceil\log_2 (C + 1)\rceil`
    steps of ``[B]`` operations."""
    size = sorted_keys.numel()

    def first(strict: bool) -> Tensor:
        lo = torch.zeros(pos_score.shape, dtype=torch.long, device=pos_score.device)
        hi = torch.full_like(lo, size)
        for _ in range((size + 1).bit_length()):
            mid = torch.div(lo + hi, 2, rounding_mode="floor")
            score = score_of(sorted_keys.take(mid.clamp(max=size - 1)))
            ok = (score > pos_score) if strict else (score >= pos_score)
            ok = ok & (mid < hi)
            hi, lo = torch.where(ok, mid, hi), torch.where(ok | (mid >= hi), lo, mid + 1)
        return lo
    above_from, least_from = first(True), first(False)
    return size - above_from, above_from - least_from


def prefix_weight_above(values: Tensor, weights: Tensor, prefix: Tensor, above: Tensor,
                        least: Tensor) -> tuple[Tensor, Tensor]:
    r"""Per query ``i``, the sums of ``weights[j]`` over ``j < prefix[i]`` with ``values[j] > above[i]`` and with
    ``values[j] >= least[i]``: int64 ``[B]`` each, dominance counts on a merge-sort tree built with sorts.

    At level ``L`` the values are grouped in aligned blocks of ``2^L`` positions, each block sorted, with
    running weight sums; a prefix ``[0, k)`` is the blocks ``(k >> L) - 1`` of the levels ``L`` whose bit
    is set in ``k``, each read with two searches per threshold: :math:`O(M \log^2 M)` to build (once for both),
    :math:`O(B \log^2 M)` to query, with no loop over events.
    """
    totals = [torch.zeros(prefix.shape, dtype=torch.long, device=prefix.device) for _ in range(2)]
    size = values.numel()
    if size == 0:
        return totals[0], totals[1]
    ordered = torch.sort(values).values
    rank = torch.searchsorted(ordered, values)  # values' ranks, in [0, size)
    cuts = (torch.searchsorted(ordered, above.contiguous(), right=True),  # ranks at or above a cut count
            torch.searchsorted(ordered, least.contiguous()))
    stride, position = size + 1, torch.arange(size, device=values.device)
    for level in range(size.bit_length()):
        composite, order = torch.sort((position >> level) * stride + rank)
        sums = torch.cat([weights.new_zeros(1), torch.cumsum(weights.take(order), 0)])
        base = ((prefix >> level) - 1) * stride
        taken = (prefix >> level) & 1 == 1
        end = sums.take(torch.searchsorted(composite, base + stride))
        for k, cut in enumerate(cuts):
            block = end - sums.take(torch.searchsorted(composite, base + cut))
            totals[k] = totals[k] + torch.where(taken, block, torch.zeros_like(block))
    return totals[0], totals[1]


def key_changes(occurrences: Occurrences, after: Tensor, stored: Tensor, t: Tensor,
                catalog: Catalog) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`ordered_counts`' ``changes`` from a batch's occurrences of nodes (each one changing its key).

    Args:
        occurrences: the nodes whose key the batch's events change, indexed by time.
        after: ``[M]``, per sorted occurrence, its node's key after it (the dtype of ``stored``).
        stored: ``[num_nodes]``, the keys before the batch.
        t: ``[B]`` query times.
        catalog: occurrences of items outside it weigh ``0``.
    """
    nodes = occurrences.keys[:-1]
    position = torch.arange(nodes.numel(), device=nodes.device)
    before = torch.where(occurrences.run_start == position, stored.take(nodes), after.take((position - 1).clamp(min=0)))
    keys = torch.empty(2 * nodes.numel(), dtype=after.dtype, device=nodes.device)
    keys[0::2] = torch.empty_like(before).scatter_(0, occurrences.order, before)  # time order: old key, new key
    keys[1::2] = torch.empty_like(after).scatter_(0, occurrences.order, after)
    inside = torch.empty_like(nodes).scatter_(0, occurrences.order, (catalog.indicator.take(nodes) > 0).long())
    return torch.searchsorted(occurrences.all_times, t.contiguous()), keys, torch.stack([-inside, inside], 1).view(-1)


class SourceOrder:
    """Stored pairs ordered by ``(source, value)``: per query, its source's pairs whose value lies in a range,
    counted (two searches) or listed.

    Args:
        keys: int64 ``[P]`` pair keys ``u * num_nodes + v`` (any order; padding allowed).
        values: ``[P]`` one value per pair (int64 or float64).
        include: bool ``[P]``: the pairs counted (e.g. not padding, destination in the catalog, source queried);
            the others are left out before sorting (one read of their number from the device).
        bound: for int64 values in ``[0, bound)`` (``num_nodes * bound < 2^63``), the values themselves order the
            pairs of a source (one sort); otherwise their ranks do (two sorts).
    """

    def __init__(self, keys: Tensor, values: Tensor, include: Tensor, num_nodes: int,
                 bound: Optional[int] = None) -> None:
        kept = torch.nonzero(include).flatten()
        keys, values = keys.take(kept), values.take(kept)
        self.keys, self.num_nodes, self.bound = keys, num_nodes, bound
        if bound is None:
            self.ordered, by_value = torch.sort(values)
            self.stride = keys.numel() + 1
            # each value's rank, the values below it: the position of the first of its run of equal values
            position = torch.arange(values.numel(), device=values.device)
            starts = torch.ones_like(position, dtype=torch.bool)
            starts[1:] = self.ordered[1:] != self.ordered[:-1]
            first = torch.cummax(torch.where(starts, position, 0), 0).values
            values = torch.empty_like(first).scatter_(0, by_value, first)
        else:
            self.stride = bound + 1
        if num_nodes * self.stride >= 2**63:
            raise ModelCapabilityError(f"{num_nodes:,} nodes x {self.stride:,} values per source overflow the int64 "
                                       f"keys that order pairs by (source, value): evaluate on fewer node ids "
                                       f"(remap them to 0..N-1).")
        self.composite, self.order = torch.sort(keys // num_nodes * self.stride + values)

    def _position(self, value: Tensor) -> Tensor:
        """Where ``value`` falls among a source's values (``stride`` past them all)."""
        if self.bound is None:
            return torch.searchsorted(self.ordered, value.contiguous())
        return value.clamp(0, self.stride)

    def range(self, src: Tensor, lower: Tensor, upper: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        """``(first, end)`` positions of the pairs of ``src[i]`` with a value in ``[lower[i], upper[i])`` (``upper``
        ``None``: no bound)."""
        base = src * self.stride
        first = torch.searchsorted(self.composite, base + self._position(lower))
        end = torch.searchsorted(self.composite, base + (self.stride if upper is None else self._position(upper)))
        return first, end

    def pairs(self, first: Tensor, end: Tensor) -> tuple[Tensor, Tensor]:
        """``(rows, items)`` of the pairs at positions ``[first[i], end[i])``."""
        rows, index = expand_ranges(first, end - first)
        return rows, self.keys.take(self.order.take(index)) % self.num_nodes


def source_pairs(sorted_keys: Tensor, src: Tensor, num_nodes: int,
                 occurrences: Optional[Occurrences] = None, t: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
    r"""``(rows, items)``: the pair keys ``u * num_nodes + v`` of each query's source ``u = src[row]`` in a sorted
    (padded) array of pair keys, the run ``[u n, (u + 1) n)``, :math:`O(\sum_i d_i)` for ``d_i`` such keys; with
    ``occurrences`` (a batch's pairs, whose ``keys`` these are) only those strictly before ``t[row]``."""
    base = src * num_nodes
    lo = torch.searchsorted(sorted_keys, base)
    rows, index = expand_ranges(lo, torch.searchsorted(sorted_keys, base + num_nodes) - lo)
    if occurrences is not None:
        keep = occurrences.times.take(index) < t.take(rows)
        rows, index = rows[keep], index[keep]
    return rows, sorted_keys.take(index) % num_nodes


def counter_changes(occurrences: Occurrences, stored: Tensor, t: Tensor, catalog: Catalog,
                    cap: Optional[int] = None) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`key_changes` of a count (``stored`` int64 ``[num_nodes]``) that each occurrence raises by one
    (at most to ``cap``)."""
    rank = torch.arange(occurrences.order.numel(), device=t.device) - occurrences.run_start + 1
    after = stored.take(occurrences.keys[:-1]) + rank
    return key_changes(occurrences, after if cap is None else after.clamp(max=cap), stored, t, catalog)


def counter_at(occurrences: Optional[Occurrences], stored: Tensor, items: Tensor, t: Tensor,
               cap: Optional[int] = None) -> Tensor:
    """The count of each of ``items`` at ``t`` (elementwise): ``stored`` raised by its occurrences before ``t``."""
    if occurrences is None:
        return stored.take(items)
    count = stored.take(items) + occurrences.count_before(items, t)
    return count if cap is None else count.clamp(max=cap)


def constant_thresholds(value: float, pos_score: Tensor) -> tuple[Tensor, Tensor]:
    """``(above_key, least_key)`` of :func:`ordered_counts` for items that all score ``value`` (order keys ``0``)."""
    big, none = torch.ones_like(pos_score, dtype=torch.long), torch.full_like(pos_score, -1, dtype=torch.long)
    return torch.where(value > pos_score, none, big), torch.where(value >= pos_score, none, big)


def distinct_pairs(rows: Tensor, items: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """The distinct ``(row, item)`` pairs among ``rows, items`` (int64 ``[X]`` each)."""
    keys = torch.unique(rows * num_nodes + items)
    return keys // num_nodes, keys % num_nodes

