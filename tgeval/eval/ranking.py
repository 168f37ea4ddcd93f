r"""Exact all-entity ranking over a catalog, in memory-bounded blocks with fixed shapes (docs/protocol.md §7).

For event :math:`i = (u_i, v_i, t_i)` with positive score :math:`p_i`, the candidates are
the catalog items available at :math:`t_i`, minus the *excluded* items :math:`X_i`: the
source :math:`u_i` and every destination :math:`v'` with an event :math:`(u_i, v', t_i)`
(the simultaneous positives, which include :math:`v_i` itself). Ranking needs only

.. math::
    a_i = |\{c : s(u_i, c, t_i) > p_i\}|, \qquad e_i = |\{c : s(u_i, c, t_i) = p_i\}|

over the candidates (with the model's ``tie_tolerance`` band, see
:func:`~tgeval.eval.metrics.count_above_equal`); the full score vector is never stored.

Counting runs in two steps. A :class:`CandidatePlan`, built once for many events (a window
of batches), holds everything that does not depend on scores: per event the number of
available items, candidates and filtered simultaneous positives, and every (event,
excluded item) pair with its position in the catalog, plus host offsets of each event's
pairs (one device-to-host read per plan). Then per batch, the counts are taken over
*every* available item and the excluded items' own scores are subtracted, read from the
same block of scores (chunked path) or from the model's scores of the excluded pairs
(shortcut): every shape is known on the host, so no step waits for the device.
Scores are computed in blocks of at most ``candidate_budget`` (event, candidate) pairs,
so peak memory does not grow with ``events x catalog``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import build_exclusions
from tgeval.data.sorted_keys import expand_ranges
from tgeval.core.device import positions
from tgeval.core.distributed import shard as shard_range
from tgeval.errors import ModelCapabilityError, ModelOutputError, ProtocolError, SlowPathWarning
from tgeval.eval.metrics import tie_band
from tgeval.models.base import TemporalLinkModel, checked_scores, score_of, scores_pair_by_pair

__all__ = ["RankCounts", "CandidatePlan", "ShortcutPairs", "PairwiseNotice", "PAIR_LIMIT", "plan_candidates",
           "all_entity_counts", "chunked_counts", "shortcut_counts", "check_no_nan", "check_candidate_budget"]


@dataclass
class RankCounts:
    """Per-event results of all-entity ranking; int64 ``[B]`` except ``covered`` (bool).

    Attributes:
        above, equal: candidates scoring strictly above / equal to the positive.
        num_candidates: candidates after exclusions.
        num_filtered: simultaneous positives other than the positive that were removed.
        covered: the positive is itself an available catalog item.
    """

    above: Tensor
    equal: Tensor
    num_candidates: Tensor
    num_filtered: Tensor
    covered: Tensor


#: most (event, excluded item) pairs the shortcut path expands for one batch; beyond it (a
#: source with very many simultaneous events) it counts exclusions once per group instead
PAIR_LIMIT = 2**20


@dataclass(frozen=True)
class CandidatePlan:
    """Candidate facts of ``E`` consecutive events that do not depend on scores.

    Exclusions are stored once per ``(t, source)`` group (linear in the events, even for a
    source with thousands of simultaneous events); per-event (event, excluded item) pairs are
    expanded on demand for a range of events, with sizes read from host offsets.

    Attributes:
        num_available: int64 ``[E]``, catalog items available at each event's time
            (a prefix of ``catalog.items``).
        num_candidates: int64 ``[E]``, available items minus excluded ones.
        num_filtered: int64 ``[E]``, excluded simultaneous positives other than the positive.
        covered: bool ``[E]``, the positive is an available catalog item.
        excluded: int64 ``[X]``, sorted distinct keys ``group * num_nodes + item`` of the
            excluded available items (:mod:`tgeval.data.exclusions`).
        num_nodes: the key stride.
        group: int64 ``[E]``, each event's group.
        first: int64 ``[E]``, position in ``excluded`` of the event's group's first key.
        count: int64 ``[E]``, excluded available items of each event.
        leader: bool ``[E]``, the event is the first of its group.
        host: host int64 ``[4, E + 1]``: prefix sums of ``count``, of ``count`` over leaders,
            of ``leader``; and ``num_available`` (last column 0).
    """

    num_available: Tensor
    num_candidates: Tensor
    num_filtered: Tensor
    covered: Tensor
    excluded: Tensor
    num_nodes: int
    group: Tensor
    first: Tensor
    count: Tensor
    leader: Tensor
    host: np.ndarray

    def width(self, a: int, b: int) -> int:
        """Candidates needed by events ``[a, b)``: the largest number of available items."""
        return int(self.host[3, a:b].max()) if b > a else 0

    def num_pairs(self, a: int, b: int) -> int:
        """(event, excluded item) pairs of events ``[a, b)``."""
        return int(self.host[0, b] - self.host[0, a])

    def _expand(self, rows: Tensor, total: int) -> tuple[Tensor, Tensor]:
        """``(owner, item)``: every excluded item of the events ``rows`` (owner indexes ``rows``)."""
        owner, index = expand_ranges(self.first[rows], self.count[rows], total=total)
        return owner, self.excluded[index] % self.num_nodes

    def pairs(self, a: int, b: int) -> tuple[Tensor, Tensor]:
        """``(row, item)`` of every (event, excluded item) pair of events ``[a, b)``, ``row``
        relative to ``a``."""
        return self._expand(torch.arange(a, b, device=self.first.device), self.num_pairs(a, b))

    def shortcut_pairs(self, a: int, b: int) -> "ShortcutPairs":
        """The pairs whose scores :func:`shortcut_counts` needs for events ``[a, b)``: every
        event's, or only each group's first event's when there are more than
        :data:`PAIR_LIMIT` (events of a group share them)."""
        if self.num_pairs(a, b) <= PAIR_LIMIT:
            return ShortcutPairs(*self.pairs(a, b), None)
        leaders = positions(self.leader[a:b], int(self.host[2, b] - self.host[2, a]))
        owner, item = self._expand(a + leaders, int(self.host[1, b] - self.host[1, a]))
        return ShortcutPairs(leaders[owner], item, self.group[a:b])


@dataclass(frozen=True)
class ShortcutPairs:
    """Excluded (event, item) pairs of a batch for :func:`shortcut_counts`.

    Attributes:
        row: int64 ``[X]``, the event of each pair (relative to the batch).
        item: int64 ``[X]``, the excluded item.
        group: int64 ``[B]``, each event's group when the pairs are given once per group
            (``row`` is then the group's first event); ``None`` when every event has its own.
    """

    row: Tensor
    item: Tensor
    group: Optional[Tensor]


def plan_candidates(src: Tensor, dst: Tensor, t: Tensor, catalog: Catalog, *, directed: bool = True) -> CandidatePlan:
    """The :class:`CandidatePlan` of time-sorted events (see the module docstring).

    Exclusions are those of :func:`~tgeval.data.exclusions.build_exclusions` (per ``(t, src)``
    group; with ``directed=False`` also the sources of events pointing at ``u_i``). Reads the
    per-event counts back to the host once.
    """
    excl = build_exclusions(src, dst, t, catalog, directed=directed)
    size = src.numel()
    num_available = catalog.num_available(t)
    covered = catalog.available(dst, t)
    src_available = catalog.available(src, t)
    own = covered.long() + src_available.long() - (covered & (src == dst)).long()  # src, dst are always excluded
    events = torch.arange(size, device=src.device)
    num_groups = int(excl.group.max()) + 1 if size else 0
    first_event = torch.full((num_groups,), size, dtype=torch.long, device=src.device)
    first_event.scatter_reduce_(0, excl.group, events, reduce="amin")
    leader = first_event.take(excl.group) == events
    counts = torch.stack([excl.count, excl.count * leader, leader.long(), num_available])
    host = np.zeros((4, size + 1), dtype=np.int64)
    np.cumsum(counts.cpu().numpy(), axis=1, out=host[:, 1:])
    host[3, :size] = host[3, 1:] - host[3, :-1]  # num_available itself, not its prefix sums
    host[3, size] = 0
    first = torch.searchsorted(excl.keys, excl.group * excl.num_nodes)
    return CandidatePlan(num_available, num_available - excl.count, excl.count - own, covered, excl.keys,
                         excl.num_nodes, excl.group, first, excl.count, leader, host)


class PairwiseNotice:
    """Says once per all-entity pass, with a :class:`~tgeval.errors.SlowPathWarning`, that ``model`` is
    scored pair by pair (:func:`~tgeval.models.base.scores_pair_by_pair`), with the pass's cost and the
    fix; silent for any other model.

    The warning comes after the pass's first :func:`chunked_counts` step that scored pairs: the cost
    is the pairs the pass scores (``num_events`` x the catalog items, or the ``prefilter`` columns, of
    this rank's shard; fewer for items not yet available) and their time at that step's rate.
    """

    def __init__(self, model: TemporalLinkModel, num_events: int, catalog: Catalog,
                 prefilter: Optional[int] = None, shard: tuple[int, int] = (0, 1)) -> None:
        self.pending = scores_pair_by_pair(model)
        self.model_name = type(model).__name__
        columns = catalog.size if prefilter is None else min(prefilter, catalog.size)
        lo, hi = shard_range(columns, *shard)
        self.num_events, self.columns = num_events, hi - lo
        self.began = 0.0

    def start(self) -> None:
        """Mark the start of a step's scoring (only while the warning is pending)."""
        if self.pending:
            self.began = time.perf_counter()

    def finish(self, scored: int, device: torch.device) -> None:
        """After a step that scored ``scored`` pairs on ``device``: warn, the first time (one device
        synchronisation, for the step's time)."""
        if not self.pending or scored == 0:
            return
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        rate = scored / max(time.perf_counter() - self.began, 1e-9)
        self.pending = False
        total = self.num_events * self.columns
        warnings.warn(
            f"{self.model_name} has no fast all-entity path, so this pass scores every (event, candidate) pair "
            f"through score(): up to {self.num_events:,} events x {self.columns:,} catalog items = {total:,} pairs, "
            f"about {total / rate:,.1f} s at the first step's {rate:,.0f} pairs/s. Fix: define embed(nodes) -> "
            f"[n, D] (from the state only) and decode(z_src, z_dst), and the engine embeds each node once per "
            f"batch; or override candidate_scorer(src, t, candidates). A model whose score costs a lookup per pair "
            f"says so by overriding candidate_scorer to return pairwise_scorer(self.score, src, t, candidates).",
            SlowPathWarning, stacklevel=2)


def check_no_nan(scores: Tensor, what: str, mask: Optional[Tensor] = None) -> None:
    """Raise :class:`~tgeval.errors.ModelOutputError` if ``scores`` holds NaN (a NaN would silently rank first)
    where ``mask`` (bool, the shape of ``scores``; ``None``: everywhere)."""
    nan = torch.isnan(scores)
    if bool((nan if mask is None else nan & mask).any()):
        raise ModelOutputError(f"the model returned NaN {what}: ranks would be meaningless. "
                               f"Check the model for numerical problems before evaluating.")


def _compare(scores: Tensor, pos: Tensor, tolerance: float) -> tuple[Tensor, Tensor]:
    """bool ``(above, equal)`` of ``scores`` against ``pos`` (broadcast), with the tie band."""
    if tolerance > 0:  # the band applies around finite positives only (an infinite one ties only with itself)
        band = torch.where(pos.isfinite(), tie_band(pos, tolerance), 0.0)
        equal = (scores == pos) | ((scores - pos).abs() <= band)
        return (scores > pos) & ~equal, equal
    return scores > pos, scores == pos


def _subtract_pairs(above: Tensor, equal: Tensor, row: Tensor, values: Tensor, pos: Tensor,
                    tolerance: float, keep: Optional[Tensor] = None) -> None:
    """Remove from ``above`` / ``equal`` (in place) the pairs ``(row, value)`` that they counted."""
    gt, eq = _compare(values, pos.take(row), tolerance)
    if keep is not None:
        gt, eq = gt & keep, eq & keep
    above.index_add_(0, row, gt.long(), alpha=-1)
    equal.index_add_(0, row, eq.long(), alpha=-1)


def chunked_counts(model: TemporalLinkModel, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog,
                   plan: CandidatePlan, a: int, b: int, budget: int,
                   shard: tuple[int, int] = (0, 1), prefilter: Optional[int] = None,
                   notice: Optional[PairwiseNotice] = None) -> tuple[Tensor, Tensor, Tensor]:
    r"""Counts of events ``[a, b)`` of ``plan`` by scoring the catalog in blocks.

    ``src``, ``t``, ``pos_score`` are the ``[b - a]`` events themselves. Each block of at most
    ``budget`` scores is compared with the positives over every available column; the
    excluded items of its rows are then read from the same block and subtracted, so a
    count never depends on how scores round in another call.

    ``shard = (rank, world)`` counts only the columns ``[lo, hi)`` =
    :func:`~tgeval.core.distributed.shard` ``(w, rank, world)`` of the ``w`` items the events need
    (the available prefix): a candidate, and so an excluded item, is counted or subtracted on
    the one rank whose range holds its column, hence

    .. math::
        a_i = \sum_r a_i^{(r)}, \qquad e_i = \sum_r e_i^{(r)}

    exactly. ``model.candidate_scorer`` is still prepared over the whole prefix on every rank
    (a model that keeps per-batch work, such as the neural models' embedding cache, then
    evolves identically on every rank), but only the rank's own blocks are scored.

    ``prefilter = L`` (approximate): the columns are instead the ``L`` items of the prefix with
    the highest ``model.candidate_prior`` (ties to the earlier item), in catalog order, and only
    they are counted (shards split them); every other item counts as below the positive.

    ``notice``: the pass's :class:`PairwiseNotice`, told how long this step's scoring took.

    Returns:
        ``(above, equal, nan)``: int64 ``[b - a]`` and a bool scalar, whether any block held NaN.
    """
    device = src.device
    num_events = b - a
    above = torch.zeros(num_events, dtype=torch.long, device=device)
    equal = torch.zeros(num_events, dtype=torch.long, device=device)
    nan = torch.zeros((), dtype=torch.bool, device=device)
    width = plan.width(a, b)
    if width == 0 or num_events == 0:
        return above, equal, nan
    items = catalog.items[:width]
    if notice is not None:
        notice.start()
    scorer = model.candidate_scorer(src, t, items)
    columns = None if prefilter is None else _top_columns(model, src, t, items, prefilter)
    lo, hi = shard_range(width if columns is None else columns.numel(), *shard)
    if hi == lo:  # an empty shard (more ranks than items): nothing to count here
        return above, equal, nan
    tolerance = float(model.capabilities.tie_tolerance)
    masked = catalog.available_from is not None  # later events may see more items than earlier ones
    # where each catalog position sits among the scored columns (-1: not scored)
    slot = None if columns is None else torch.full((width,), -1, dtype=torch.long, device=device).index_copy_(
        0, columns, torch.arange(columns.numel(), device=device))
    cols = min(hi - lo, budget)
    rows = max(1, budget // cols)
    p = pos_score[:, None]
    for r0 in range(0, num_events, rows):
        r1 = min(r0 + rows, num_events)
        row, item = plan.pairs(a + r0, a + r1)  # at most rows x width pairs: bounded by the budget
        col = catalog.position(item) if slot is None else slot[catalog.position(item)]
        for c0 in range(lo, hi, cols):
            c1 = min(c0 + cols, hi)
            block = slice(c0, c1) if columns is None else columns[c0:c1]
            scores = checked_scores(model, scorer(slice(r0, r1), block), (r1 - r0, c1 - c0), "candidate_scorer")
            nan = nan | torch.isnan(scores).any()
            gt, eq = _compare(scores, p[r0:r1], tolerance)
            if masked:
                position = torch.arange(c0, c1, device=device) if columns is None else columns[c0:c1]
                valid = position < plan.num_available[a + r0:a + r1, None]
                gt, eq = gt & valid, eq & valid
            block_above, block_equal = gt.sum(1), eq.sum(1)
            inside = None if (c0 == 0 and c1 == width and columns is None) else (col >= c0) & (col < c1)
            local = (col - c0).clamp(0, c1 - c0 - 1) if inside is not None else col - c0
            values = scores.reshape(-1).take(row * (c1 - c0) + local)
            _subtract_pairs(block_above, block_equal, row, values, pos_score[r0:r1], tolerance, inside)
            above[r0:r1] += block_above
            equal[r0:r1] += block_equal
    if notice is not None:
        notice.finish(num_events * (hi - lo), device)
    return above, equal, nan


def _top_columns(model: TemporalLinkModel, src: Tensor, t: Tensor, items: Tensor, top: int) -> Tensor:
    """Catalog positions of the ``top`` items with the highest prior, ascending: int64 ``[min(top, C)]``."""
    prior = model.candidate_prior(src, t, items)
    if prior is None:
        raise ModelCapabilityError(f"{type(model).__name__} offers no candidate_prior, so the approximate pre-filter "
                                   f"(Protocol(prefilter=L)) cannot choose candidates. Use exact ranking "
                                   f"(prefilter=None).")
    if top >= items.numel():
        return torch.arange(items.numel(), device=items.device)
    # linear time (no sort of the catalog): every item above the L-th prior, then the earliest of
    # those equal to it (a NaN prior counts as the lowest); one host read per step
    prior = torch.nan_to_num(prior, nan=float("-inf"))
    kth = torch.topk(prior, top, sorted=False).values.min()
    above = prior > kth
    tied = torch.nonzero(prior == kth).flatten()
    fill = top - int(above.sum())
    return torch.sort(torch.cat([torch.nonzero(above).flatten(), tied[:fill]])).values


def _subtract_groups(above: Tensor, equal: Tensor, group: Tensor, pair_group: Tensor, values: Tensor, pos: Tensor,
                     tolerance: float) -> None:
    r"""Remove from ``above`` / ``equal`` (in place) the excluded items counted for each event when
    the items' scores ``values`` are given once per group (``pair_group``), shared by the group's
    events (``group``).

    A dominance count with fixed shapes: ``values`` are ranked among themselves (``r``), sorted by
    the key ``group * (X + 1) + r``, and each event's two band edges become ``searchsorted``
    bounds inside its group's run.
    """
    width = values.numel() + 1
    ordered = torch.sort(values).values
    keys = torch.sort(pair_group * width + torch.searchsorted(ordered, values)).values
    band = torch.where(pos.isfinite(), tie_band(pos, tolerance), 0.0) if tolerance > 0 else None
    high, low = (pos, pos) if band is None else (pos + band, pos - band)
    base = group * width
    top = torch.searchsorted(keys, base + width)
    upper = torch.searchsorted(keys, base + torch.searchsorted(ordered, high.contiguous(), right=True))
    lower = torch.searchsorted(keys, base + torch.searchsorted(ordered, low.contiguous()))
    above.sub_(top - upper)
    equal.sub_(upper - lower)


def shortcut_counts(model: TemporalLinkModel, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog,
                    pairs: ShortcutPairs, pair_scores: Tensor) -> Optional[tuple[Tensor, Tensor]]:
    """Counts of a batch's events from ``model.catalog_counts`` minus the excluded items.

    ``pair_scores`` are the model's scores of ``pairs`` (:meth:`CandidatePlan.shortcut_pairs`).
    ``None`` when the model offers no exact shortcut here.
    """
    counts = model.catalog_counts(src, t, pos_score, catalog)
    if counts is None:
        return None
    above, equal = counts
    tolerance = float(model.capabilities.tie_tolerance)
    if pairs.group is not None:
        _subtract_groups(above, equal, pairs.group, pairs.group.take(pairs.row), pair_scores, pos_score, tolerance)
    else:
        _subtract_pairs(above, equal, pairs.row, pair_scores, pos_score, tolerance)
    return above, equal


def check_candidate_budget(candidate_budget: int) -> None:
    """Raise :class:`~tgeval.errors.ProtocolError` unless ``candidate_budget`` is an integer ``>= 1``: a block of
    no (event, candidate) score, or a negative one, would count no candidate, and every rank would be 1."""
    if isinstance(candidate_budget, bool) or not isinstance(candidate_budget, int) or candidate_budget < 1:
        raise ProtocolError(f"candidate_budget (the most (event, candidate) scores held at once) must be an integer "
                            f">= 1, got {candidate_budget!r}: with none no candidate would be counted. Give a "
                            f"positive budget (default 2**22 = 4,194,304; smaller only lowers the memory used).")


def all_entity_counts(model: TemporalLinkModel, src: Tensor, dst: Tensor, t: Tensor, pos_score: Tensor,
                      catalog: Catalog, *, candidate_budget: int = 2**22, use_shortcut: bool = True,
                      directed: bool = True, prefilter: Optional[int] = None) -> RankCounts:
    """Count catalog candidates above / equal to each positive, for one timestamp batch.

    Args:
        model: scorer; must not change state (the replay engine guards this).
        src, dst, t: int64 ``[B]`` positive events of one batch (time-sorted).
        pos_score: float ``[B]``, ``model.score(src, dst, t)``.
        catalog: candidates, on the events' device.
        candidate_budget: maximum number of (event, candidate) scores held at once.
        use_shortcut: use ``model.catalog_counts`` when the model offers it (exact
            shortcuts only; tests compare it with the chunked path).
        directed: if ``False``, an event ``(a, b, t)`` also makes ``a`` a simultaneous
            positive of source ``b`` (see :mod:`tgeval.data.exclusions`).
        prefilter: ``L`` for the approximate count over the ``L`` items with the highest
            ``model.candidate_prior`` (:func:`chunked_counts`; no shortcut), ``None``: exact.

    Raises:
        ModelOutputError: if a score is NaN.
        ProtocolError: if ``candidate_budget`` < 1.
    """
    check_candidate_budget(candidate_budget)
    check_no_nan(pos_score, "positive scores")
    plan = plan_candidates(src, dst, t, catalog, directed=directed)
    size = src.numel()
    counts = None
    if use_shortcut and prefilter is None:
        pairs = plan.shortcut_pairs(0, size)
        pair_scores = score_of(model, src[pairs.row], pairs.item, t[pairs.row])
        check_no_nan(pair_scores, "scores of excluded candidates")
        counts = shortcut_counts(model, src, t, pos_score, catalog, pairs, pair_scores)
    if counts is None:
        above, equal, nan = chunked_counts(model, src, t, pos_score, catalog, plan, 0, size, candidate_budget,
                                           prefilter=prefilter)
        if bool(nan):
            raise ModelOutputError("the model returned NaN candidate scores: ranks would be meaningless. "
                                   "Check the model for numerical problems before evaluating.")
    else:
        above, equal = counts
    return RankCounts(above, equal, plan.num_candidates, plan.num_filtered, plan.covered)
