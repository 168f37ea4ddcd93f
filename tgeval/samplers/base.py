"""The negative-sampler interface (docs/protocol.md §5).

A sampler gets a timestamp batch of positive events and returns ``K`` negative
destinations per positive, on the batch's device, from a seeded ``torch.Generator``,
using only history it is allowed to know. History grows in :meth:`observe`, which the
replay engine calls only after the batch was scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.hashing import tensor_checksum
from tgeval.errors import SamplerError
from tgeval.stream.state import State

__all__ = ["NegativeSampler", "Negatives", "SampledNegatives", "as_negatives", "concat_negatives",
           "negatives_checksum", "scored_pairs", "COUNTERS", "split_counters", "COLLISIONS", "NegativesCheck",
           "collisions_of", "destination_collisions", "DENSE_FORBIDDEN"]

#: what becomes of a drawn negative that is a positive of its time (the event itself, or another event of the
#: batch at that time: a simultaneous positive) or, for a destination negative, the source (a self-loop):
#: ``"error"`` refused, ``"mask"`` masked and counted, ``"keep"`` scored as drawn (TGB's files, on request)
COLLISIONS = ("error", "mask", "keep")

#: the counts in the built-in samplers' :meth:`~NegativeSampler.describe` that follow what the sampler has seen
#: (events drawn for, fallbacks, short pools, filled slots, cross-component duplicates, pairs in its pool): they
#: restart at :meth:`~NegativeSampler.reset_state`; every other entry describes how the sampler draws
COUNTERS = ("num_events", "num_fallback_events", "num_short_events", "num_filled_slots", "num_cross_duplicates",
            "num_pairs")


def split_counters(described: dict) -> tuple[dict, dict]:
    """A sampler's ``describe()`` as ``(options, counters)``: the entries of :data:`COUNTERS` apart,
    a mixture's ``components`` split the same way (its counters then list each component's).

    Example:
        >>> split_counters({"name": "uniform", "replace": False, "num_fallback_events": 3})
        ({'name': 'uniform', 'replace': False}, {'num_fallback_events': 3})
    """
    options = {key: value for key, value in described.items() if key not in COUNTERS}
    counters = {key: value for key, value in described.items() if key in COUNTERS}
    if isinstance(described.get("components"), list):
        parts = [split_counters(component) for component in described["components"]]
        options["components"] = [part[0] for part in parts]
        counters["components"] = [part[1] for part in parts]
    return options, counters


@dataclass(frozen=True)
class Negatives:
    """A sampler's negatives for a batch (what every :meth:`NegativeSampler.sample` returns).

    Attributes:
        dst: int64 ``[B, K]`` negative destinations.
        src: int64 ``[B, K]`` sources of the negative pairs, for samplers that corrupt the
            source or the whole pair; ``None``: every negative keeps the positive's source.
        mask: bool ``[B, K]``, ``False`` where a slot is padding (ragged negative lists, e.g.
            TGB files with fewer negatives for some events); padded slots must still hold
            valid node ids and are never counted. ``None``: every slot is a negative.
    """

    dst: Tensor
    src: Optional[Tensor] = None
    mask: Optional[Tensor] = None

    def __post_init__(self) -> None:
        for name in ("src", "mask"):
            value = getattr(self, name)
            if value is not None and value.shape != self.dst.shape:
                raise SamplerError(f"Negatives.{name} must have the shape of dst {tuple(self.dst.shape)}, "
                                   f"got {tuple(value.shape)}.")


#: What a sampler's draw may be inside tgeval: :class:`Negatives`, or a plain ``[B, K]``
#: tensor of destinations (accepted from user samplers; :func:`as_negatives` wraps it).
SampledNegatives = Union[Tensor, Negatives]


def as_negatives(value: SampledNegatives) -> Negatives:
    """``value`` as :class:`Negatives` (a plain ``[B, K]`` tensor holds destinations)."""
    return value if isinstance(value, Negatives) else Negatives(value)


def concat_negatives(parts: Sequence[SampledNegatives], src: Tensor) -> Negatives:
    """Concatenate the columns of several samplers' negatives for the same batch (sources ``src`` ``[B]``).

    Missing sources become ``src`` and missing masks all-valid (both stay ``None`` when no
    part has them).
    """
    negs = [as_negatives(part) for part in parts]
    sources = [n.src if n.src is not None else src[:, None].expand_as(n.dst) for n in negs]
    masks = [n.mask if n.mask is not None else torch.ones_like(n.dst, dtype=torch.bool) for n in negs]
    return Negatives(torch.cat([n.dst for n in negs], dim=1),
                     torch.cat(sources, dim=1) if any(n.src is not None for n in negs) else None,
                     torch.cat(masks, dim=1) if any(n.mask is not None for n in negs) else None)


def scored_pairs(src: Tensor, dst: Tensor, t: Tensor, negatives: Optional[Negatives]) -> tuple[Tensor, Tensor, Tensor]:
    """Flat ``(src, dst, t)`` of one ``score`` call for events ``[B]`` and their negatives: each
    positive, then its ``K`` negatives (row-major ``[B, 1 + K]``; ``negatives=None``: the positives).
    The replay and :func:`~tgeval.training.train.train_epoch` score in this one layout, so
    ``scores.view(B, 1 + K)`` holds each event's positive in column 0."""
    if negatives is None:
        return src, dst, t
    size, k = negatives.dst.shape
    neg_src = src[:, None].expand(size, k) if negatives.src is None else negatives.src
    return (torch.cat([src[:, None], neg_src], 1).view(-1), torch.cat([dst[:, None], negatives.dst], 1).view(-1),
            t[:, None].expand(size, 1 + k).reshape(-1))


