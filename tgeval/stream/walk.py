r"""The walk through time, written once (docs/protocol.md §2, §7).

Every pass of tgeval over a stream (evaluation, training, fixed-negative generation, the
membership diagnostic, the audit, and through them the distributed path) is a participant
of :class:`Walk`, never a copy of it::

    stream  <- the validated events in canonical order (t, src, dst), each with
               position (its index in that order) and e_id (its index in the input)
    warm-up <- reset the model and the samplers, then feed stream[:segment.start] through
               model.update and sampler.observe, without gradients
    for each step of the segment (one timestamp batch; or consecutive whole batches
    merged, where the participants do not depend on the batching):
        yield the step: the consumer scores it inside step.scoring(), which guards the
                        state and, under exact history, lets the model see the step's
                        events before each query's time
        online: model.update(step), then sampler.observe(step) — only now does the step
                become history

The consumer never updates anything itself: the walk does, after the consumer is done with
the step, so no step is scored by a state that has seen it. A model sees a step's
per-event fields without the walk's bookkeeping (``e_id``, ``position``); samplers see
them all (their draws are keyed by ``position``).
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import torch
from torch import Tensor, nn
from torch.profiler import record_function
from torch_geometric.data import TemporalData

from tgeval.data.groups import canonical_order, is_canonical
from tgeval.data.split import Segment, check_whole_groups
from tgeval.data.validation import per_event_keys, permute_events, validate
from tgeval.stream.loader import timestamp_batch_boundaries
from tgeval.stream.state import checked_reset, checked_update, no_state_change

__all__ = ["Walk", "Step", "canonical_stream", "eval_mode", "runs", "feed", "restart", "event_slice"]

#: the profiler range of a step's work (the engine's scoring and the walk's update)
STEP_RANGE = "tgeval.replay.step"
#: ``deep`` of :func:`~tgeval.stream.state.no_state_change` for each ``check_state`` that guards
_DEEP = {True: None, "deep": True, "identity": False}
#: per-event fields the walk adds: a model's batches do not carry them
BOOKKEEPING = ("e_id", "position")
#: smallest batch of a bulk warm-up (:meth:`Walk.warm_up` of a participant that does not depend on the
#: batching); later batches grow with the events fed
WARM_UP_EVENTS = 2**16
#: a bulk warm-up batch holds at most this fraction of the events fed before it (and at least WARM_UP_EVENTS)
WARM_UP_GROWTH = 0.125


def canonical_stream(data: TemporalData) -> tuple[TemporalData, bool]:
    """``data`` (validated, time-sorted) in canonical order ``(t, src, dst)`` with ``position`` (each event's
    index in that order, int64 ``[E]``) and ``e_id`` (its index in ``data``); and whether ``data`` was in that
    order already. A stream in order is not copied: its own tensors (``data`` is changed in place: pass a copy,
    as :func:`~tgeval.data.validate` returns), ``e_id`` and ``position`` one shared ``arange`` (8 bytes per
    event); otherwise every per-event field is permuted (:func:`~tgeval.data.validation.permute_events`),
    except integer ``t``, which the permutation leaves unchanged."""
    if is_canonical(data.src, data.dst, data.t):
        data.position = data.e_id = torch.arange(data.num_events, device=data.src.device)
        return data, True
    order = canonical_order(data.src, data.dst, data.t)
    t = data.t
    data = permute_events(data, order)
    if not t.dtype.is_floating_point:  # time-sorted: `order` moves events inside their groups, so t[order] == t
        data.t = t  # (bit for bit with integer times; float ones may hold both 0.0 and -0.0 in a group)
    data.e_id = order
    data.position = torch.arange(data.num_events, device=data.src.device)
    return data, False


def runs(boundaries: Sequence[int], limit: int) -> list[tuple[int, int]]:
    """Runs ``[first batch, last batch + 1)`` of consecutive batches (``boundaries``: ``[B + 1]`` event
    offsets) holding at most ``limit`` events each; a larger batch is a run on its own (``limit=0``: every
    batch alone)."""
    out, first = [], 0
    for b in range(1, len(boundaries)):
        if boundaries[b] - boundaries[first] > limit and b - 1 > first:
            out.append((first, b - 1))
            first = b - 1
    if len(boundaries) > 1:
        out.append((first, len(boundaries) - 1))
    return out


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Run in eval mode, then return to the model's mode (PyG's TGNMemory applies messages differently per mode)."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def event_slice(data: TemporalData, keys: Sequence[str], start: int, end: int) -> TemporalData:
    """Events ``[start, end)`` of ``data`` with the per-event fields ``keys`` only (views, no copy)."""
    return TemporalData(**{key: data[key][start:end] for key in keys})


def _bulk(t: Tensor) -> Iterator[tuple[int, int]]:
    """Spans ``(start, end)`` of whole timestamp groups of the time-sorted ``t``, each about :data:`WARM_UP_GROWTH`
    times the events before it (at least :data:`WARM_UP_EVENTS`): about ``log(E) / log(1.125)`` batches, so a
    participant that merges each batch into its state (:math:`O(C + B)`) takes linear time, and its temporaries,
    proportional to a batch, stay a fraction of the events fed."""
    start, total = 0, t.numel()
    while start < total:
        end = min(total, start + max(WARM_UP_EVENTS, int(start * WARM_UP_GROWTH)))
        end = int(torch.searchsorted(t, t[end - 1:end], right=True))  # the last group whole (one host read)
        yield start, end
        start = end


@dataclass
class Step:
    """One step of a walk: batches ``[first, last)`` of the segment, events ``[start, end)`` of it.

    Attributes:
        index: the step's number in the pass.
        batch: every per-event field of the step's events (``e_id``, ``position`` included): what samplers see.
        model_batch: the fields a model sees (without ``e_id`` and ``position``).
        model, within, check_state, what: what :meth:`scoring` guards, and how (:meth:`Walk.steps`).
    """

    index: int
    first: int
    last: int
    start: int
    end: int
    walk: "Walk" = field(repr=False)
    model: Optional[nn.Module] = field(repr=False, default=None)
    within: bool = False
    check_state: Union[bool, str] = True
    what: str = "scoring"
    _batches: dict = field(repr=False, default_factory=dict)

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def batch(self) -> TemporalData:
        if "all" not in self._batches:
            self._batches["all"] = event_slice(self.walk.events, self.walk.keys, self.start, self.end)
        return self._batches["all"]

    @property
    def model_batch(self) -> TemporalData:
        if "model" not in self._batches:
            self._batches["model"] = event_slice(self.walk.events, self.walk.model_keys, self.start, self.end)
        return self._batches["model"]

    @contextmanager
    def scoring(self) -> Iterator[None]:
        """The context every score of the step is computed in: the state guard
        (:func:`~tgeval.stream.state.no_state_change`) and, under exact or neighbour history,
        ``model.within_batch(step)``."""
        model = self.model
        guard = nullcontext() if model is None or not self.check_state else \
            no_state_change(model, self.what, deep=_DEEP[self.check_state])
        with model.within_batch(self.model_batch) if model is not None and self.within else nullcontext(), guard:
            yield


class Walk:
    """A stream on its way through time: validated, in canonical order, cut at ``segment``, in timestamp batches.

    Args:
        data: the whole time-sorted stream (history + segment).
        segment: the walked events ``data[start:end]`` (whole timestamp groups): a
            :class:`~tgeval.data.split.Segment` or a ``(start, end)`` pair.
        batch_size: target events per timestamp batch (a larger group is one batch).
        validated: ``data`` is :func:`~tgeval.data.validate`'s copy already and the segment was checked to hold
            whole timestamp groups (:func:`~tgeval.data.split.check_whole_groups`); ``data`` is then given ``e_id``
            and ``position`` in place when in canonical order.

    Attributes:
        stream: the canonical stream (``e_id``, ``position``); ``in_order``: whether ``data`` was canonical.
        history, events: ``stream[:start]`` and ``stream[start:end]`` (views).
        bounds: int64 ``[B + 1]`` batch offsets in ``events`` (CPU); ``boundaries``: the same as a list.
    """

    def __init__(self, data: TemporalData, segment: Union[Segment, tuple[int, int]], *, batch_size: int = 200,
                 validated: bool = False) -> None:
        start, end, name = ((segment.start, segment.end, f"{segment.name!r} segment") if isinstance(segment, Segment)
                            else (*segment, "range"))
        if not validated:
            data = validate(data)
            check_whole_groups(data.t, start, end, what=name)
        self.stream, self.in_order = canonical_stream(data)
        self.start, self.end, self.batch_size = start, end, batch_size
        self.history, self.events = self.stream[:start], self.stream[start:end]
        self.keys = per_event_keys(self.stream)
        self.model_keys = [key for key in self.keys if key not in BOOKKEEPING]
        self.bounds = timestamp_batch_boundaries(self.events.t, batch_size)
        self.boundaries: list[int] = self.bounds.tolist()

    @property
    def num_batches(self) -> int:
        return len(self.boundaries) - 1

    def warm_up(self, model: Optional[nn.Module] = None, samplers: Sequence[Any] = ()) -> None:
        """Reset ``model`` and ``samplers`` and feed them the history before the segment (:func:`restart`)."""
        restart(self.history, model, samplers, self.batch_size)

    def step_starts(self, merge: int = 0) -> list[int]:
        """The first batch of each step and then :attr:`num_batches`; ``merge``: most events of a step of
        consecutive whole batches (``0``: one batch per step)."""
        return [first for first, _ in runs(self.boundaries, merge)] + [self.num_batches]

    def step(self, index: int, model: Optional[nn.Module] = None, *, within: bool = False,
             check_state: Union[bool, str] = True, what: str = "scoring") -> Step:
        """Batch ``index`` as a step, to score it again from a state of the caller's (no update follows)."""
        return self._step(index, index, index + 1, model, within, check_state, what)

    def _step(self, index: int, first: int, last: int, model: Optional[nn.Module], within: bool,
              check_state: Union[bool, str], what: str) -> Step:
        return Step(index, first, last, self.boundaries[first], self.boundaries[last], self, model, within,
                    check_state, what)

    def steps(self, model: Optional[nn.Module] = None, *, samplers: Sequence[Any] = (), online: bool = True,
              merge: int = 0, within: bool = False, check_state: Union[bool, str] = True, what: str = "scoring",
              update: Optional[Callable[[TemporalData], None]] = None, stop: Optional[int] = None) -> Iterator[Step]:
        """The segment's steps in time order; after the consumer is done with a step, an ``online`` walk updates
        ``model`` with it (``update(model_batch)``, default :func:`~tgeval.stream.state.checked_update` without
        gradients) and then ``samplers`` (``observe(batch)``).

        Args:
            merge: most events of a step of consecutive whole batches (``0``: one batch per step).
            within: score inside ``model.within_batch`` (exact or neighbour history).
            check_state: the guard of :meth:`Step.scoring` (:func:`~tgeval.stream.state.no_state_change`): ``True``
                its default (snapshots compared where identity and versions do not cover the state), ``"deep"``
                snapshots compared always, ``"identity"`` identity and versions only (no copy), ``False`` none.
            what: what the guard names when the state changed.
            stop: walk only the first ``stop`` steps (``None``: all).
        """
        starts = self.step_starts(merge)
        if stop is not None:
            starts = starts[:stop + 1]
        for index, (first, last) in enumerate(zip(starts[:-1], starts[1:])):
            step = self._step(index, first, last, model, within, check_state, what)
            yield step
            if online:
                with record_function(STEP_RANGE):  # the step's update, in the profiler range of its scoring
                    if model is not None:
                        if update is None:
                            with torch.no_grad():
                                checked_update(model, step.model_batch)
                        else:
                            update(step.model_batch)
                    for sampler in samplers:
                        sampler.observe(step.batch)


