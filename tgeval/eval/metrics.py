r"""Ranking and classification metrics of docs/protocol.md §7, as pure vectorised torch functions.

Every function here is pure: inputs are never mutated, outputs live on the input device,
and sums are accumulated exactly (int64 counts) or in float64. No function loops over
events, queries or groups in Python.

Ranking (one positive against ``K`` negatives per query)
    :func:`count_above_equal` -> :func:`rank_from_counts` -> :func:`reciprocal_rank`,
    :func:`hits_at_k`, under the tie conventions of :data:`TIE_POLICIES`.

Classification (scores and binary labels)
    :func:`auroc`, :func:`average_precision` (global) and :func:`grouped_auroc`,
    :func:`grouped_average_precision` (one value per group, e.g. per batch), and
    :func:`sampled_auroc_ap` (positives against ``[E, K]`` sampled negatives, in bounded memory).
    They equal ``sklearn.metrics.roc_auc_score`` / ``average_precision_score``, ties included.

Aggregation
    :func:`micro_mean` (mean over events) and :func:`macro_mean` (mean over groups, e.g.
    sources, of each group's mean).

NaN policy (one rule for the whole module):

* A NaN *score* never counts as good. Ranks and reciprocal ranks of a query whose positive
  or any unmasked negative is NaN are NaN; an AUROC / AP group containing a NaN score is NaN.
* Undefined classification metrics (one class only, empty group, NaN score) return NaN and
  warn :class:`~tgeval.errors.UndefinedMetricWarning` once per call.
* :func:`micro_mean` and :func:`macro_mean` *ignore* NaN values (``nanmean`` semantics), so
  "mean per-batch AUROC" skips batches whose AUROC is undefined (warned about where it was
  computed). They warn and return NaN only if no non-NaN value is left.

Host synchronisation: the pure rank functions never synchronise. Functions that may warn
(or need ``G = groups.max() + 1``, or validate non-bool labels) read one small tensor back
to the host to decide, which is inherent to warning.
"""

from __future__ import annotations

import warnings
from typing import Literal, NamedTuple, Optional, cast

import torch
from torch import Tensor

from tgeval.core.choices import TIE_POLICIES, TiePolicy
from tgeval.core.chunks import CHUNK_SCORES
from tgeval.errors import MetricInputError, ProtocolError, UndefinedMetricWarning

__all__ = [
    "TiePolicy",
    "TIE_POLICIES",
    "check_ties",
    "count_above_equal",
    "tie_band",
    "rank_from_counts",
    "reciprocal_rank",
    "hits_at_k",
    "auroc",
    "average_precision",
    "grouped_auroc",
    "grouped_average_precision",
    "AurocAp",
    "sampled_auroc_ap",
    "micro_mean",
    "macro_mean",
]


# --------------------------------------------------------------------------- validation


def check_ties(ties: str) -> TiePolicy:
    """Validate a tie convention and return it unchanged (typed as :data:`TiePolicy`).

    Args:
        ties (str): ``"average"``, ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        str: ``ties``.

    Raises:
        ProtocolError: if ``ties`` is not one of :data:`TIE_POLICIES`.

    Example:
        >>> check_ties("average")
        'average'
    """
    if not isinstance(ties, str) or ties not in TIE_POLICIES:
        choices = ", ".join(repr(p) for p in TIE_POLICIES)
        raise ProtocolError(f"`ties` must be one of {choices}, but got {ties!r}.")
    return cast(TiePolicy, ties)


