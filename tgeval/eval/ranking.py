r"""Exact all-entity ranking over a catalog, in memory-bounded blocks with fixed shapes (SPEC §7).

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

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import build_exclusions
from tgeval.data.sorted_keys import expand_ranges
from tgeval.eval.metrics import tie_band
from tgeval.models.base import TemporalLinkModel

__all__ = ["RankCounts", "CandidatePlan", "plan_candidates", "all_entity_counts", "chunked_counts",
           "shortcut_counts", "check_no_nan"]


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


@dataclass(frozen=True)
class CandidatePlan:
    """Candidate facts of ``E`` consecutive events that do not depend on scores.

    Attributes:
        num_available: int64 ``[E]``, catalog items available at each event's time
            (a prefix of ``catalog.items``).
        num_candidates: int64 ``[E]``, available items minus excluded ones.
        num_filtered: int64 ``[E]``, excluded simultaneous positives other than the positive.
        covered: bool ``[E]``, the positive is an available catalog item.
        pair_row: int64 ``[X]``, the event of each (event, excluded item) pair, non-decreasing.
        pair_item: int64 ``[X]``, the excluded item.
        pair_col: int64 ``[X]``, its position in ``catalog.items``.
        pair_offsets: host int64 ``[E + 1]``: the pairs of events ``[a, b)`` are
            ``[pair_offsets[a], pair_offsets[b])``.
        available_host: host int64 ``[E]``, ``num_available`` (block widths are read from it).
    """

    num_available: Tensor
    num_candidates: Tensor
    num_filtered: Tensor
    covered: Tensor
    pair_row: Tensor
    pair_item: Tensor
    pair_col: Tensor
    pair_offsets: np.ndarray
    available_host: np.ndarray

    def width(self, a: int, b: int) -> int:
        """Candidates needed by events ``[a, b)``: the largest number of available items."""
        return int(self.available_host[a:b].max()) if b > a else 0

    def pairs(self, a: int, b: int) -> tuple[Tensor, Tensor, Tensor]:
        """``(row, item, col)`` of the pairs of events ``[a, b)``; ``row`` relative to ``a``."""
        lo, hi = int(self.pair_offsets[a]), int(self.pair_offsets[b])
        return self.pair_row[lo:hi] - a, self.pair_item[lo:hi], self.pair_col[lo:hi]

    def pair_rows(self, a: int, b: int) -> Tensor:
        """The ``row`` of :meth:`pairs` alone."""
        return self.pair_row[int(self.pair_offsets[a]):int(self.pair_offsets[b])] - a


def plan_candidates(src: Tensor, dst: Tensor, t: Tensor, catalog: Catalog, *, directed: bool = True) -> CandidatePlan:
    """The :class:`CandidatePlan` of time-sorted events (see the module docstring).

    Exclusions are those of :func:`~tgeval.data.exclusions.build_exclusions` (per ``(t, src)``
    group; with ``directed=False`` also the sources of events pointing at ``u_i``). Reads the
    per-event counts back to the host once.
    """
    excl = build_exclusions(src, dst, t, catalog, directed=directed)
    num_available = catalog.num_available(t)
    covered = catalog.available(dst, t)
    src_available = catalog.available(src, t)
    own = covered.long() + src_available.long() - (covered & (src == dst)).long()  # src, dst are always excluded
    host = torch.stack([excl.count, num_available]).cpu().numpy()
    offsets = np.zeros(src.numel() + 1, dtype=np.int64)
    np.cumsum(host[0], out=offsets[1:])
    first = torch.searchsorted(excl.keys, excl.group * excl.num_nodes)  # each event's group's first key
    row, index = expand_ranges(first, excl.count, total=int(offsets[-1]))
    item = excl.keys[index] % excl.num_nodes
    return CandidatePlan(num_available, num_available - excl.count, excl.count - own, covered,
                         row, item, catalog.position(item), offsets, host[1])


def check_no_nan(scores: Tensor, what: str) -> None:
    """Raise ``ValueError`` if ``scores`` holds NaN (a NaN would silently rank first)."""
    if bool(torch.isnan(scores).any()):
        raise ValueError(f"the model returned NaN {what}: ranks would be meaningless. "
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
                   plan: CandidatePlan, a: int, b: int, budget: int) -> tuple[Tensor, Tensor, Tensor]:
    """Counts of events ``[a, b)`` of ``plan`` by scoring the catalog in blocks.

    ``src``, ``t``, ``pos_score`` are the ``[b - a]`` events themselves. Each block of at most
    ``budget`` scores is compared with the positives over every available column; the
    excluded items of its rows are then read from the same block and subtracted, so a
    count never depends on how scores round in another call.

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
    scorer = model.candidate_scorer(src, t, items)
    tolerance = float(model.tie_tolerance)
    masked = catalog.available_from is not None  # later events may see more items than earlier ones
    cols = min(width, budget)
    rows = max(1, budget // cols)
    p = pos_score[:, None]
    for r0 in range(0, num_events, rows):
        r1 = min(r0 + rows, num_events)
        row, _, col = plan.pairs(a + r0, a + r1)
        for c0 in range(0, width, cols):
            c1 = min(c0 + cols, width)
            scores = scorer(slice(r0, r1), slice(c0, c1))
            nan = nan | torch.isnan(scores).any()
            gt, eq = _compare(scores, p[r0:r1], tolerance)
            if masked:
                valid = torch.arange(c0, c1, device=device) < plan.num_available[a + r0:a + r1, None]
                gt, eq = gt & valid, eq & valid
            block_above, block_equal = gt.sum(1), eq.sum(1)
            inside = None if (c0 == 0 and c1 == width) else (col >= c0) & (col < c1)
            local = (col - c0).clamp(0, c1 - c0 - 1) if inside is not None else col - c0
            values = scores.reshape(-1).take(row * (c1 - c0) + local)
            _subtract_pairs(block_above, block_equal, row, values, pos_score[r0:r1], tolerance, inside)
            above[r0:r1] += block_above
            equal[r0:r1] += block_equal
    return above, equal, nan


def shortcut_counts(model: TemporalLinkModel, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog,
                    plan: CandidatePlan, a: int, b: int, pair_scores: Tensor) -> Optional[tuple[Tensor, Tensor]]:
    """Counts of events ``[a, b)`` from ``model.catalog_counts`` minus the excluded items.

    ``pair_scores`` are the model's scores of the excluded pairs :meth:`CandidatePlan.pairs`
    of these events. ``None`` when the model offers no exact shortcut here.
    """
    counts = model.catalog_counts(src, t, pos_score, catalog)
    if counts is None:
        return None
    above, equal = counts
    _subtract_pairs(above, equal, plan.pair_rows(a, b), pair_scores, pos_score, float(model.tie_tolerance))
    return above, equal


def all_entity_counts(model: TemporalLinkModel, src: Tensor, dst: Tensor, t: Tensor, pos_score: Tensor,
                      catalog: Catalog, *, candidate_budget: int = 2**22, use_shortcut: bool = True,
                      directed: bool = True) -> RankCounts:
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

    Raises:
        ValueError: if a score is NaN.
    """
    if candidate_budget < 1:
        raise ValueError(f"candidate_budget must be >= 1, got {candidate_budget}.")
    check_no_nan(pos_score, "positive scores")
    plan = plan_candidates(src, dst, t, catalog, directed=directed)
    size = src.numel()
    counts = None
    if use_shortcut:
        row, item, _ = plan.pairs(0, size)
        pair_scores = model.score(src[row], item, t[row])
        check_no_nan(pair_scores, "scores of excluded candidates")
        counts = shortcut_counts(model, src, t, pos_score, catalog, plan, 0, size, pair_scores)
    if counts is None:
        above, equal, nan = chunked_counts(model, src, t, pos_score, catalog, plan, 0, size, candidate_budget)
        if bool(nan):
            raise ValueError("the model returned NaN candidate scores: ranks would be meaningless. "
                             "Check the model for numerical problems before evaluating.")
    else:
        above, equal = counts
    return RankCounts(above, equal, plan.num_candidates, plan.num_filtered, plan.covered)