def feed(events: TemporalData, model: Optional[nn.Module], samplers: Sequence[Any], batch_size: int) -> None:
    """``model.update`` and each ``sampler.observe`` with ``events`` in timestamp batches, without gradients (a
    model's batches without ``e_id`` and ``position``). A participant whose state does not depend on the batching
    (a model with ``exact_history``, a sampler with ``observe_batch_invariant``) is fed in growing batches
    (:func:`_bulk`): linear time instead of one sorted merge of the whole history per batch, and bounded
    temporaries."""
    if events.num_events == 0:
        return
    keys = per_event_keys(events)
    model_keys = [key for key in keys if key not in BOOKKEEPING]

    def observed(a: int, z: int) -> TemporalData:  # a sampler's batch: with positions (from 0 for the caller's own)
        batch = event_slice(events, keys, a, z)
        if "position" not in keys:
            batch.position = torch.arange(a, z, device=events.src.device)
        return batch

    participants = [] if model is None else [
        (model.capabilities.exact_history, lambda a, z: checked_update(model, event_slice(events, model_keys, a, z)))]
    participants += [(sampler.observe_batch_invariant, lambda a, z, s=sampler: s.observe(observed(a, z)))
                     for sampler in samplers]
    batches = None
    with torch.no_grad():
        for invariant, take in participants:
            if not invariant and batches is None:
                bounds = timestamp_batch_boundaries(events.t, batch_size).tolist()
                batches = list(zip(bounds[:-1], bounds[1:]))
            for a, z in _bulk(events.t) if invariant else batches:
                take(a, z)


def restart(history: TemporalData, model: Optional[nn.Module], samplers: Sequence[Any], batch_size: int) -> None:
    """Reset ``model`` (:func:`~tgeval.stream.state.checked_reset`) and ``samplers``, then :func:`feed` them
    ``history``."""
    if model is not None:
        checked_reset(model)
    for sampler in samplers:
        sampler.reset_state()
    feed(history, model, samplers, batch_size)