def _check_1d(name: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, but got {type(x).__name__}.")
    if x.dim() != 1:
        raise MetricInputError(f"`{name}` must be 1-D, but has shape {tuple(x.shape)}.")


def _check_scores(scores: Tensor) -> None:
    _check_1d("scores", scores)
    if scores.dtype == torch.bool or scores.is_complex():
        raise TypeError(f"`scores` must be a real (float or integer) tensor, but has dtype {scores.dtype}.")


def _as_bool_labels(labels: Tensor, scores: Tensor) -> Tensor:
    """Return ``labels`` as bool ``[N]``; non-bool labels must hold only 0 and 1."""
    _check_1d("labels", labels)
    if labels.numel() != scores.numel():
        raise MetricInputError(
            f"`labels` must have one entry per score, but has {labels.numel()} for "
            f"{scores.numel()} scores."
        )
    if labels.device != scores.device:
        raise MetricInputError(f"`labels` is on {labels.device} but `scores` is on {scores.device}; move both to one "
                               f"device.")
    if labels.dtype == torch.bool:
        return labels
    if labels.is_complex():
        raise TypeError(f"`labels` must be bool or 0/1 numbers, but has dtype {labels.dtype}.")
    positive = labels == 1
    if bool(((labels != 0) & ~positive).any()):  # one host sync; pass bool labels to avoid it
        bad = labels[(labels != 0) & ~positive][:3].tolist()
        raise MetricInputError(
            f"`labels` must contain only 0 and 1 (or be bool), but contains {bad}. "
            f"Pass `labels == positive_value`."
        )
    return positive


def _check_groups(groups: Tensor, scores: Tensor, num_groups: Optional[int]) -> int:
    """Validate ``groups`` (int64 ``[N]``, values in ``[0, G)``) and return ``G``."""
    _check_1d("groups", groups)
    if groups.dtype != torch.long:
        raise TypeError(f"`groups` must be int64, but has dtype {groups.dtype}; call `groups.long()`.")
    if groups.numel() != scores.numel():
        raise MetricInputError(
            f"`groups` must have one entry per score, but has {groups.numel()} for {scores.numel()} scores."
        )
    if groups.device != scores.device:
        raise MetricInputError(f"`groups` is on {groups.device} but `scores` is on {scores.device}; move both to one "
                               f"device.")
    if num_groups is not None and (isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 0):
        raise ProtocolError(f"`num_groups` must be a non-negative int, but got {num_groups!r}.")
    if groups.numel() == 0:
        return 0 if num_groups is None else num_groups
    lo, hi = (int(v) for v in torch.aminmax(groups))  # one host sync
    if lo < 0:
        raise MetricInputError(f"`groups` must be non-negative, but contains {lo}.")
    if num_groups is None:
        return hi + 1
    if hi >= num_groups:
        raise MetricInputError(
            f"`groups` must be smaller than `num_groups`={num_groups}, but contains {hi}. "
            f"Raise `num_groups` or leave it as None."
        )
    return num_groups


# --------------------------------------------------------------------------- ranking


def tie_band(pos: Tensor, tolerance: float) -> Tensor:
    r"""Half-width of the tie band around each positive: :math:`\varepsilon \max(1, |p_i|)`, ``[Q]``."""
    return tolerance * pos.abs().clamp(min=1.0)


def count_above_equal(pos: Tensor, neg: Tensor, mask: Optional[Tensor] = None,
                      tolerance: float = 0.0) -> tuple[Tensor, Tensor]:
    r"""Count negatives scoring strictly above / exactly equal to each positive.

    .. math::
        a_i = \sum_j m_{ij}\,\mathbb{1}\{n_{ij} > p_i\}, \qquad
        b_i = \sum_j m_{ij}\,\mathbb{1}\{n_{ij} = p_i\}

    With ``tolerance`` :math:`\varepsilon > 0` (a model's ``tie_tolerance``), "equal"
    means :math:`|n_{ij} - p_i| \le \varepsilon \max(1, |p_i|)` and "above" means
    beyond that band: float32 models give one pair slightly different scores in
    differently shaped calls, and such noise must not break exact ties (:func:`tie_band`).

    Comparisons follow IEEE rules, so a NaN on either side counts as neither above nor
    equal; :func:`reciprocal_rank` turns such rows into NaN. Scores may be any real numbers
    (negative included); nothing depends on their sign.

    Args:
        pos (Tensor): float or integer ``[Q]``, score of each query's positive.
        neg (Tensor): float or integer ``[Q, K]``, scores of its ``K`` negatives
            (``K = 0`` allowed).
        mask (Tensor, optional): bool ``[Q, K]``; only entries that are ``True`` count
            (use it for ragged negatives or filtered candidates). ``None`` means all.
        tolerance (float): relative half-width of the tie band (0: exact comparison).

    Returns:
        tuple[Tensor, Tensor]: int64 ``[Q]`` counts ``(above, equal)``.

    Raises:
        MetricInputError: if the shapes do not match as stated.
        TypeError: if ``mask`` is not bool.

    Example:
        >>> pos = torch.tensor([0.5, -1.0])
        >>> neg = torch.tensor([[0.9, 0.5, 0.1], [-1.0, -1.0, 3.0]])
        >>> count_above_equal(pos, neg)
        (tensor([1, 1]), tensor([1, 2]))
        >>> count_above_equal(pos, neg, torch.tensor([[True, False, True], [True, True, False]]))
        (tensor([1, 0]), tensor([0, 2]))
    """
    _check_1d("pos", pos)
    if not isinstance(neg, Tensor) or neg.dim() != 2 or neg.size(0) != pos.numel():
        shape = tuple(neg.shape) if isinstance(neg, Tensor) else type(neg).__name__
        raise MetricInputError(f"`neg` must have shape [Q, K] with Q = pos.numel() = {pos.numel()}, but has shape "
                               f"{shape}.")
    rows = max(1, CHUNK_SCORES // max(neg.size(1), 1))
    if neg.size(0) > rows:  # row chunks: the [Q, K] comparisons are never held at once
        parts = [count_above_equal(pos[a:a + rows], neg[a:a + rows], None if mask is None else mask[a:a + rows],
                                   tolerance) for a in range(0, neg.size(0), rows)]
        return torch.cat([above for above, _ in parts]), torch.cat([equal for _, equal in parts])
    if tolerance > 0:  # the band applies around finite positives only (an infinite one ties only with itself)
        p = pos.unsqueeze(1)
        band = torch.where(p.isfinite(), tie_band(p, tolerance), 0.0)
        equal = (neg == p) | ((neg - p).abs() <= band)
        above = (neg > p) & ~equal
    else:
        above = neg > pos.unsqueeze(1)
        equal = neg == pos.unsqueeze(1)
    if mask is not None:
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"`mask` must be a bool tensor, but got {getattr(mask, 'dtype', type(mask).__name__)}.")
        if mask.shape != neg.shape:
            raise MetricInputError(f"`mask` must have the shape of `neg` {tuple(neg.shape)}, but has "
                                   f"{tuple(mask.shape)}.")
        above = above & mask
        equal = equal & mask
    return above.sum(dim=1, dtype=torch.long), equal.sum(dim=1, dtype=torch.long)


def rank_from_counts(above: Tensor, equal: Tensor, *, ties: TiePolicy) -> Tensor:
    r"""Rank of a positive (1 = best) from its counts of negatives above / equal.

    With :math:`a` negatives strictly above and :math:`b` equal:

    .. math::
        r^{\mathrm{pess}} = 1 + a + b, \qquad r^{\mathrm{opt}} = 1 + a, \qquad
        r^{\mathrm{avg}} = 1 + a + b / 2 = \tfrac12 (r^{\mathrm{pess}} + r^{\mathrm{opt}}).

    Args:
        above (Tensor): integer ``[*]``, negatives strictly above.
        equal (Tensor): integer ``[*]``, negatives equal to the positive.
        ties (str): ``"average"``, ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        Tensor: float64 ``[*]``.

    Raises:
        ProtocolError: if ``ties`` is not a valid convention.

    Example:
        >>> a, b = torch.tensor([0, 2]), torch.tensor([3, 0])
        >>> rank_from_counts(a, b, ties="average")
        tensor([2.5000, 3.0000], dtype=torch.float64)
        >>> rank_from_counts(a, b, ties="pessimistic")
        tensor([4., 3.], dtype=torch.float64)
    """
    check_ties(ties)
    above64 = above.to(torch.float64)
    if ties == "optimistic":
        return 1.0 + above64
    equal64 = equal.to(torch.float64)
    if ties == "pessimistic":
        return 1.0 + above64 + equal64
    return 1.0 + above64 + 0.5 * equal64


def _nan_rows(pos: Tensor, neg: Tensor, mask: Optional[Tensor]) -> Tensor:
    """bool ``[Q]``: the positive or any counted negative is NaN."""
    nan_neg = torch.isnan(neg)
    if mask is not None:
        nan_neg = nan_neg & mask
    return torch.isnan(pos) | nan_neg.any(dim=1)


def reciprocal_rank(pos: Tensor, neg: Tensor, *, ties: TiePolicy, mask: Optional[Tensor] = None) -> Tensor:
    r"""Reciprocal rank :math:`1 / r_i` of each positive among its negatives.

    :math:`r_i` is :func:`rank_from_counts` of :func:`count_above_equal`; e.g. with
    ``ties="average"``

    .. math::
        r_i = 1 + |\{j : n_{ij} > p_i\}| + \tfrac12 |\{j : n_{ij} = p_i\}|.

    A query with no (unmasked) negatives has rank 1. A query whose positive or any unmasked
    negative is NaN gets NaN. MRR is ``micro_mean(reciprocal_rank(...))``.

    Args:
        pos (Tensor): float or integer ``[Q]``, positive scores.
        neg (Tensor): float or integer ``[Q, K]``, negative scores.
        ties (str): ``"average"``, ``"pessimistic"`` or ``"optimistic"``.
        mask (Tensor, optional): bool ``[Q, K]``, which negatives count.

    Returns:
        Tensor: float64 ``[Q]`` in ``(0, 1]`` (or NaN).

    Example:
        >>> pos = torch.tensor([0.9, 0.2])
        >>> neg = torch.tensor([[0.9, 0.1], [0.5, 0.7]])
        >>> reciprocal_rank(pos, neg, ties="average")  # ranks 1.5 and 3
        tensor([0.6667, 0.3333], dtype=torch.float64)
        >>> reciprocal_rank(pos, neg, ties="optimistic")
        tensor([1.0000, 0.3333], dtype=torch.float64)
    """
    check_ties(ties)
    above, equal = count_above_equal(pos, neg, mask)
    rr = 1.0 / rank_from_counts(above, equal, ties=ties)
    if pos.is_floating_point() or neg.is_floating_point():
        rr = torch.where(_nan_rows(pos, neg, mask), torch.full_like(rr, float("nan")), rr)
    return rr


def hits_at_k(ranks: Tensor, k: int) -> Tensor:
    r"""Hit indicator :math:`\mathbb{1}\{r_i \le k\}` per query; Hits@k is its mean.

    With ``ties="average"`` ranks may be half-integers: a rank of 10.5 is not a hit at
    ``k = 10``. NaN ranks stay NaN.

    Args:
        ranks (Tensor): float ``[Q]``, ranks from :func:`rank_from_counts` (1 = best).
        k (int): cutoff, ``k >= 1``.

    Returns:
        Tensor: float64 ``[Q]`` of 0.0 / 1.0 (NaN where the rank is NaN).

    Raises:
        ProtocolError: if ``k`` is not a positive int.

    Example:
        >>> hits_at_k(torch.tensor([1.0, 3.0, 3.5, 10.0], dtype=torch.float64), k=3)
        tensor([1., 1., 0., 0.], dtype=torch.float64)
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ProtocolError(f"`k` must be an int >= 1, but got {k!r}.")
    ranks64 = ranks.to(torch.float64)
    hit = (ranks64 <= k).to(torch.float64)
    return torch.where(torch.isnan(ranks64), ranks64, hit)


# --------------------------------------------------------------------------- AUROC / AP

#: largest dense (group x level) histogram of the grouped metrics; beyond it, each negative's
#: bin among its group's levels is found by a search
DENSE_BINS = 2**22


class _Bins(NamedTuple):
    """Positives and negatives counted per score level: int64 ``[B]`` counts ``pos`` and
    ``neg``, and ``group`` int64 ``[B]``; a group's bins are contiguous and ascend in score."""

    pos: Tensor
    neg: Tensor
    group: Tensor


#: at most this many distinct values are compared with one by one in :func:`_levels` (a few
#: elementwise passes, cheaper than a search per score; EdgeBank's 0/1 scores have two)
FEW_LEVELS = 4


def _levels(values: Tensor, x: Tensor) -> Tensor:
    r"""Level of each ``x`` among sorted distinct ``values`` ``[U]``, int64 in ``[0, 2U]``:
    :math:`2i + 1` where ``x == values[i]``, :math:`2i` where ``values[i-1] < x < values[i]``.
    Levels order like the scores, ties included."""
    if values.numel() <= FEW_LEVELS:  # 2 |{i : values[i] < x}| + [x in values], counted in uint8 (<= 2U)
        level = torch.zeros(x.shape, dtype=torch.uint8, device=x.device)
        for v in values.unbind():
            level += (x > v).view(torch.uint8) * 2
            level += (x == v).view(torch.uint8)
        return level.long()
    below = torch.searchsorted(values, x)
    return 2 * below + (values.take(below.clamp(max=values.numel() - 1)) == x)


def _count_into(counts: Tensor, bins: Tensor, valid: Optional[Tensor] = None) -> None:
    """``counts[b] +=`` the occurrences of ``b`` in ``bins`` (where ``valid``), over the span of
    ``bins`` only (a chunk of consecutive queries fills a narrow span of a large table); invalid
    entries go to one bin past the span, dropped (no copy of the valid entries)."""
    if bins.numel():
        lo, hi = (int(v) for v in torch.aminmax(bins))  # one host sync
        if valid is not None:
            bins = torch.where(valid, bins, hi + 1)
        counts[lo:hi + 1].add_(torch.bincount((bins - lo).flatten(), minlength=hi + 2 - lo)[:hi + 1 - lo])


def _histograms(pos: Tensor, pos_group: Tensor, neg: Tensor, mask: Optional[Tensor], row_group: Tensor,
                num_groups: int, grouped: bool) -> tuple[_Bins, Optional[_Bins], Tensor]:
    r"""Count positives ``pos`` ``[P]`` (group ``pos_group``) and negatives ``neg`` ``[R, K]``
    (where ``mask``; row ``r`` in group ``row_group[r]``) per level of the distinct positive
    scores: overall, and per group if ``grouped``. Also returns int64 ``[G]``, NaN scores per group.

    Only comparisons with positives matter to AUROC and AP, so a negative is binned by its
    :func:`_levels` among the ``U`` distinct positive scores: ``2U + 1`` bins overall. Per
    group, the bins are ``(group, level)`` (dense, if ``G (2U + 1) <= DENSE_BINS``) or the
    levels among the group's own distinct positive levels (a search over the ``Q <= P``
    distinct ``(group, level)`` keys; group ``g`` takes the ``2 Q_g + 2`` bins from
    ``2 (Q_{<g} + g)``). Negatives go in row chunks of about :data:`~tgeval.core.chunks.CHUNK_SCORES` scores:
    no ``[R, K]`` temporary. NaN scores are counted, then binned as 0 (their groups are NaN).
    """
    device = pos.device
    dtype = torch.promote_types(pos.dtype, neg.dtype)
    floating = dtype.is_floating_point
    nan_g = torch.zeros(num_groups, dtype=torch.long, device=device)
    pos = pos.to(dtype)
    if floating:
        pos_nan = torch.isnan(pos)
        nan_g.index_add_(0, pos_group, pos_nan.to(torch.long))
        pos = pos.masked_fill(pos_nan, 0)
    values, inverse = torch.unique(pos, sorted=True, return_inverse=True)
    m = 2 * values.numel() + 1
    pos_level = 2 * inverse + 1
    whole = _Bins(torch.bincount(pos_level, minlength=m), torch.zeros(m, dtype=torch.long, device=device),
                  torch.zeros(m, dtype=torch.long, device=device))
    per_group: Optional[_Bins] = None
    keys: Optional[Tensor] = None
    if grouped and num_groups * m <= DENSE_BINS:
        size = num_groups * m
        pos_bin = pos_group * m + pos_level
        bin_group = torch.arange(num_groups, device=device).repeat_interleave(m)
    elif grouped:
        keys, key_index = torch.unique(pos_group * m + pos_level, sorted=True, return_inverse=True)
        per_key = torch.bincount(keys // m, minlength=num_groups)
        pos_bin = 2 * key_index + 1 + 2 * pos_group
        bin_group = torch.arange(num_groups, device=device).repeat_interleave(2 * per_key + 2)
        size = bin_group.numel()
    if grouped:
        per_group = _Bins(torch.bincount(pos_bin, minlength=size), torch.zeros(size, dtype=torch.long, device=device),
                          bin_group)
    rows = max(1, CHUNK_SCORES // max(neg.size(1), 1))
    for a in range(0, neg.size(0), rows):
        x, g = neg[a:a + rows].to(dtype).contiguous(), row_group[a:a + rows, None]  # views: one chunk copied
        valid = None if mask is None else mask[a:a + rows]
        if floating:
            nan = torch.isnan(x)
            if bool(nan.any()):  # one host sync per chunk
                nan_g.index_add_(0, g[:, 0], (nan if valid is None else nan & valid).any(1).to(torch.long))
                x = x.masked_fill(nan, 0)
        level = _levels(values, x)
        if per_group is None or keys is not None:
            _count_into(whole.neg, level, valid)
        if per_group is not None:
            key_bin = level.add_(g * m) if keys is None else _levels(keys, level.add_(g * m)) + 2 * g
            _count_into(per_group.neg, key_bin, valid)
    if per_group is not None and keys is None:  # dense: the overall counts are the sums over groups
        whole.neg.add_(per_group.neg.view(num_groups, m).sum(0))
    return whole, per_group, nan_g


def _auroc_ap(bins: _Bins, num_groups: int, nan_g: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    r"""AUROC and AP per group from :func:`_histograms`' bins, exact (int64 counts).

    With :math:`n^-_b, n^+_b` negatives and positives in bin :math:`b`, and :math:`N^-_{<b}`
    negatives in lower bins of its group:

    .. math::
        2U = \sum_b n^+_b (2 N^-_{<b} + n^-_b), \qquad
        \mathrm{AP} = \frac{1}{|P|} \sum_{b : n^+_b > 0} n^+_b \frac{TP_b}{TP_b + FP_b}

    with :math:`TP_b, FP_b` the positives / negatives in bin :math:`b` and above.

    Returns float64 ``[G]`` AUROC and AP (NaN where undefined), bool ``[G]`` one-class and
    no-positive flags, int64 ``[G]`` positives and negatives.
    """
    device = bins.pos.device
    pos_g = torch.zeros(num_groups, dtype=torch.long, device=device).index_add_(0, bins.group, bins.pos)
    neg_g = torch.zeros(num_groups, dtype=torch.long, device=device).index_add_(0, bins.group, bins.neg)
    # only bins holding positives contribute: the rest of a (mostly empty, dense) table is never expanded
    hit = torch.nonzero(bins.pos).squeeze(1)
    group, n_pos, n_neg = bins.group[hit], bins.pos[hit], bins.neg[hit]
    pos_below = torch.cumsum(bins.pos, 0)[hit] - n_pos - _exclusive_cumsum(pos_g)[group]
    neg_below = torch.cumsum(bins.neg, 0)[hit] - n_neg - _exclusive_cumsum(neg_g)[group]
    twice_u = torch.zeros(num_groups, dtype=torch.long, device=device).index_add_(
        0, group, n_pos * (2 * neg_below + n_neg))
    auc = twice_u.to(torch.float64) / (2.0 * pos_g.to(torch.float64) * neg_g.to(torch.float64))
    tp, fp = pos_g[group] - pos_below, neg_g[group] - neg_below
    precision = tp.to(torch.float64) / (tp + fp).to(torch.float64)  # tp >= 1: the bin's own positives
    ap = torch.zeros(num_groups, dtype=torch.float64, device=device).index_add_(
        0, group, n_pos.to(torch.float64) * precision)
    ap = ap / pos_g.to(torch.float64)
    has_nan, no_pos = nan_g > 0, pos_g == 0
    one_class = no_pos | (neg_g == 0)
    nan = torch.full_like(auc, float("nan"))
    return (torch.where(one_class | has_nan, nan, auc), torch.where(no_pos | has_nan, nan, ap), one_class, no_pos,
            pos_g, neg_g)


def _exclusive_cumsum(x: Tensor) -> Tensor:
    return torch.cumsum(x, 0) - x


def _warn_groups(metric: str, rule: str, undefined: Tensor, has_nan: Tensor, stacklevel: int = 3) -> None:
    """Warn once if any group is undefined (one host sync)."""
    counts = torch.stack([undefined.sum(), (has_nan & ~undefined).sum()])
    if not bool(counts.any()):
        return
    n_undef, n_nan = (int(c) for c in counts.tolist())
    total = undefined.numel()
    parts = []
    if n_undef:
        parts.append(f"{n_undef} of {total} groups have {rule}")
    if n_nan:
        parts.append(f"{n_nan} of {total} groups contain NaN scores")
    warnings.warn(
        f"{metric} is undefined for some groups: {'; '.join(parts)}. Their values are nan.",
        UndefinedMetricWarning,
        stacklevel=stacklevel,
    )


def _warn_whole(auc: Optional[Tensor], ap: Optional[Tensor], one_class: Tensor, no_pos: Tensor, nan_g: Tensor,
                pos_g: Tensor, neg_g: Tensor, stacklevel: int = 3) -> None:
    """Warn if the overall AUROC (``auc`` given) or AP (``ap`` given) is undefined (one host sync)."""
    n_pos, n_neg, n_nan, lone, empty = torch.stack([pos_g[0], neg_g[0], nan_g[0], one_class[0].long(),
                                                    no_pos[0].long()]).tolist()
    if auc is not None and (lone or n_nan):
        why = "`scores` contains NaN" if n_nan else \
            f"only one class is present ({n_pos} positives, {n_neg} negatives)"
        warnings.warn(f"AUROC is undefined: {why}. Returning nan.", UndefinedMetricWarning, stacklevel=stacklevel)
    if ap is not None and (empty or n_nan):
        why = "no positive label is present" if empty else "`scores` contains NaN"
        warnings.warn(f"Average precision is undefined: {why}. Returning nan.", UndefinedMetricWarning,
                      stacklevel=stacklevel)


def _flat(scores: Tensor, labels: Tensor, groups: Optional[Tensor], num_groups: Optional[int]
          ) -> tuple[Tensor, Tensor, Tensor, Tensor, int]:
    """Checked flat inputs as positives ``[P]`` and negatives ``[N, 1]`` with their groups, and ``G``."""
    _check_scores(scores)
    y = _as_bool_labels(labels, scores)
    if groups is None:
        groups, num = torch.zeros(scores.numel(), dtype=torch.long, device=scores.device), 1
    else:
        num = _check_groups(groups, scores, num_groups)
    return scores[y], groups[y], scores[~y].unsqueeze(1), groups[~y], num


def auroc(scores: Tensor, labels: Tensor) -> Tensor:
    r"""Area under the ROC curve, as the Mann–Whitney statistic with ties counted 1/2.

    .. math::
        \mathrm{AUROC} = \frac{1}{|P|\,|N|} \sum_{i \in P} \sum_{j \in N}
        \left(\mathbb{1}\{s_i > s_j\} + \tfrac12 \mathbb{1}\{s_i = s_j\}\right)

    This equals ``sklearn.metrics.roc_auc_score(labels, scores)``. Only the order of the
    scores matters, not their sign or scale.

    Args:
        scores (Tensor): float or integer ``[N]``, higher = more likely positive.
        labels (Tensor): bool ``[N]`` or numbers in ``{0, 1}``.

    Returns:
        Tensor: 0-dim float64. NaN, with :class:`~tgeval.errors.UndefinedMetricWarning`, if
        only one class is present (or ``N = 0``) or a score is NaN.

    Example:
        >>> s = torch.tensor([0.1, 0.4, 0.35, 0.8])
        >>> auroc(s, torch.tensor([False, False, True, True]))
        tensor(0.7500, dtype=torch.float64)
        >>> auroc(torch.tensor([1.0, 1.0]), torch.tensor([True, False]))  # a tie: 1/2
        tensor(0.5000, dtype=torch.float64)
    """
    return _whole_metric(scores, labels, "auroc")


def average_precision(scores: Tensor, labels: Tensor) -> Tensor:
    r"""Average precision: the step-wise area under the precision–recall curve.

    Thresholds are the distinct scores :math:`\theta_1 > \theta_2 > \dots`; tied scores form
    one threshold (as in scikit-learn). With :math:`TP_n, FP_n` counted at
    :math:`s \ge \theta_n` and :math:`R_n = TP_n / |P|`:

    .. math::
        \mathrm{AP} = \sum_n (R_n - R_{n-1}) \, \frac{TP_n}{TP_n + FP_n}

    This equals ``sklearn.metrics.average_precision_score(labels, scores)``. It depends on
    the positive ratio: a random scorer scores about ``|P| / N``.

    Args:
        scores (Tensor): float or integer ``[N]``, higher = more likely positive.
        labels (Tensor): bool ``[N]`` or numbers in ``{0, 1}``.

    Returns:
        Tensor: 0-dim float64. NaN, with :class:`~tgeval.errors.UndefinedMetricWarning`, if
        there is no positive (or a score is NaN).

    Example:
        >>> s = torch.tensor([0.1, 0.4, 0.35, 0.8])
        >>> average_precision(s, torch.tensor([0, 0, 1, 1]))  # (1/1 + 2/3) / 2
        tensor(0.8333, dtype=torch.float64)
    """
    return _whole_metric(scores, labels, "ap")


def _whole_metric(scores: Tensor, labels: Tensor, metric: Literal["auroc", "ap"]) -> Tensor:
    """0-dim float64 :func:`auroc` or :func:`average_precision` of ``scores`` ``[N]`` against ``labels`` ``[N]``
    (one group), warned when undefined."""
    pos, pos_group, neg, row_group, _ = _flat(scores, labels, None, None)
    whole, _, nan_g = _histograms(pos, pos_group, neg, None, row_group, 1, grouped=False)
    auc, ap, one_class, no_pos, pos_g, neg_g = _auroc_ap(whole, 1, nan_g)
    auc, ap = (auc, None) if metric == "auroc" else (None, ap)
    _warn_whole(auc, ap, one_class, no_pos, nan_g, pos_g, neg_g, stacklevel=4)  # the caller of auroc / AP
    return (auc if ap is None else ap)[0]


def grouped_auroc(scores: Tensor, labels: Tensor, groups: Tensor, *, num_groups: Optional[int] = None) -> Tensor:
    r"""AUROC of each group separately (e.g. per batch): :func:`auroc` restricted to
    :math:`\{i : g_i = k\}` for :math:`k = 0, \dots, G - 1`.

    Vectorised: negatives are counted per (group, level among the positive scores) with
    one histogram (:func:`sampled_auroc_ap`). Groups need not be contiguous or sorted.

    Args:
        scores (Tensor): float or integer ``[N]``.
        labels (Tensor): bool ``[N]`` or numbers in ``{0, 1}``.
        groups (Tensor): int64 ``[N]``, group of each score, in ``[0, G)``.
        num_groups (int, optional): ``G``; default ``groups.max() + 1`` (0 if ``N = 0``).

    Returns:
        Tensor: float64 ``[G]``. Groups with one class, no members or a NaN score are NaN,
        with one :class:`~tgeval.errors.UndefinedMetricWarning` that says how many.

    Example:
        >>> s = torch.tensor([0.2, 0.9, 0.5, 0.5, 0.1, 0.3])
        >>> y = torch.tensor([False, True, True, False, False, True])
        >>> g = torch.tensor([0, 0, 1, 1, 2, 2])
        >>> grouped_auroc(s, y, g)
        tensor([1.0000, 0.5000, 1.0000], dtype=torch.float64)
    """
    return _grouped_metric(scores, labels, groups, num_groups, "auroc")


def grouped_average_precision(
    scores: Tensor, labels: Tensor, groups: Tensor, *, num_groups: Optional[int] = None
) -> Tensor:
    r"""Average precision of each group separately (e.g. per batch): :func:`average_precision`
    restricted to :math:`\{i : g_i = k\}` for :math:`k = 0, \dots, G - 1`.

    Vectorised like :func:`grouped_auroc`; tied scores within a group form one threshold.

    Args:
        scores (Tensor): float or integer ``[N]``.
        labels (Tensor): bool ``[N]`` or numbers in ``{0, 1}``.
        groups (Tensor): int64 ``[N]``, group of each score, in ``[0, G)``.
        num_groups (int, optional): ``G``; default ``groups.max() + 1`` (0 if ``N = 0``).

    Returns:
        Tensor: float64 ``[G]``. Groups with no positive (or no members, or a NaN score) are
        NaN, with one :class:`~tgeval.errors.UndefinedMetricWarning` that says how many.

    Example:
        >>> s = torch.tensor([0.2, 0.9, 0.5, 0.5, 0.1, 0.3])
        >>> y = torch.tensor([False, True, True, False, False, True])
        >>> g = torch.tensor([0, 0, 1, 1, 2, 2])
        >>> grouped_average_precision(s, y, g)  # group 1: one threshold, precision 1/2
        tensor([1.0000, 0.5000, 1.0000], dtype=torch.float64)
    """
    return _grouped_metric(scores, labels, groups, num_groups, "ap")


def _grouped_metric(scores: Tensor, labels: Tensor, groups: Tensor, num_groups: Optional[int],
                    metric: Literal["auroc", "ap"]) -> Tensor:
    """float64 ``[G]`` :func:`grouped_auroc` or :func:`grouped_average_precision`, one warning for the undefined
    groups."""
    pos, pos_group, neg, row_group, num = _flat(scores, labels, groups, num_groups)
    _, bins, nan_g = _histograms(pos, pos_group, neg, None, row_group, num, grouped=True)
    auc, ap, one_class, no_pos, _, _ = _auroc_ap(bins, num, nan_g)  # type: ignore[arg-type]
    if metric == "auroc":
        _warn_groups("AUROC", "only one class (or no members)", one_class, nan_g > 0, stacklevel=4)
        return auc
    _warn_groups("Average precision", "no positive label (or no members)", no_pos, nan_g > 0, stacklevel=4)
    return ap


class AurocAp(NamedTuple):
    """AUROC and average precision, overall (0-dim float64) and per group (float64 ``[G]``, or
    ``None`` without groups)."""

    auroc: Tensor
    average_precision: Tensor
    grouped_auroc: Optional[Tensor]
    grouped_average_precision: Optional[Tensor]


def sampled_auroc_ap(pos: Tensor, neg: Tensor, *, mask: Optional[Tensor] = None, groups: Optional[Tensor] = None,
                     num_groups: Optional[int] = None) -> AurocAp:
    r"""AUROC and AP of sampled negatives: each query's positive (label 1) and its ``K``
    negatives (label 0) pooled, overall and per group of queries (e.g. per batch).

    Equals :func:`auroc` / :func:`average_precision` (and :func:`grouped_auroc` /
    :func:`grouped_average_precision` with each negative in its query's group) of
    ``scores = cat([pos, neg[mask]])``, ties included, without building that vector: the
    negatives are binned in row chunks by their level among the distinct positive scores,
    :math:`O(EK \log U)` time for ``U`` distinct positive scores (a few passes when ``U`` is
    small, as for EdgeBank's 0/1 scores) and :math:`O(E + U G)` memory beside the inputs.

    Args:
        pos (Tensor): float or integer ``[E]``, each query's positive score.
        neg (Tensor): float or integer ``[E, K]``, its negatives' scores (views are not copied).
        mask (Tensor, optional): bool ``[E, K]``, the negatives that count (``None``: all).
        groups (Tensor, optional): int64 ``[E]``, group of each query, in ``[0, G)``.
        num_groups (int, optional): ``G``; default ``groups.max() + 1``.

    Returns:
        AurocAp: ``auroc``, ``average_precision`` and, with ``groups``, their values per group.
        Undefined values (one class, a NaN score) are NaN, with an
        :class:`~tgeval.errors.UndefinedMetricWarning`.

    Example:
        >>> pos = torch.tensor([0.9, 0.2])
        >>> neg = torch.tensor([[0.1, 0.3], [0.2, 0.7]])
        >>> sampled_auroc_ap(pos, neg).auroc  # 0.9 beats 4; 0.2 beats 1, ties 1: 5.5 / 8
        tensor(0.6875, dtype=torch.float64)
        >>> sampled_auroc_ap(pos, neg, groups=torch.tensor([0, 1])).grouped_auroc
        tensor([1.0000, 0.2500], dtype=torch.float64)
    """
    _check_scores(pos)
    if not isinstance(neg, Tensor) or neg.dim() != 2 or neg.size(0) != pos.numel():
        shape = tuple(neg.shape) if isinstance(neg, Tensor) else type(neg).__name__
        raise MetricInputError(f"`neg` must have shape [E, K] with E = pos.numel() = {pos.numel()}, but has shape "
                               f"{shape}.")
    if neg.dtype == torch.bool or neg.is_complex():
        raise TypeError(f"`neg` must be a real (float or integer) tensor, but has dtype {neg.dtype}.")
    for name, other in (("neg", neg), ("mask", mask), ("groups", groups)):
        if other is not None and isinstance(other, Tensor) and other.device != pos.device:
            raise MetricInputError(f"`{name}` is on {other.device} but `pos` is on {pos.device}; move both to one "
                                   f"device.")
    if mask is not None:
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"`mask` must be a bool tensor, but got {getattr(mask, 'dtype', type(mask).__name__)}.")
        if mask.shape != neg.shape:
            raise MetricInputError(f"`mask` must have the shape of `neg` {tuple(neg.shape)}, but has "
                                   f"{tuple(mask.shape)}.")
    zeros = torch.zeros(pos.numel(), dtype=torch.long, device=pos.device)
    num = 1 if groups is None else _check_groups(groups, pos, num_groups)
    whole, per_group, nan_g = _histograms(pos, zeros if groups is None else groups, neg, mask,
                                          zeros if groups is None else groups, num, grouped=groups is not None)
    nan_whole = nan_g.sum().reshape(1)
    auc, ap, one_class, no_pos, pos_g, neg_g = _auroc_ap(whole, 1, nan_whole)
    _warn_whole(auc, ap, one_class, no_pos, nan_whole, pos_g, neg_g)
    if per_group is None:
        return AurocAp(auc[0], ap[0], None, None)
    auc_g, ap_g, one_class_g, no_pos_g, _, _ = _auroc_ap(per_group, num, nan_g)
    _warn_groups("AUROC", "only one class (or no members)", one_class_g, nan_g > 0)
    _warn_groups("Average precision", "no positive label (or no members)", no_pos_g, nan_g > 0)
    return AurocAp(auc[0], ap[0], auc_g, ap_g)

# --------------------------------------------------------------------------- aggregation


def _values64(values: Tensor) -> Tensor:
    _check_1d("values", values)
    if values.is_complex():
        raise TypeError(f"`values` must be real, but has dtype {values.dtype}.")
    return values.to(torch.float64)


def _warn_if_nan(result: Tensor, what: str) -> None:
    if bool(torch.isnan(result)):  # one host sync
        warnings.warn(
            f"{what} is undefined: no non-NaN value to average. Returning nan.",
            UndefinedMetricWarning,
            stacklevel=3,
        )


def micro_mean(values: Tensor) -> Tensor:
    r"""Micro aggregate: mean over events, ignoring NaN values.

    .. math::
        \bar v = \frac{1}{|\{i : v_i \ne \mathrm{NaN}\}|} \sum_{i : v_i \ne \mathrm{NaN}} v_i

    Args:
        values (Tensor): float, integer or bool ``[E]`` (e.g. reciprocal ranks, hits).

    Returns:
        Tensor: 0-dim float64; NaN, with :class:`~tgeval.errors.UndefinedMetricWarning`, if
        no value is non-NaN (including ``E = 0``).

    Example:
        >>> micro_mean(torch.tensor([1.0, 0.0, 0.0, 1.0]))
        tensor(0.5000, dtype=torch.float64)
        >>> micro_mean(torch.tensor([1.0, float("nan"), 0.0]))  # nan ignored
        tensor(0.5000, dtype=torch.float64)
    """
    v = _values64(values)
    result = torch.nanmean(v) if v.numel() else torch.full((), float("nan"), dtype=torch.float64, device=v.device)
    _warn_if_nan(result, "micro_mean")
    return result


def macro_mean(values: Tensor, groups: Tensor) -> Tensor:
    r"""Macro aggregate: mean over distinct groups (e.g. sources) of each group's mean.

    With :math:`V_g = \{i : g_i = g,\ v_i \ne \mathrm{NaN}\}` and :math:`\mathcal G` the
    groups with :math:`V_g \ne \emptyset`:

    .. math::
        \tilde v = \frac{1}{|\mathcal G|} \sum_{g \in \mathcal G} \frac{1}{|V_g|} \sum_{i \in V_g} v_i

    Each group weighs the same, however many events it has. NaN values are ignored, and a
    group whose values are all NaN is left out. Group ids may be any int64 values.

    Args:
        values (Tensor): float, integer or bool ``[E]``.
        groups (Tensor): int64 ``[E]``, group id (e.g. source node) of each value.

    Returns:
        Tensor: 0-dim float64; NaN, with :class:`~tgeval.errors.UndefinedMetricWarning`, if
        no value is non-NaN (including ``E = 0``).

    Example:
        >>> v = torch.tensor([1.0, 0.0, 0.0, 1.0])
        >>> src = torch.tensor([7, 7, 7, 3])  # source 7: 1/3, source 3: 1
        >>> macro_mean(v, src)  # (1/3 + 1) / 2
        tensor(0.6667, dtype=torch.float64)
    """
    v = _values64(values)
    _check_1d("groups", groups)
    if groups.dtype != torch.long:
        raise TypeError(f"`groups` must be int64, but has dtype {groups.dtype}; call `groups.long()`.")
    if groups.numel() != v.numel():
        raise MetricInputError(f"`groups` must have one entry per value, but has {groups.numel()} for {v.numel()} "
                               f"values.")
    if groups.device != v.device:
        raise MetricInputError(f"`groups` is on {groups.device} but `values` is on {v.device}; move both to one "
                               f"device.")
    if v.numel() == 0:
        result = torch.full((), float("nan"), dtype=torch.float64, device=v.device)
    else:
        _, inverse = torch.unique(groups, return_inverse=True)
        num = v.numel()  # upper bound on the number of distinct groups; unused slots stay empty
        valid = ~torch.isnan(v)
        sums = torch.zeros(num, dtype=torch.float64, device=v.device).index_add_(
            0, inverse, torch.where(valid, v, torch.zeros_like(v))
        )
        counts = torch.zeros(num, dtype=torch.long, device=v.device).index_add_(0, inverse, valid.to(torch.long))
        group_means = sums / counts.to(torch.float64)  # 0 / 0 = nan for empty or all-NaN groups
        result = torch.nanmean(group_means)
    _warn_if_nan(result, "macro_mean")
    return result
