"""The negative-sampler interface (docs/protocol.md §5).

A sampler gets a timestamp batch of positive events and returns ``K`` negative
destinations per positive, on the batch's device, from a seeded ``torch.Generator``,
using only history it is allowed to know. History grows in :meth:`observe`, which the
replay engine calls only after the batch was scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.hashing import tensor_checksum
from tgeval.errors import SamplerError
from tgeval.state import State

__all__ = ["NegativeSampler", "Negatives", "SampledNegatives", "as_negatives", "concat_negatives",
           "negatives_checksum", "scored_pairs", "COUNTERS", "split_counters"]

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
        ``batch.position`` (attached by :class:`~tgeval.loader.TimestampBatchLoader`).

        A negative is never the true destination, the source, or a simultaneous
        positive (another destination of the same source at the same timestamp) — except
        for negatives replayed from a file when the user asks to keep them as stored
        (``read_tgb_negatives(..., collisions="keep")``).
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
