r"""Time profile of ranks: positives and each sampler's negatives in equal time bins (docs/protocol.md §7).

The evaluated segment's time span :math:`[t_{min}, t_{max}]` (or a given ``t_range``
:math:`[lo, hi]`) is cut into ``B`` equal-width bins with edges
:math:`e_i = lo + i\,(hi - lo)/B`, ``i = 0..B``. Bin ``i < B - 1`` is the half-open interval
:math:`[e_i, e_{i+1})`; the **last bin is closed**, :math:`[e_{B-1}, e_B]`, so an event at
:math:`t_{max}` belongs to it. Events outside ``[lo, hi]`` are ignored. A zero span
(``lo == hi``) is widened to ``[lo, lo + 1]``, so every event falls into bin 0.

Per bin the profile reports

* ``count`` — the number of positive events in the bin;
* ``pos_rank`` — the mean rank of the positives: the **all-entity rank**
  :math:`1 + a + \text{tie term}(b)` from ``above`` / ``equal`` when the records hold an
  all-entity pass, otherwise the **sampled rank** from ``sampled_above`` / ``sampled_equal``
  (``pos_rank_kind`` says which), under ``ties``;
* ``pos_sampled_rank[name]`` — the mean sampled rank of the positives against sampler
  ``name``'s negatives;
* ``neg_rank[name]`` — the mean rank of sampler ``name``'s **negatives**, where the rank of a
  negative :math:`j` of event :math:`e` is its rank **within that event's sampled candidate
  list** (the positive and the event's valid negatives, padding excluded):

  .. math::
      r_{ej} = 1 + |\{c \ne j : s_c > s_j\}| + \tau\big(|\{c \ne j : s_c = s_j\}|\big),

  with :math:`\tau(m) = m/2` (``"average"``), :math:`m` (``"pessimistic"``) or :math:`0`
  (``"optimistic"``), :math:`c` ranging over the list. A ranking that puts the positive first
  gives negatives ranks in :math:`[2, K + 1]`; a negative that outscores the positive has a
  small rank. (The negative's rank in the all-entity ordering is not recoverable from the
  records, which keep only counts for the catalog pass.) The bin mean is over all valid
  negatives of the bin's events (``neg_count[name]`` of them), each negative counted once;
* empty bins have ``count = 0`` and **NaN** means (likewise a sampler mean is NaN where the bin
  has no valid negative of that sampler).

Several results evaluated on the same segment with different samplers (same model) are passed
as a mapping ``{sampler name: Result or records}``; their ``event`` sets must agree. Positive
ranks (``pos_rank``) are taken from the first entry. Computation is vectorised (``bucketize``
plus ``scatter_add``/``bincount``; negative ranks via a per-row sort and ``searchsorted``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

import torch
from torch import Tensor

from tgeval.core.atomic import PathLike, write_atomic
from tgeval.errors import EventSetMismatchError, EventsFileError, MetricInputError, ProtocolError
from tgeval.eval.metrics import TiePolicy, check_ties, rank_from_counts
from tgeval.eval.result import Result

__all__ = ["TimeProfile", "time_profile", "negative_ranks", "time_profile_rows", "write_time_profile_csv",
           "plot_time_profile"]

Records = Mapping[str, Tensor]
RecordsLike = Union[Result, Records]


@dataclass
class TimeProfile:
    """Per-bin mean ranks (see the module docstring for every definition).

    Attributes:
        t_start (Tensor): float64 ``[B]``, left edge of each bin.
        t_end (Tensor): float64 ``[B]``, right edge (``t_end[i] == t_start[i + 1]``).
        count (Tensor): int64 ``[B]``, positive events per bin.
        pos_rank (Tensor): float64 ``[B]``, mean positive rank (NaN in empty bins).
        pos_rank_kind (str): ``"all_entity"`` or ``"sampled"``.
        pos_sampled_rank (dict[str, Tensor]): float64 ``[B]`` per sampler.
        neg_rank (dict[str, Tensor]): float64 ``[B]`` per sampler, mean negative rank.
        neg_count (dict[str, Tensor]): int64 ``[B]`` per sampler, valid negatives per bin.
        ties (str): tie convention of every rank.
    """

    t_start: Tensor
    t_end: Tensor
    count: Tensor
    pos_rank: Tensor
    pos_rank_kind: str
    pos_sampled_rank: dict[str, Tensor] = field(default_factory=dict)
    neg_rank: dict[str, Tensor] = field(default_factory=dict)
    neg_count: dict[str, Tensor] = field(default_factory=dict)
    ties: str = "average"

    @property
    def bins(self) -> int:
        return int(self.count.numel())


def _records_of(name: str, value: Any) -> Records:
    if isinstance(value, Result):
        if value.records is None:
            raise EventsFileError(f"result {name!r} holds no per-event records (loaded from JSON?); "
                                  f"pass the Result returned by `evaluate` or its `records`.")
        return value.records
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"`records` entries must be a Result or a mapping of tensors, but {name!r} is "
                    f"{type(value).__name__}.")


def negative_ranks(score: Tensor, neg_score: Tensor, neg_mask: Optional[Tensor] = None, *,
                   ties: TiePolicy) -> Tensor:
    r"""Rank of every negative within its event's list ``{positive} ∪ {valid negatives}``.

    :math:`r_{ej} = 1 + |\{c \ne j : s_c > s_j\}| + \tau(|\{c \ne j : s_c = s_j\}|)`, with ``c``
    over the positive and the valid negatives of row ``e`` (see the module docstring).

    Args:
        score (Tensor): float ``[E]``, positive scores.
        neg_score (Tensor): float ``[E, K]``, negative scores.
        neg_mask (Tensor, optional): bool ``[E, K]``, valid negatives (default: all).
        ties (str): ``"average"``, ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        Tensor: float64 ``[E, K]``; NaN where ``neg_mask`` is False.

    Example:
        >>> negative_ranks(torch.tensor([0.5]), torch.tensor([[0.9, 0.1, 0.5]]), ties="average")
        tensor([[1.0000, 4.0000, 2.5000]], dtype=torch.float64)
    """
    ties = check_ties(ties)
    if neg_score.dim() != 2 or score.dim() != 1 or neg_score.size(0) != score.numel():
        raise MetricInputError(f"`score` must be [E] and `neg_score` [E, K] with the same E, but got "
                               f"{tuple(score.shape)} and {tuple(neg_score.shape)}.")
    E, K = neg_score.shape
    if K == 0:
        return torch.empty(E, 0, dtype=torch.float64)
    mask = torch.ones_like(neg_score, dtype=torch.bool) if neg_mask is None else neg_mask.bool()
    pos = score.double()
    neg = neg_score.double()
    # invalid slots become -inf; their effect on "equal" counts is removed below
    row = torch.cat([pos[:, None], torch.where(mask, neg, torch.full_like(neg, -math.inf))], dim=1)
    ordered, _ = torch.sort(row, dim=1)
    lower = torch.searchsorted(ordered, neg.contiguous(), right=False)   # #values < s_j
    upper = torch.searchsorted(ordered, neg.contiguous(), right=True)    # #values <= s_j
    invalid = (~mask).sum(dim=1, keepdim=True)
    above = (K + 1) - upper
    equal = upper - lower - 1 - torch.where(neg == -math.inf, invalid, torch.zeros_like(invalid))
    ranks = rank_from_counts(above, equal, ties=ties).double()
    return torch.where(mask, ranks, torch.full_like(ranks, math.nan))


def _bin_mean(which: Tensor, values: Tensor, bins: int) -> tuple[Tensor, Tensor]:
    """Mean of ``values`` per bin index (NaN where empty) and the count per bin."""
    count = torch.bincount(which, minlength=bins)
    total = torch.zeros(bins, dtype=torch.float64).scatter_add_(0, which, values.double())
    mean = torch.where(count > 0, total / count.clamp_min(1), torch.full_like(total, math.nan))
    return mean, count


def time_profile(records: Union[RecordsLike, Mapping[str, RecordsLike]], *, bins: int = 50,
                 ties: TiePolicy = "average", t_range: Optional[tuple[float, float]] = None) -> TimeProfile:
    r"""Mean rank of positives and of each sampler's negatives in ``bins`` equal time bins.

    Args:
        records: a :class:`~tgeval.eval.result.Result`, a records mapping (``event``, ``t``,
            ``score``, and ``above``/``equal`` and/or ``neg_score``/``sampled_above``/
            ``sampled_equal``, optional ``neg_mask``), or a mapping ``{sampler name: Result
            or records}`` of one model evaluated on one segment with different samplers.
            A single input is named ``"sampler"``. Events need not be time-sorted.
        bins (int): ``B >= 1`` equal-width bins (default 50).
        ties (str): tie convention of all ranks (default ``"average"``).
        t_range (tuple, optional): ``(lo, hi)`` with ``lo <= hi``; default ``(t_min, t_max)``
            of the first entry's events.

    Returns:
        TimeProfile: per-bin counts and means; empty bins have count 0 and NaN means.

    Raises:
        ProtocolError: on invalid ``bins``, ``t_range`` or ``ties``.
        EventsFileError: an entry without per-event records or the keys needed.
        EventSetMismatchError: entries whose ``event`` sets differ.
        TypeError: if an entry is neither a Result nor a mapping.
    """
    ties = check_ties(ties)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ProtocolError(f"`bins` must be an int >= 1, but got {bins!r}.")
    if isinstance(records, Result) or (isinstance(records, Mapping) and "t" in records
                                       and isinstance(records["t"], Tensor)):
        entries: dict[str, Records] = {"sampler": _records_of("sampler", records)}
    elif isinstance(records, Mapping):
        entries = {str(name): _records_of(str(name), value) for name, value in records.items()}
    else:
        raise TypeError(f"`records` must be a Result, a records mapping or a mapping of those, but got "
                        f"{type(records).__name__}.")
    if not entries:
        raise MetricInputError("`records` must contain at least one entry.")
    names = list(entries)
    first = entries[names[0]]
    for key in ("t",):
        if key not in first:
            raise EventsFileError(f"records of {names[0]!r} lack {key!r}.")
    if "event" in first:
        ref = torch.sort(first["event"].cpu())[0]
        for name in names[1:]:
            other = entries[name].get("event")
            if other is None or other.numel() != ref.numel() or not torch.equal(torch.sort(other.cpu())[0], ref):
                raise EventSetMismatchError(
                    f"entry {name!r} was not evaluated on the same events as {names[0]!r} "
                    f"({0 if other is None else other.numel()} vs {ref.numel()} events, or different "
                    f"event ids); a time profile compares samplers on one segment.")
    t = first["t"].cpu().double()
    if t_range is None:
        lo, hi = (float(t.min()), float(t.max())) if t.numel() else (0.0, 0.0)
    else:
        lo, hi = float(t_range[0]), float(t_range[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ProtocolError(f"`t_range` must be finite (lo, hi) with lo <= hi, but got {t_range!r}.")
    edges = torch.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1, dtype=torch.float64)

    def assign(times: Tensor) -> tuple[Tensor, Tensor]:
        """Bin index and in-range mask of each event time."""
        times = times.cpu().double()
        keep = (times >= lo) & (times <= hi)
        which = torch.bucketize(times, edges[1:-1], right=True).clamp_(0, bins - 1)
        return which, keep

    which, keep = assign(t)
    if "above" in first and "equal" in first:
        pos = rank_from_counts(first["above"].cpu(), first["equal"].cpu(), ties=ties)
        kind = "all_entity"
    elif "sampled_above" in first and "sampled_equal" in first:
        pos = rank_from_counts(first["sampled_above"].cpu(), first["sampled_equal"].cpu(), ties=ties)
        kind = "sampled"
    else:
        raise EventsFileError(f"records of {names[0]!r} hold neither 'above'/'equal' (all-entity pass) nor "
                              f"'sampled_above'/'sampled_equal' (sampled pass).")
    pos_rank, count = _bin_mean(which[keep], pos[keep], bins)
    profile = TimeProfile(t_start=edges[:-1].clone(), t_end=edges[1:].clone(), count=count, pos_rank=pos_rank,
                          pos_rank_kind=kind, ties=ties)
    for name in names:
        rec = entries[name]
        if "neg_score" not in rec:
            continue
        w, k = assign(rec["t"])
        if "sampled_above" in rec and "sampled_equal" in rec:
            sr = rank_from_counts(rec["sampled_above"].cpu(), rec["sampled_equal"].cpu(), ties=ties)
            profile.pos_sampled_rank[name] = _bin_mean(w[k], sr[k], bins)[0]
        neg_score = rec["neg_score"].cpu()
        mask = rec.get("neg_mask")
        valid = torch.ones_like(neg_score, dtype=torch.bool) if mask is None else mask.cpu().bool()
        ranks = negative_ranks(rec["score"].cpu(), neg_score, valid, ties=ties)
        valid = valid & k[:, None]
        w_neg = w[:, None].expand_as(ranks)[valid]
        profile.neg_rank[name], profile.neg_count[name] = _bin_mean(w_neg, ranks[valid], bins)
    return profile


def time_profile_rows(profile: TimeProfile) -> list[dict[str, Any]]:
    """One dict per bin: ``bin, t_start, t_end, count, pos_rank`` then, per sampler ``s``,
    ``pos_sampled_rank:s``, ``neg_rank:s``, ``neg_count:s``. NaN stays ``float('nan')``."""
    rows: list[dict[str, Any]] = []
    for i in range(profile.bins):
        row: dict[str, Any] = {"bin": i, "t_start": float(profile.t_start[i]), "t_end": float(profile.t_end[i]),
                               "count": int(profile.count[i]), "pos_rank": float(profile.pos_rank[i])}
        for name, value in profile.pos_sampled_rank.items():
            row[f"pos_sampled_rank:{name}"] = float(value[i])
        for name, value in profile.neg_rank.items():
            row[f"neg_rank:{name}"] = float(value[i])
            row[f"neg_count:{name}"] = int(profile.neg_count[name][i])
        rows.append(row)
    return rows


def write_time_profile_csv(path: PathLike, profile: TimeProfile) -> None:
    """Write :func:`time_profile_rows` as CSV atomically (NaN written as ``nan``)."""
    rows = time_profile_rows(profile)
    buffer = io.StringIO()
    header = list(rows[0]) if rows else ["bin", "t_start", "t_end", "count", "pos_rank"]
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, buffer.getvalue())


def plot_time_profile(path: PathLike, profile: TimeProfile, *, title: str = "", dpi: int = 110) -> Any:
    """Write the profile as a PNG (atomically): mean ranks per bin centre, the positives' rank as a
    black line and each sampler's negatives as a coloured line (dashed: the positives' sampled rank
    against that sampler); empty bins leave gaps. The axes follow
    :func:`~tgeval.diagnostics.plots.time_axis` and :func:`~tgeval.diagnostics.plots.rank_axis`; the
    legend is outside them. Returns the drawn figure (already written)."""
    from tgeval.diagnostics.plots import legend_outside, new_figure, rank_axis, save_png, time_axis

    fig = new_figure(9.5, 3.8)
    ax = fig.add_subplot(1, 1, 1)
    axis = time_axis(float(profile.t_start[0]), float(profile.t_end[-1]))
    centres = axis.values((profile.t_start + profile.t_end) / 2)
    ax.plot(centres, profile.pos_rank.numpy(), color="k", linewidth=1.4, marker=".",
            label=f"positives ({profile.pos_rank_kind.replace('_', '-')} rank)")
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    for i, (name, value) in enumerate(profile.neg_rank.items()):
        colour = colours[i % len(colours)]
        ax.plot(centres, value.numpy(), color=colour, linewidth=1.2, label=f"{name} negatives")
        if name in profile.pos_sampled_rank and profile.pos_rank_kind != "sampled":
            ax.plot(centres, profile.pos_sampled_rank[name].numpy(), color=colour, linewidth=0.9, linestyle="--",
                    label=f"positives vs {name} (sampled rank)")
    rank_axis(ax, [profile.pos_rank, *profile.neg_rank.values(), *profile.pos_sampled_rank.values()])
    axis.apply(ax.xaxis)
    ax.set_ylabel(f"mean rank ({profile.ties} ties)")
    legend_outside(ax)
    ax.set_title(title or f"time profile of ranks ({profile.bins} bins)", fontsize=10)
    fig.tight_layout()
    save_png(fig, path, dpi)
    return fig
