r"""Exact all-entity ranking over a catalog, in memory-bounded chunks (SPEC §7).

For event :math:`i = (u_i, v_i, t_i)` with positive score :math:`p_i`, the candidates are
the catalog items available at :math:`t_i`, minus the *excluded* items: the source
:math:`u_i` and every destination :math:`v'` with an event :math:`(u_i, v', t_i)` in the
batch (the simultaneous positives, which include :math:`v_i` itself). Ranking needs only

.. math::
    a_i = |\{c : s(u_i, c, t_i) > p_i\}|, \qquad e_i = |\{c : s(u_i, c, t_i) = p_i\}|

over the candidates (with the model's ``tie_tolerance`` band, see
:func:`~tgeval.eval.metrics.count_above_equal`); the full score vector is never stored. Scores are computed in blocks
of at most ``candidate_budget`` (event, candidate) pairs, so peak memory does not grow with
``events x catalog``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import Exclusions, build_exclusions
from tgeval.eval.metrics import count_above_equal
from tgeval.models.base import TemporalLinkModel

__all__ = ["RankCounts", "all_entity_counts", "check_no_nan"]


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


def check_no_nan(scores: Tensor, what: str) -> None:
    """Raise ``ValueError`` if ``scores`` holds NaN (a NaN would silently rank first)."""
    if bool(torch.isnan(scores).any()):
        raise ValueError(f"the model returned NaN {what}: ranks would be meaningless. "
                         f"Check the model for numerical problems before evaluating.")


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
    """
    if candidate_budget < 1:
        raise ValueError(f"candidate_budget must be >= 1, got {candidate_budget}.")
    check_no_nan(pos_score, "positive scores")
    excl = build_exclusions(src, dst, t, catalog, directed=directed)
    num_available = catalog.num_available(t)
    covered = catalog.available(dst, t)
    src_available = catalog.available(src, t)
    own = covered.long() + src_available.long() - (covered & (src == dst)).long()  # src, dst are always excluded

    counts = model.catalog_counts(src, t, pos_score, catalog) if use_shortcut else None
    if counts is not None:
        above, equal = counts
        ex_above, ex_equal = _excluded_counts(model, src, t, pos_score, excl)
        above, equal = above - ex_above, equal - ex_equal
    else:
        above, equal = _chunked_counts(model, src, t, pos_score, catalog, num_available, excl, candidate_budget)
    return RankCounts(above, equal, num_available - excl.count, excl.count - own, covered)


def _excluded_counts(model: TemporalLinkModel, src: Tensor, t: Tensor, pos_score: Tensor,
                     excl: Exclusions) -> tuple[Tensor, Tensor]:
    r"""Per event, the excluded items scoring above / equal to the positive.

    Excluded items are shared by a group, so they are scored once per group; the counts
    against each event's own threshold come from ``searchsorted`` on keys
    ``group * (V + 1) + rank(score)`` (``V`` distinct values among scores and thresholds).
    """
    device = src.device
    num_events = src.numel()
    group, item = excl.items()
    num_groups = int(torch.cat([excl.group, group]).max()) + 1 if num_events else 0
    first = torch.full((num_groups,), num_events, dtype=torch.long, device=device)
    first.scatter_reduce_(0, excl.group, torch.arange(num_events, device=device), reduce="amin")
    used = first[group] < num_events  # groups of reversed (undirected) owners may hold no event
    group, item = group[used], item[used]
    owner = first[group]
    scores = model.score(src[owner], item, t[owner])
    check_no_nan(scores, "scores of excluded candidates")
    values = torch.unique(torch.cat([scores, pos_score]))
    width = values.numel() + 1
    sorted_keys = torch.sort(group * width + torch.searchsorted(values, scores)).values
    threshold = excl.group * width + torch.searchsorted(values, pos_score)
    at_most = torch.searchsorted(sorted_keys, threshold, right=True)
    below = torch.searchsorted(sorted_keys, threshold, right=False)
    end = torch.searchsorted(sorted_keys, (excl.group + 1) * width, right=False)
    return end - at_most, at_most - below


def _chunked_counts(model: TemporalLinkModel, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog,
                    num_available: Tensor, excl: Exclusions, budget: int) -> tuple[Tensor, Tensor]:
    num_events = src.numel()
    device = src.device
    width = int(num_available.max()) if num_events else 0  # candidates needed by the latest event
    items = catalog.items[:width]
    above = torch.zeros(num_events, dtype=torch.long, device=device)
    equal = torch.zeros(num_events, dtype=torch.long, device=device)
    if width == 0:
        return above, equal
    scorer = model.candidate_scorer(src, t, items)
    tolerance = float(model.tie_tolerance)
    cols = min(width, budget)
    rows = max(1, budget // cols)
    for r0 in range(0, num_events, rows):
        r1 = min(r0 + rows, num_events)
        event = torch.arange(r0, r1, device=device)
        p = pos_score[r0:r1]
        for c0 in range(0, width, cols):
            c1 = min(c0 + cols, width)
            scores = scorer(slice(r0, r1), slice(c0, c1))
            check_no_nan(scores, "candidate scores")
            valid = torch.arange(c0, c1, device=device)[None, :] < num_available[r0:r1, None]
            valid &= ~excl.contains(event, items[c0:c1].expand(r1 - r0, c1 - c0))
            block_above, block_equal = count_above_equal(p, scores, valid, tolerance)
            above[r0:r1] += block_above
            equal[r0:r1] += block_equal
    return above, equal