def negatives_checksum(src: Tensor, dst: Tensor, t: Tensor, neg: Tensor, neg_src: Optional[Tensor] = None,
                       neg_mask: Optional[Tensor] = None) -> str:
    r"""The one checksum of a segment's negatives, wherever it is recorded.

    :math:`\mathrm{sha256}(\text{src}, \text{dst}, t, \text{neg}[, \text{neg\_src}][, \text{neg\_mask}])`
    over one row per scored event in replay order (canonical ``(t, src, dst)``): the
    manifest's ``negatives_checksum``, a tgeval negatives file's ``checksum`` and a TGB file's
    (expanded to its events) are this value, so equal values mean the same negatives for the
    same positives. Keyed by the events themselves, not by their index in a file.
    """
    return tensor_checksum(src, dst, t, neg, *(x for x in (neg_src, neg_mask) if x is not None))


class NegativeSampler:
    """Base class. Stateless samplers inherit the no-op state methods."""

    name = "sampler"
    #: what :class:`NegativesCheck` does with a negative that is a positive of its time or the source
    #: (:data:`COLLISIONS`): refused by default; ``"mask"`` masks and counts them, ``"keep"`` scores them as drawn
    #: (recorded in the manifest either way)
    collisions = "error"
    #: ``True`` for evaluation protocols defined with knowledge of the whole stream (e.g. the
    #: DGB inductive sampler); their draws for a batch may depend on later events.
    uses_whole_stream = False
    #: ``True`` when :meth:`observe` does nothing and each event's negatives depend only on
    #: the event, its timestamp group (same source and time) and the generator's seed, never on
    #: the other events of its batch: :meth:`sample` of many batches at once then equals the
    #: concatenation of per-batch calls, and the replay engine draws a whole window in one call.
    history_free = False
    #: ``True`` when the history after :meth:`observe` depends only on which events were
    #: observed, not on how they were batched (e.g. a set of pairs): warm-ups then feed it in
    #: large batches.
    observe_batch_invariant = False

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Negatives:
        """``K`` negatives for each of the batch's ``B`` positives: :class:`Negatives` with
        ``dst`` int64 ``[B, K]``, and ``src`` (corrupted sources / whole pairs) and ``mask``
        (padded slots, e.g. ragged files) when the sampler has them. Draws are keyed on
        ``batch.position`` (attached by :class:`~tgeval.stream.loader.TimestampBatchLoader`).

        A negative is never the true destination, the source, or a simultaneous
        positive (another destination of the same source at the same timestamp) — except
        for negatives replayed from a file when the user asks to keep them as stored
        (``read_tgb_negatives(..., collisions="keep")``). Every draw goes through
        :class:`NegativesCheck` (shape, dtype, device, id range, those collisions per :attr:`collisions`).
        """
        raise NotImplementedError

    def observe(self, batch: TemporalData) -> None:
        """Add a scored batch of positives to the sampler's history."""

    def reset_state(self) -> None:
        """Forget all history."""

    def snapshot(self) -> State:
        return {}

    def restore(self, state: State) -> None:
        """Return to a snapshot."""

    def describe(self) -> dict:
        """Name and options, recorded in result manifests."""
        return {"name": self.name}


