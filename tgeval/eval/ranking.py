r"""Exact all-entity ranking over a catalog, in memory-bounded chunks (SPEC §7).

For event :math:`i = (u_i, v_i, t_i)` with positive score :math:`p_i`, the candidates are
the catalog items available at :math:`t_i`, minus the *excluded* items: the source
:math:`u_i` and every destination :math:`v'` with an event :math:`(u_i, v', t_i)` in the
batch (the simultaneous positives, which include :math:`v_i` itself). Ranking needs only

.. math::
    a_i = |\{c : s(u_i, c, t_i) > p_i\}|, \qquad e_i = |\{c : s(u_i, c, t_i) = p_i\}|

over the candidates; the full score vector is never stored. Scores are computed in blocks
of at most ``candidate_budget`` (event, candidate) pairs, so peak memory does not grow with
``events x catalog``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tgeval.data.catalog import Catalog, excluded_candidates
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
                      catalog: Catalog, *, candidate_budget: int = 2**22,
                      use_shortcut: bool = True) -> RankCounts:
    """Count catalog candidates above / equal to each positive, for one timestamp batch.

    Args:
        model: scorer; must not change state (the replay engine guards this).
        src, dst, t: int64 ``[B]`` positive events of one batch (time-sorted).
        pos_score: float ``[B]``, ``model.score(src, dst, t)``.
        catalog: candidates, on the events' device.
        candidate_budget: maximum number of (event, candidate) scores held at once.
        use_shortcut: use ``model.catalog_counts`` when the model offers it (exact
            shortcuts only; tests compare it with the chunked path).
    """
    if candidate_budget < 1:
        raise ValueError(f"candidate_budget must be >= 1, got {candidate_budget}.")
    check_no_nan(pos_score, "positive scores")
    n = catalog.num_nodes
    num_events = src.numel()
    ex_event, ex_item = excluded_candidates(src, dst, t, catalog)
    num_excluded = torch.bincount(ex_event, minlength=num_events)
    is_own = (ex_item == dst[ex_event]) | (ex_item == src[ex_event])
    num_filtered = torch.bincount(ex_event[~is_own], minlength=num_events)
    num_available = catalog.num_available(t)
    covered = catalog.available(dst, t)

    counts = model.catalog_counts(src, t, pos_score, catalog) if use_shortcut else None
    if counts is not None:
        above, equal = counts
        ex_score = model.score(src[ex_event], ex_item, t[ex_event])
        p = pos_score[ex_event]
        above = above - torch.bincount(ex_event, weights=(ex_score > p).double(), minlength=num_events).long()
        equal = equal - torch.bincount(ex_event, weights=(ex_score == p).double(), minlength=num_events).long()
    else:
        above, equal = _chunked_counts(model, src, t, pos_score, catalog, num_available,
                                       ex_event * n + ex_item, candidate_budget)
    return RankCounts(above, equal, num_available - num_excluded, num_filtered, covered)


def _chunked_counts(model: TemporalLinkModel, src: Tensor, t: Tensor, pos_score: Tensor, catalog: Catalog,
                    num_available: Tensor, excluded_keys: Tensor, budget: int) -> tuple[Tensor, Tensor]:
    n = catalog.num_nodes
    num_events = src.numel()
    device = src.device
    width = int(num_available.max()) if num_events else 0  # candidates needed by the latest event
    items = catalog.items[:width]
    above = torch.zeros(num_events, dtype=torch.long, device=device)
    equal = torch.zeros(num_events, dtype=torch.long, device=device)
    if width == 0:
        return above, equal
    scorer = model.candidate_scorer(src, t, items)
    cols = min(width, budget)
    rows = max(1, budget // cols)
    last = max(excluded_keys.numel() - 1, 0)
    for r0 in range(0, num_events, rows):
        r1 = min(r0 + rows, num_events)
        event = torch.arange(r0, r1, device=device)
        p = pos_score[r0:r1, None]
        for c0 in range(0, width, cols):
            c1 = min(c0 + cols, width)
            scores = scorer(slice(r0, r1), slice(c0, c1))
            check_no_nan(scores, "candidate scores")
            valid = torch.arange(c0, c1, device=device)[None, :] < num_available[r0:r1, None]
            if excluded_keys.numel():
                key = event[:, None] * n + items[c0:c1][None, :]
                pos = torch.searchsorted(excluded_keys, key).clamp(max=last)
                valid &= excluded_keys[pos] != key
            above[r0:r1] += ((scores > p) & valid).sum(1)
            equal[r0:r1] += ((scores == p) & valid).sum(1)
    return above, equal