def collisions_of(sampler: NegativeSampler) -> str:
    """``sampler``'s :attr:`~NegativeSampler.collisions`, checked to be one of :data:`COLLISIONS`."""
    rule = getattr(sampler, "collisions", "error")
    if rule not in COLLISIONS:
        raise SamplerError(f"{type(sampler).__name__}.collisions must be one of {COLLISIONS}, got {rule!r}.")
    return rule


def _ranks(sorted_ids: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's first position in ``sorted_ids`` (equal values, equal ranks) and whether it is there."""
    at = torch.searchsorted(sorted_ids, values.contiguous()).clamp(max=sorted_ids.numel() - 1)
    return at, sorted_ids[at] == values


#: the most forbidden ids of one row (its source and the destinations of its simultaneous events) for
#: which the collision mask compares the negatives with each of them; more are looked up in sorted keys
DENSE_FORBIDDEN = 8


def destination_collisions(src: Tensor, dst: Tensor, t: Tensor, neg: Tensor, data: TemporalData,
                           directed: bool) -> Tensor:
    """bool ``[R, K]``: slot holds the row's source or a destination of an event of ``data``
    with the row's ``(src, t)`` (which includes the true destination): the collisions of destination
    negatives, in a negatives file (:func:`~tgeval.samplers.fixed.read_tgb_negatives`) as in a sampler's draw
    (:class:`NegativesCheck`). Ids are ``>= 0``.

    The forbidden ids of each row come from sorted keys ``group * n + item`` over the ranks of the
    ids of ``data`` and the rows (so keys stay far below ``2**63`` whatever the ids' magnitude,
    ids near ``2**62`` included). With at most :data:`DENSE_FORBIDDEN` per row the negatives are
    compared with each (a few passes over ``[R, K]``); with more, they are looked up in those keys
    (a negative that is no id of the events is never forbidden)."""
    ids = torch.unique(torch.cat([src, data.src, data.dst]))  # every id that can be forbidden
    n = ids.numel()
    times = torch.unique(data.t)
    # (t, source) group key of each forbidden (group, item) pair and of each row
    pairs_src, pairs_item, pairs_t = [data.src, src], [data.dst, src], [data.t, t]
    if not directed:
        pairs_src.append(data.dst)
        pairs_item.append(data.src)
        pairs_t.append(data.t)
    p_group = torch.searchsorted(times, torch.cat(pairs_t)) * n + torch.searchsorted(ids, torch.cat(pairs_src))
    r_group = torch.searchsorted(times, t) * n + torch.searchsorted(ids, src)
    groups, inverse = torch.unique(torch.cat([p_group, r_group]), return_inverse=True)  # compact group ids
    p_id, r_id = inverse[: p_group.numel()], inverse[p_group.numel():]
    forbidden = torch.unique(p_id * n + torch.searchsorted(ids, torch.cat(pairs_item)))  # sorted, distinct
    group_of, item = forbidden // n, ids[forbidden % n]
    per_group = torch.bincount(group_of, minlength=groups.numel())
    width = int(per_group.max()) if per_group.numel() else 0
    if width <= DENSE_FORBIDDEN:
        table = torch.full((groups.numel(), width), -1, dtype=torch.long, device=neg.device)  # -1 matches no id
        slot = torch.arange(forbidden.numel(), device=neg.device) - (torch.cumsum(per_group, 0) - per_group)[group_of]
        table[group_of, slot] = item
        rows = table[r_id]
        hit = torch.zeros_like(neg, dtype=torch.bool)
        for j in range(width):
            hit |= neg == rows[:, j:j + 1]
        return hit
    pos = torch.searchsorted(ids, neg).clamp(max=n - 1)
    query = r_id[:, None] * n + pos
    at = torch.searchsorted(forbidden, query).clamp(max=forbidden.numel() - 1)
    return (ids[pos] == neg) & (forbidden[at] == query)



def _pair_collisions(src: Tensor, dst: Tensor, t: Tensor, neg_src: Tensor, neg_dst: Tensor) -> Tensor:
    """bool ``[B, K]``: the negative pair ``(neg_src, neg_dst)`` at its row's time is an event of the batch
    ``(src, dst, t)`` ``[B]`` (the positive, or a simultaneous positive), for negatives that are whole pairs.
    Keyed by ranks among the batch's ids and times, below ``8 B^2`` whatever the ids."""
    ids = torch.sort(torch.cat([src, dst])).values
    m = ids.numel()
    time_rank = torch.searchsorted(torch.sort(t).values, t)
    group = time_rank * m + _ranks(ids, src)[0]  # the (time, source) of each event
    groups = torch.sort(group).values
    keys = torch.sort(torch.searchsorted(groups, group) * m + _ranks(ids, dst)[0]).values  # (its group, dst)
    s_rank, s_known = _ranks(ids, neg_src)
    d_rank, d_known = _ranks(ids, neg_dst)
    at, grouped = _ranks(groups, time_rank[:, None] * m + s_rank)
    return s_known & d_known & grouped & _ranks(keys, at * m + d_rank)[1]


class NegativesCheck:
    """The checks of everything a sampler returns, the same for every path (evaluation, training, drawing a
    negatives file, the membership diagnostic) and every sampler, a user's own included: :class:`Negatives` or a
    tensor; integer ids (int64 after the check), a bool ``mask``; shape ``[B, K]`` with the ``K`` asked; the
    batch's device; ids in ``[0, num_nodes)``; and no negative that is a positive of its time (the event
    itself, a simultaneous positive) or, for a destination negative, the source (a self-loop; the rule of a
    negatives file, :func:`destination_collisions`), unless masked: such negatives are
    refused, masked and counted, or kept, per the sampler's :attr:`~NegativeSampler.collisions`. On the device:
    a few passes over the ``[B, K]`` draw and a few host reads of sizes per draw.

    Raises (from :meth:`draw` / :meth:`check`):
        SamplerError: naming the sampler, what it returned, the first event concerned and the fix.
    """

    def __init__(self, sampler: NegativeSampler, num_nodes: int) -> None:
        self.sampler, self.num_nodes = sampler, int(num_nodes)
        self.collisions = collisions_of(sampler)
        self._masked: Optional[Tensor] = None  # masked collisions, counted on the device

    def draw(self, batch: TemporalData, num_negatives: int, generator: Optional[torch.Generator]) -> Negatives:
        """``sampler.sample(batch, num_negatives, generator)``, checked."""
        return self.check(self.sampler.sample(batch, num_negatives, generator), batch, num_negatives)

    def _refuse(self, what: str, fix: str) -> SamplerError:
        return SamplerError(f"{type(self.sampler).__name__}.sample returned {what}. {fix}")

    def _ids(self, name: str, value: Any, shape: tuple[int, int], device: torch.device) -> Tensor:
        if not isinstance(value, Tensor):
            raise self._refuse(f"{name} of type {type(value).__name__}", "Return torch tensors of node ids.")
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
            raise self._refuse(f"{name} of dtype {value.dtype}", "Node ids are integers: return int64 ids.")
        if tuple(value.shape) != shape:
            raise self._refuse(f"{name} of shape {tuple(value.shape)}",
                               f"A batch of {shape[0]} events with K={shape[1]} takes [{shape[0]}, {shape[1]}]: one "
                               f"row per event, exactly K negatives per row (mask slots it cannot fill).")
        if value.device != device:
            raise self._refuse(f"{name} on {value.device}", f"Return it on the batch's device, {device}.")
        return value.long()

    def _event(self, batch: TemporalData, row: int) -> str:
        return (f"event {row} of the batch (src={int(batch.src[row])}, dst={int(batch.dst[row])}, "
                f"t={batch.t[row].tolist()})")

    def check(self, value: SampledNegatives, batch: TemporalData, num_negatives: int) -> Negatives:
        """``value``, a draw for ``batch`` of ``num_negatives`` per event, checked (see the class)."""
        if not isinstance(value, (Tensor, Negatives)):
            raise self._refuse(f"a {type(value).__name__}", "Return Negatives, or an int64 [B, K] tensor of "
                                                            "destinations.")
        neg = as_negatives(value)
        shape, device = (batch.src.numel(), int(num_negatives)), batch.src.device
        dst = self._ids("destinations", neg.dst, shape, device)
        src = None if neg.src is None else self._ids("sources", neg.src, shape, device)
        mask = neg.mask
        if mask is not None and (not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.device != device):
            raise self._refuse(f"a mask of {getattr(mask, 'dtype', type(mask).__name__)}",
                               f"Negatives.mask is bool [B, K] on the batch's device ({device}).")
        if not dst.numel():
            return Negatives(dst, src, mask)
        ids = dst if src is None else torch.cat([dst, src], 1)
        low, high = torch.aminmax(ids)
        hit = None
        if self.collisions != "keep":
            hit = destination_collisions(batch.src, batch.dst, batch.t, dst, batch, directed=True) if src is None \
                else _pair_collisions(batch.src, batch.dst, batch.t, src, dst)
            if mask is not None:
                hit &= mask
        found = torch.stack([(low < 0) | (high >= self.num_nodes), torch.zeros((), dtype=torch.bool, device=device)
                             if hit is None else hit.any()]).tolist()  # the draw's one read (and the collisions' sizes)
        if found[0]:
            row = int(torch.nonzero(((ids < 0) | (ids >= self.num_nodes)).any(1))[0, 0])
            bad = ids[row][(ids[row] < 0) | (ids[row] >= self.num_nodes)][0]
            raise self._refuse(f"node id {int(bad)} for {self._event(batch, row)}, outside the node range [0, "
                               f"{self.num_nodes})", "A model cannot score it: draw ids of this data's nodes.")
        if found[1] and self.collisions == "error":
            row, col = (int(i) for i in torch.nonzero(hit)[0])
            pair = (int(batch.src[row]) if src is None else int(src[row, col]), int(dst[row, col]))
            kind = ("the positive itself" if pair == (int(batch.src[row]), int(batch.dst[row])) else
                    "its source (a self-loop)" if src is None and pair[0] == pair[1] else
                    "a simultaneous positive (an event of the batch at that time)")
            raise self._refuse(f"the negative {pair} for {self._event(batch, row)}: {kind}", (
                f"{int(hit.sum())} negatives of the draw are positives of their time or self-loops; scored as "
                f"negatives they rank the positive against itself. Exclude them when drawing (as tgeval's samplers "
                f"do), or set `collisions = 'mask'` on the sampler to have them masked and counted "
                f"(`collisions = 'keep'` scores them as drawn, recorded)."))
        if found[1]:  # "mask"
            mask = ~hit if mask is None else mask & ~hit
            count = hit.sum()
            self._masked = count if self._masked is None else self._masked + count
        return Negatives(dst, src, mask)

    def record(self) -> dict:
        """What the manifest records: the rule for collisions and the negatives it masked."""
        return {"collisions": self.collisions, "num_masked_collisions": 0 if self._masked is None
                else int(self._masked)}
