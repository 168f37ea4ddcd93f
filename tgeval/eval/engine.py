r"""The replay engine: fixed-history and online evaluation over timestamp batches (docs/protocol.md §2, §7).

Evaluation is a participant of the walk through time (:class:`~tgeval.stream.walk.Walk`: canonical order,
warm-up, timestamp batches, the update after each step); what it does at each step::

    for each window of consecutive timestamp batches (at most WINDOW_EVENTS events, WINDOW_QUERIES pairs):
        prepare what does not depend on scores: the candidate plan (exclusions, candidate
        counts, coverage), the negatives of a history-free sampler, every batch's queries
        for each batch of the window:
            negatives <- sampler(batch)    # samplers with history only: after the previous batch
            scores    <- model (positives, negatives, catalog)  # state must not change (guarded);
                         # history="exact": also from the batch's events before each event's time
            record scores and all-entity counts (kept on the device)
            the walk, online: model.update(batch); sampler.observe(batch)
    copy the records to the host once; count sampled ranks; refuse NaN scores

Under ``"fixed"`` the state stays as it was at the start of the segment. Under ``"online"``,
``history`` says what an event of a merged batch is scored from: ``"exact"`` (the default for
models with :attr:`~tgeval.models.capabilities.Capabilities.exact_history`: every event strictly
before its timestamp, inside the batch too), ``"batch"`` (the state at the batch start, as
TGB does, and the default for memory models) or ``"neighbors"`` (a memory model's neighbour
lists also hold the batch's earlier events, its memory stays as of the batch start: DyGLib's
TGN, models with ``batch_neighbors``); the manifest counts the events that have history
inside their batch, and those of them scored stale. An ``"exact"`` pass does not depend on
the batching, so unless its sampler has history it scores and feeds consecutive whole batches as one step
(at most EXACT_STEP_EVENTS events); every other pass steps batch by batch. A step has fixed
shapes known on the host and reads nothing back from the device, so on a GPU it never
waits for the device (the window's preparation reads a few sizes once).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Literal, Optional, Sequence, Union

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.profiler import record_function
from torch_geometric.data import TemporalData

from tgeval.core import progress, provenance
from tgeval.data.catalog import Catalog
from tgeval.data.hashing import NegativesDigest, check_built_for, fingerprint
from tgeval.data.split import Segment, Split, check_whole_groups
from tgeval.data.strata import event_strata
from tgeval.data.validation import validate
from tgeval.core.distributed import check_same, rank_and_world, require_group, state_digest
from tgeval.errors import (CatalogError, DeviceError, LeakageError, ModelCapabilityError, ModelOutputError,
                           ProtocolError, SplitError, UntrainedModelWarning)
from tgeval.eval.metrics import count_above_equal
from tgeval.eval.ranking import (PairwiseNotice, ShortcutPairs, check_no_nan,
                                 chunked_counts, plan_candidates, shortcut_counts)
from tgeval.eval.result import Result, summarize
from tgeval.eval.tuning import Tuning
from tgeval.stream.loader import same_batch_history
from tgeval.models.base import TemporalLinkModel, check_model, check_node_ids, score_of
from tgeval.eval.protocol import Protocol
from tgeval.samplers.base import NegativeSampler, Negatives, NegativesCheck, negatives_checksum, scored_pairs
from tgeval.stream.state import exclusive
from tgeval.stream.walk import STEP_RANGE, Walk, eval_mode, event_slice, feed, restart, runs

__all__ = ["evaluate", "warm_up", "replay"]

#: events per call of :func:`~tgeval.stream.loader.same_batch_history` in the manifest's ``history`` record
HISTORY_CHUNK_EVENTS = 2**16


@exclusive
def warm_up(model: TemporalLinkModel, history: TemporalData, *, batch_size: int = 200,
            sampler: Optional[NegativeSampler] = None) -> None:
    """Reset ``model`` (and ``sampler``) and feed ``history`` through ``update`` in timestamp batches."""
    check_model(model)
    restart(history, model, [] if sampler is None else [sampler], batch_size)


def _warn_mode_switch(model: TemporalLinkModel) -> None:
    """Warn when evaluating a training-mode model from its current state would change that state:
    a submodule whose own ``train()`` does more than set the mode (PyG's ``TGNMemory`` applies and
    clears its pending messages on the switch to eval mode)."""
    plain = (nn.Module.train, TemporalLinkModel.train)  # set the mode (and, the model's, detach the state) only
    switching = sorted({type(m).__name__ for m in model.modules() if type(m).train not in plain
                        and not type(m).__module__.startswith("tgeval.")})
    if switching:
        warnings.warn(f"evaluate with Protocol(warm=False) switches the model to eval mode, and "
                      f"{', '.join(switching)} changes its state on that switch (PyG's TGNMemory applies and clears "
                      f"its pending messages), so the pass does not start from the state you kept. Call model.eval() "
                      f"before taking it.",
                      UserWarning, stacklevel=3)


@exclusive
def replay(model: TemporalLinkModel, data: TemporalData, segment: Segment, *, batch_size: int = 200,
           sampler: Optional[NegativeSampler] = None) -> None:
    """Advance ``model`` (and ``sampler``) through ``segment`` without measuring anything.

    The events of ``data[segment.start:segment.end]`` go through ``update`` (and
    ``observe``) in canonical order ``(t, src, dst)`` and timestamp batches, without gradients
    and in eval mode, exactly as :func:`evaluate` would add them under the online protocol;
    the state is not reset first. Use it to continue from a state, e.g. a checkpoint's
    training state: ``replay(model, data, split.val)`` then
    ``evaluate(model, data, split.test, Protocol(warm=False))``.

    Raises:
        TemporalDataError: for invalid data or ids ``>= model.num_nodes``; SplitError for a
            segment that cuts a timestamp group.
    """
    check_model(model)
    walk = Walk(_checked_stream(model, data, segment), segment, batch_size=batch_size, validated=True)
    with eval_mode(model):
        feed(walk.events, model, [] if sampler is None else [sampler], batch_size)


def _segment_column(value: Tensor, given: set[int]) -> Tensor:
    """A segment's record column ``[E_seg]`` on the host that holds no ``[E]`` tensor of the engine: a view of
    the caller's own tensor (storage in ``given``) as it is, anything else copied."""
    if value.device.type != "cpu" or value.untyped_storage().data_ptr() in given:
        return value.cpu()
    return value.clone()


def _checked_stream(model: TemporalLinkModel, data: TemporalData, segment: Segment) -> TemporalData:
    """The validated stream, its ids within the model's, on the model's device, ``segment`` of whole groups."""
    if not isinstance(segment, Segment):
        hint = ("a Split holds three segments: pass one of them, e.g. `split.test` or `split.val`"
                if isinstance(segment, Split) else "pass a Segment, e.g. `chronological_split(data).test`")
        raise SplitError(f"the segment to replay must be a tgeval Segment, got {type(segment).__name__}: {hint}.")
    data = validate(data)  # typed errors for unsorted / non-finite t, negative ids, length mismatches
    check_node_ids(model, data)
    if model.device != data.src.device:
        raise DeviceError(f"the model is on {model.device} but the data on {data.src.device}: "
                          f"move one of them (`model.to(...)` / `data.to(...)`).")
    check_whole_groups(data.t, segment.start, segment.end, what=f"{segment.name!r} segment")
    return data


def _events_within(t: Tensor, first: Union[int, float], last: Union[int, float]) -> int:
    """The events of the sorted times ``t`` with ``first <= t <= last``, compared exactly (integer times against
    ``ceil(first)`` and ``floor(last)`` in their own dtype)."""
    if not t.dtype.is_floating_point:
        info = torch.iinfo(t.dtype)
        first, last = max(math.ceil(first), info.min), min(math.floor(last), info.max)
        if first > last:
            return 0
    bounds = torch.tensor([first, last], dtype=t.dtype, device=t.device)
    return int((torch.searchsorted(t, bounds[1:], right=True) - torch.searchsorted(t, bounds[:1])).clamp(min=0))


def _trained_events(model: TemporalLinkModel, data: TemporalData, segment: Segment, allow: bool) -> Optional[dict]:
    """For a model loaded from a checkpoint (its ``checkpoint_record``), how many events of ``segment`` lie in the
    time range of the events it was trained on (``None``: the checkpoint does not record them), and whether that
    was allowed; ``None`` for any other model.

    Raises:
        LeakageError: unless ``allow``, when the segment holds training events or the range is unknown: a model
            scored on events it was fitted to measures its memory of them, not prediction (a leak across the
            split, the kind this error names).
    """
    record = model.checkpoint_record
    if record is None:
        return None
    trained = record.get("trained_on")
    where = f"{record.get('path', 'the checkpoint')}"
    if trained is None and model.as_built():  # parameters never trained: trained on no event
        return {"num_events": 0, "allowed": allow}
    if trained is None:
        if not allow:
            raise LeakageError(f"{where} does not record the events it was trained on (written by save_checkpoint "
                               f"without trained_on=, or before tgeval recorded them), so nothing shows that the "
                               f"{segment.name!r} segment lies outside them. Evaluate a checkpoint of "
                               f"tgeval.fit / `tgeval train`, or, if you know the segment is not training data, "
                               f"pass allow_trained_events=True (recorded in the manifest).")
        return {"num_events": None, "allowed": True}
    count = 0 if trained["t_first"] is None else _events_within(data.t[segment.start:segment.end],
                                                                 trained["t_first"], trained["t_last"])
    if count and not allow:
        raise LeakageError(f"{where} was trained on events [{trained['start']}, {trained['end']}) (t from "
                           f"{trained['t_first']} to {trained['t_last']}), and {count} of the {segment.num_events} "
                           f"events of the {segment.name!r} segment [{segment.start}, {segment.end}) lie in that "
                           f"time range: its numbers would measure the training events. Evaluate a segment after "
                           f"the training range (the split it was trained with), or pass allow_trained_events=True "
                           f"to measure them anyway (recorded in the manifest).")
    return {"num_events": count, "allowed": allow}


def _checked_inputs(model: TemporalLinkModel, data: TemporalData, segment: Segment, *,
                    sampler: Optional[NegativeSampler], num_negatives: int, catalog: Optional[Catalog],
                    uncovered: str, prefilter: Optional[int] = None) -> TemporalData:
    """Validate the arguments of :func:`evaluate` (the protocol and the tuning check themselves); return the
    validated stream."""
    if sampler is None and catalog is None:
        raise ProtocolError("nothing to measure: pass a `sampler` (sampled metrics), a `catalog` (all-entity), or "
                            "both.")
    if prefilter is not None and catalog is None:
        raise ProtocolError(f"Protocol(prefilter={prefilter}) pre-filters the all-entity pass, but no catalog was "
                            f"given. Pass a catalog, or leave prefilter=None.")
    if prefilter is not None and type(model).candidate_prior is TemporalLinkModel.candidate_prior:
        raise ModelCapabilityError(f"{type(model).__name__} offers no candidate_prior, so "
                                   f"Protocol(prefilter={prefilter}) cannot choose candidates. Use exact ranking "
                                   f"(prefilter=None), or implement candidate_prior.")
    if num_negatives < 1 and sampler is not None:
        raise ProtocolError(f"num_negatives must be >= 1 with a sampler, got {num_negatives}.")
    if catalog is not None and not model.capabilities.ranks_all_entities:
        raise ModelCapabilityError(f"{type(model).__name__} ({model.describe()}) cannot rank a whole catalog (its "
                                   f"embeddings depend on the scored pair): evaluate it with catalog=None "
                                   f"(--no-all-entity), sampled metrics only.")
    data = _checked_stream(model, data, segment)
    if catalog is not None and catalog.num_nodes < model.num_nodes:  # ids are < model.num_nodes already
        largest = int(torch.maximum(data.src.max(), data.dst.max()))
        if largest >= catalog.num_nodes:
            raise CatalogError(f"the {catalog.kind!r} catalog was built for ids < {catalog.num_nodes}, but this "
                               f"stream holds id {largest}: it was built for other data. Build it from this stream "
                               f"(build_catalog(data, ...)) or pass num_nodes >= {largest + 1}.")
    if catalog is not None and uncovered == "error":
        dst, t = data.dst[segment.start : segment.end], data.t[segment.start : segment.end]
        outside = ~catalog.to(dst.device).available(dst, t)
        if bool(outside.any()):
            first = int(torch.nonzero(outside)[0, 0])
            raise CatalogError(
                f"{int(outside.sum())} positives lie outside the {catalog.kind!r} catalog (first: event "
                f"{segment.start + first}, dst={int(dst[first])}). Use uncovered='rank' or 'exclude' "
                f"(counted either way) or a catalog that covers them."
            )
    return data


class _Clock:
    """Per-step latencies without host synchronisation: CUDA events on a GPU (read once at the
    end of the pass), ``time.perf_counter`` on a CPU."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.marks: list = []
        self.mark()

    def mark(self) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter())

    def latencies(self) -> list[float]:
        """Seconds between consecutive marks."""
        if self.cuda:
            self.marks[-1].synchronize()
            return [a.elapsed_time(b) / 1e3 for a, b in zip(self.marks[:-1], self.marks[1:])]
        return [b - a for a, b in zip(self.marks[:-1], self.marks[1:])]


class _Records:
    """Per-event records of a pass, kept on the device and copied to the host once at the end.

    Scores live in one ``[E, 1 + K]`` matrix (positive, then the negatives), so a batch
    writes them with one copy; every other record is one ``[E, ...]`` tensor too, written in
    place (never a list of parts concatenated at the end, a second copy of ``E x K`` ids).

    With ``events`` (the pass's ``src``, ``dst``, ``t`` in replay order), the negative ids
    (``neg``, ``[E, K]``) are not kept: each window's rows go into the negatives checksum as
    they come (:func:`~tgeval.samplers.base.negatives_checksum`, the same value), read by
    :attr:`checksum`; ``neg_src`` and ``neg_mask``, hashed after ``neg``, are kept.
    """

    def __init__(self, num_events: int, k: int, device: torch.device,
                 events: Optional[tuple[Tensor, Tensor, Tensor]] = None) -> None:
        self.num_events, self.k, self.device = num_events, k, device
        self.scores: Optional[Tensor] = None
        self.rows: dict[str, Tensor] = {}
        # the negative ids' checksum, fed window by window when they are not kept
        self._digest = None if events is None else NegativesDigest(*events)

    def write_scores(self, start: int, scores: Tensor) -> None:
        if self.scores is None:
            self.scores = torch.empty(self.num_events, 1 + self.k, dtype=scores.dtype, device=self.device)
        self.scores[start:start + scores.size(0)] = scores

    def write(self, start: int, **values: Tensor) -> None:
        """Rows ``[start, start + n)`` of each record (``[n, ...]``), allocated ``[E, ...]`` on first use
        (a bool mask as all True: rows of batches whose negatives came without a mask)."""
        for key, value in values.items():
            if key == "neg" and self._digest is not None:
                if start != self._digest.rows:
                    raise RuntimeError(f"negatives of rows from {start} arrived after rows up to "
                                       f"{self._digest.rows}: the streamed checksum needs them in replay order.")
                self._digest.add(value)
                continue
            if key not in self.rows:
                shape, fill = (self.num_events, *value.shape[1:]), torch.ones if value.dtype == torch.bool \
                    else torch.empty
                self.rows[key] = fill(shape, dtype=value.dtype, device=self.device)
            self.rows[key][start:start + value.size(0)] = value

    @property
    def checksum(self) -> Optional[str]:
        """The streamed :func:`~tgeval.samplers.base.negatives_checksum` (``None`` without negatives or
        when the ids are kept)."""
        if self._digest is None or self._digest.rows == 0:
            return None
        return self._digest.hexdigest(self.rows.get("neg_src"), self.rows.get("neg_mask"))

    def host(self) -> dict[str, Tensor]:
        out = {key: value.cpu() for key, value in self.rows.items()}
        if self.scores is not None:
            scores = self.scores.cpu()  # views of its columns: no second copy of the E x K scores
            out["score"] = scores[:, 0]
            if self.k:
                out["neg_score"] = scores[:, 1:]
        return out


def _check_finite(records: dict[str, Tensor], candidate_nan: Tensor, steps: list[int]) -> None:
    """Raise if the pass produced a NaN score (checked once per pass, so no batch waits for it);
    ``candidate_nan`` flags the steps starting at batches ``steps``."""
    if "score" in records:
        check_no_nan(records["score"], "positive scores")
    if "neg_score" in records:
        neg = records["neg_score"]
        check_no_nan(neg, "scores", records.get("neg_mask"))
    if bool(candidate_nan.any()):
        first = steps[int(torch.nonzero(candidate_nan.cpu())[0, 0])]
        raise ModelOutputError(f"the model returned NaN candidate scores (first in batch {first}): ranks would be "
                               f"meaningless. Check the model for numerical problems before evaluating.")


#: most events whose candidate plan and history-free negatives are prepared at once
WINDOW_EVENTS = 2**16
#: most scored pairs (each event's positive and ``K`` negatives) whose queries a window prepares at
#: once: with TGB's ``K = 999``, windows of about 500 events (12 MiB of queries), not ``2**16 x 1,000``
WINDOW_QUERIES = 2**19

#: most events of one step of an exact-history pass without a sampler with history: such a
#: pass does not depend on how its events are batched (each event sees exactly the events
#: before its timestamp; negatives are drawn per event), so consecutive batches are scored
#: and fed in one step, whole (the records keep the protocol's batches)
EXACT_STEP_EVENTS = 2**12


def _queries(src: Tensor, dst: Tensor, t: Tensor, negatives: Optional[Negatives],
             pairs: Optional[ShortcutPairs]) -> tuple[Tensor, Tensor, Tensor]:
    """Flat ``(src, dst, t)`` of one score call for events ``[B]``: each event's positive then
    its ``K`` negatives (row-major ``[B, 1 + K]``), then the excluded ``(event, item)`` pairs."""
    q_src, q_dst, q_t = scored_pairs(src, dst, t, negatives)
    if pairs is not None:
        q_src = torch.cat([q_src, src.take(pairs.row)])
        q_dst = torch.cat([q_dst, pairs.item])
        q_t = torch.cat([q_t, t.take(pairs.row)])
    return q_src, q_dst, q_t


@dataclass(frozen=True)
class _Draws:
    """The sampled negatives of a pass: ``num_negatives`` per positive from ``sampler`` (``None``: no sampled
    metrics), drawn with ``generator``, each draw through ``check`` (a sampler is given)."""

    sampler: Optional[NegativeSampler]
    num_negatives: int
    generator: torch.Generator
    check: Optional[NegativesCheck] = None

    @property
    def k(self) -> int:
        """Negatives per positive: ``num_negatives``, ``0`` without a sampler."""
        return 0 if self.sampler is None else self.num_negatives

    @property
    def ahead(self) -> bool:
        """Whether every batch's negatives can be drawn before the pass reaches it: no sampler, or a
        history-free one (one with history draws after the previous batch was observed)."""
        return self.sampler is None or self.sampler.history_free

    def sample(self, batch: TemporalData) -> Negatives:
        """The negatives of ``batch`` ``[B, K]``, checked (a sampler is given)."""
        return self.check.draw(batch, self.num_negatives, self.generator)  # type: ignore[union-attr]


@dataclass(frozen=True)
class _Ranking:
    """The all-entity pass of a replay: each positive ranked against the items of ``catalog``.

    Attributes:
        catalog: the candidates (on the stream's device).
        directed: whether pairs are ordered (which simultaneous positives are excluded).
        candidate_budget: most (event, candidate) scores held at once (:func:`chunked_counts`).
        prefilter: ``L`` of the approximate pass (:class:`~tgeval.eval.protocol.Protocol`), ``None``: exact.
        shortcut: count with the model's exact ``catalog_counts`` (exact passes of models that have one).
        shard: ``(rank, world)``: this process counts only its catalog shard (:func:`chunked_counts`), keeps a
            shortcut's counts on rank 0 only (zeros elsewhere), and the per-event counts are summed over the
            ranks with one ``all_reduce`` at the end of the pass.
    """

    catalog: Catalog
    directed: bool
    candidate_budget: int
    prefilter: Optional[int]
    shortcut: bool
    shard: tuple[int, int]


class _Window:
    """The batches ``[first, last)`` of a pass and what they need that does not depend on
    scores: the candidate plan, the negatives of a history-free sampler, and then the flat
    queries of every batch (one score call per batch is a slice of them)."""

    def __init__(self, events: TemporalData, keys: Sequence[str], boundaries: list[int], first: int, last: int, *,
                 draws: _Draws, ranking: Optional[_Ranking]) -> None:
        self.first, self.last = first, last
        self.offset = boundaries[first]
        self.bounds = [boundaries[b] - self.offset for b in range(first, last + 1)]
        self.data = event_slice(events, keys, self.offset, boundaries[last])
        data = self.data
        self.plan = None if ranking is None else plan_candidates(data.src, data.dst, data.t, ranking.catalog,
                                                                 directed=ranking.directed)
        self.negatives = draws.sample(data) if draws.sampler is not None and draws.ahead else None
        # the excluded pairs whose scores the shortcut needs, per batch
        self.pairs: list[Optional[ShortcutPairs]] = [
            self.plan.shortcut_pairs(a, z) if self.plan is not None and ranking is not None and ranking.shortcut
            else None for a, z in zip(self.bounds[:-1], self.bounds[1:])]
        self.queries: Optional[tuple[Tensor, Tensor, Tensor]] = None
        self.query_starts: list[int] = []
        if draws.ahead:
            self._prepare_queries()

    def _prepare_queries(self) -> None:
        if all(pairs is None or pairs.row.numel() == 0 for pairs in self.pairs):  # one layout for the window
            self.queries = _queries(self.data.src, self.data.dst, self.data.t, self.negatives, None)
            width = 1 + (0 if self.negatives is None else self.negatives.dst.size(1))
            self.query_starts = [a * width for a in self.bounds]
            return
        parts: list[tuple[Tensor, Tensor, Tensor]] = []
        starts = [0]
        for j, (a, z) in enumerate(zip(self.bounds[:-1], self.bounds[1:])):
            parts.append(_queries(self.data.src[a:z], self.data.dst[a:z], self.data.t[a:z],
                                  self.batch_negatives(a, z), self.pairs[j]))
            starts.append(starts[-1] + parts[-1][0].numel())
        self.queries = tuple(torch.cat([part[i] for part in parts]) for i in range(3))  # type: ignore[assignment]
        self.query_starts = starts

    def batch_negatives(self, a: int, z: int) -> Optional[Negatives]:
        if self.negatives is None:
            return None
        neg = self.negatives
        return Negatives(neg.dst[a:z], None if neg.src is None else neg.src[a:z],
                         None if neg.mask is None else neg.mask[a:z])


def _replay(model: TemporalLinkModel, walk: Walk, *, draws: _Draws, ranking: Optional[_Ranking],
            history: Optional[str], check_state: Union[bool, Literal["deep"]],
            keep_ids: bool = True) -> tuple[dict[str, Tensor], list[float], float, Optional[str]]:
    """Score and record each step of ``walk`` (:class:`~tgeval.stream.walk.Walk`, which updates after it): sampled
    negatives from ``draws``, an all-entity pass with ``ranking`` (``None``: none), online replay under a
    ``history`` (``None``: fixed replay, no update; under ``"exact"`` or ``"neighbors"`` each step is scored
    inside ``model.within_batch(step)``).

    A step is one batch, except in an exact pass whose sampler has no history (or that has
    no sampler): its numbers do not depend on how the events are batched, so consecutive
    whole batches of at most :data:`EXACT_STEP_EVENTS` events are scored and fed as one step
    (far fewer, larger tensor operations); the records keep the protocol's batches.

    Work that does not depend on scores (candidate plans, negatives of history-free samplers,
    the queries of each score call) is prepared once per window of steps; each step then has
    fixed shapes known on the host and copies nothing back from the device. Counts against
    sampled negatives, a pure function of the recorded scores, are taken once at the end.
    Returns per-event records on CPU, step latencies (s), the loop's wall time (s) and, without
    ``keep_ids`` (the negative ids are then hashed window by window, not recorded), the negatives checksum.
    The model is in eval mode during the loop and returns to its previous mode after it.
    """
    events, boundaries = walk.events, walk.boundaries
    device = events.src.device
    num_events, num_batches = events.num_events, walk.num_batches
    online, within = history is not None, history in ("exact", "neighbors")
    merge = EXACT_STEP_EVENTS if history == "exact" and draws.ahead else 0
    steps = walk.step_starts(merge)  # first batch of each step
    step_bounds = [boundaries[b] for b in steps]
    windows = runs(step_bounds, min(WINDOW_EVENTS, max(1, WINDOW_QUERIES // (1 + draws.k))))
    k = draws.k
    records = _Records(num_events, k, device, None if keep_ids else (events.src, events.dst, events.t))
    candidate_nan = torch.zeros(max(len(steps) - 1, 1), dtype=torch.bool, device=device)  # per step
    notice = None if ranking is None else PairwiseNotice(model, num_events, ranking.catalog, ranking.prefilter,
                                                         ranking.shard)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    window: Optional[_Window] = None
    with progress.phase("replay"):  # the scoring loop; `elapsed` is its wall time
        start_time = time.perf_counter()
        clock = _Clock(device)
        with eval_mode(model), torch.no_grad():
            for step in walk.steps(model, samplers=() if draws.ahead else (draws.sampler,), online=online,
                                   merge=merge, within=within, check_state=check_state):
                b = step.index
                if b:
                    clock.mark()  # the previous step, its update included
                if window is None or b == window.last:  # a window is prepared before its first step
                    window = plan = data = queries = scores = block = None  # the last one's freed first
                    window = _Window(events, walk.keys, step_bounds, *windows.pop(0), draws=draws, ranking=ranking)
                    if window.negatives is not None:
                        records.write(window.offset, **_negative_records(window.negatives))
                    if window.plan is not None:
                        records.write(window.offset, candidates=window.plan.num_candidates,
                                      filtered=window.plan.num_filtered, covered=window.plan.covered)
                with record_function(STEP_RANGE):
                    j = b - window.first
                    plan, data = window.plan, window.data
                    a, z = window.bounds[j], window.bounds[j + 1]
                    size = z - a
                    if window.queries is not None:
                        q0, q1 = window.query_starts[j], window.query_starts[j + 1]
                        queries = tuple(q[q0:q1] for q in window.queries)
                    else:  # a sampler with history: draw after the previous batch was observed
                        negatives = draws.sample(step.batch)
                        records.write(step.start, **_negative_records(negatives))
                        queries = _queries(data.src[a:z], data.dst[a:z], data.t[a:z], negatives, window.pairs[j])
                    src, t = data.src[a:z], data.t[a:z]
                    with step.scoring():
                        scores = score_of(model, *queries)
                        block = scores[:size * (1 + k)].view(size, 1 + k)
                        records.write_scores(step.start, block)
                        if plan is not None and ranking is not None:
                            pos = block[:, 0]
                            pairs = window.pairs[j]
                            counts = None if pairs is None else shortcut_counts(
                                model, src, t, pos, ranking.catalog, pairs, scores[size * (1 + k):])
                            if counts is None:
                                above, equal, nan = chunked_counts(
                                    model, src, t, pos, ranking.catalog, plan, a, z, ranking.candidate_budget,
                                    ranking.shard, ranking.prefilter, notice)
                                candidate_nan[b] = nan
                            elif ranking.shard[0] == 0:  # exact, cheap, counted whole: once, on rank 0
                                above, equal = counts
                            else:
                                above, equal = torch.zeros_like(counts[0]), torch.zeros_like(counts[1])
                            records.write(step.start, above=above, equal=equal)
                progress.report(step.last, num_batches)
            window = plan = data = queries = scores = block = None
            clock.mark()
        if ranking is not None and ranking.shard[1] > 1:
            candidate_nan = _sum_over_ranks(records.rows, candidate_nan)
        latencies = clock.latencies()
        elapsed = time.perf_counter() - start_time
    with progress.phase("metrics"):
        out = records.host()
        _check_finite(out, candidate_nan, steps)
        if k:  # a pure function of the recorded scores: once per pass, not once per batch
            out["sampled_above"], out["sampled_equal"] = count_above_equal(
                out["score"], out["neg_score"], out.get("neg_mask"), float(model.capabilities.tie_tolerance))
        out["batch"] = torch.repeat_interleave(torch.arange(num_batches), walk.bounds.diff())
    return out, latencies, elapsed, records.checksum


def _sum_over_ranks(counts: dict[str, Tensor], candidate_nan: Tensor) -> Tensor:
    """Sum every rank's all-entity counts (``counts["above"]``, ``["equal"]``, int64 ``[E]``,
    replaced) and NaN flags (bool ``[num_batches]``, returned) in one ``all_reduce``."""
    keys = [key for key in ("above", "equal") if key in counts]
    flat = torch.cat([counts[key] for key in keys] + [candidate_nan.long()])
    dist.all_reduce(flat)
    *parts, nan = flat.split([counts[key].numel() for key in keys] + [candidate_nan.numel()])
    counts.update(zip(keys, parts))
    return nan > 0


def _history_mode(model: TemporalLinkModel, replay: str, history: Optional[str]) -> Optional[str]:
    """The ``history`` of an online pass (``None`` under fixed replay, which has no updates; the
    protocol refuses a ``history`` there)."""
    if replay == "fixed":
        return None
    if history is None:
        return "exact" if model.capabilities.exact_history else "batch"
    model.check_history(history)
    return history


def _history_record(history: str, src: Tensor, dst: Tensor, t: Tensor, bounds: Tensor) -> dict:
    """The manifest's ``history``: the mode and the events with history inside their batch
    (scored from it under ``"exact"``; stale under ``"batch"``, and under ``"neighbors"``, whose
    memory misses it). Counted over runs of whole batches of about :data:`HISTORY_CHUNK_EVENTS` events
    (temporaries of that size)."""
    total, cuts = torch.zeros((), dtype=torch.long, device=t.device), bounds.tolist()
    for first, last in runs(cuts, HISTORY_CHUNK_EVENTS):  # whole batches: each batch is counted on its own
        a, b = cuts[first], cuts[last]
        total += same_batch_history(src[a:b], dst[a:b], t[a:b], bounds[first:last + 1] - a).sum()
    count = int(total)  # one read from the device
    return {"mode": history, "same_batch_events": count,
            "same_batch_fraction": count / t.numel() if t.numel() else 0.0,
            "stale_events": count if history != "exact" else 0}


def _negative_records(negatives: Negatives) -> dict[str, Tensor]:
    out = {"neg": negatives.dst}
    if negatives.src is not None:
        out["neg_src"] = negatives.src
    if negatives.mask is not None:
        out["neg_mask"] = negatives.mask
    return out


@exclusive
def evaluate(
    model: TemporalLinkModel,
    data: TemporalData,
    segment: Segment,
    protocol: Protocol = Protocol(),
    *,
    sampler: Optional[NegativeSampler] = None,
    catalog: Optional[Catalog] = None,
    tuning: Tuning = Tuning(),
    distributed: bool = False,
    allow_trained_events: bool = False,
) -> Result:
    """Replay ``segment`` of ``data`` through ``model`` and measure link prediction.

    Args:
        model: any :class:`~tgeval.models.base.TemporalLinkModel`.
        data: the whole time-sorted stream (history + segment); checked with
            :func:`~tgeval.data.validate`, ids must be ``< model.num_nodes``.
        segment: the evaluated events ``data[segment.start:segment.end]`` (whole timestamp
            groups). Events are replayed in canonical order ``(t, src, dst)`` inside each
            group; batches carry ``e_id``, each event's index in ``data`` (for samplers with
            fixed negatives), and records keep it as ``event``.
        protocol: every choice that changes a number (:class:`~tgeval.eval.protocol.Protocol`: replay
            online or fixed, history inside merged batches, ``K``, ties, Hits@k, uncovered
            positives, directed pairs, batch size, seed, warm start); recorded in the manifest
            as it is.
        sampler: negatives for sampled metrics (``None``: no sampled metrics); every draw is checked
            (:class:`~tgeval.samplers.base.NegativesCheck`: shape, dtype, device, ids ``< model.num_nodes``, and
            the positives of their time per the sampler's ``collisions``, recorded as ``negatives_check``).
        catalog: candidates for exact all-entity ranking (``None``: no all-entity pass).
        tuning: how the pass runs, never what it measures (:class:`~tgeval.eval.tuning.Tuning`: the
            all-entity ``candidate_budget``, ``use_shortcut``, the ``records`` kept, the ``check_state`` guard).
        distributed: this process is one rank of the default ``torch.distributed`` group
            (``torchrun``); every rank must call ``evaluate`` with the same data, model state
            and options (checked). Every rank replays every event in the same order (the
            state, and so leak-freedom, are replicated); rank ``r`` of ``W`` scores only its
            contiguous shard of the catalog's available prefix in the chunked all-entity
            path, and the counts are summed with one ``all_reduce`` per pass. Positives,
            sampled negatives and a model's exact counting shortcut are scored on every rank
            in the same calls as in one process, so scores, ranks and metrics equal the
            single-process result bit for bit. Every rank returns the result; the manifest
            records the world size.
        allow_trained_events: evaluate a model loaded from a checkpoint on a segment that overlaps the time range
            of the events it was trained on (or whose checkpoint does not record them); refused otherwise. The
            manifest's ``checkpoint.overlap`` records the segment's events in that range and the choice.

    Returns:
        Result: metrics (micro / macro, by stratum), manifest and per-event records.

    Raises:
        TemporalDataError / SplitError: invalid data, ids ``>= model.num_nodes``, a segment
            that cuts a timestamp group, a ``Split`` (or anything else) where a ``Segment`` belongs.
        DataMismatchError: a segment, catalog or sampler built from other events than the
            ones ``data`` starts with (their recorded ``built_from``).
        ProtocolError: neither a sampler nor a catalog, a pre-filter without a catalog, or ``K < 1`` with a
            sampler (a :class:`~tgeval.eval.tuning.Tuning` checks itself when built).
        DeviceError: the model and the data on different devices.
        SamplerError: a draw of the sampler that fails its checks (:class:`~tgeval.samplers.base.NegativesCheck`).
        ModelOutputError: the model returned a NaN score (positive, negative or candidate).
        CatalogError: a catalog for fewer ids than the stream's, or positives outside it
            under ``uncovered="error"``.
        ModelCapabilityError: a catalog for a model that cannot rank one, a pre-filter for a
            model without ``candidate_prior``.
        LeakageError: the model changed its state while scoring (``tuning.check_state``), another thread is in
            a pass on the same model object (:func:`~tgeval.stream.state.exclusive`), or a checkpoint's model meets
            events it was trained on, or does not record them, without ``allow_trained_events``;
            :class:`~tgeval.errors.HiddenStateError` when its ``update`` or ``reset_state``
            changed state that its state methods do not cover (a class attribute included).
        DistributedError: ``distributed=True`` without a process group, or ranks that
            disagree on the data, the model's parameters and state, or the options.

    Warns:
        UntrainedModelWarning: the model has parameters and none changed since it was built.
    """
    candidate_budget, use_shortcut, records, check_state = (tuning.candidate_budget, tuning.use_shortcut,
                                                            tuning.records, tuning.check_state)
    with progress.timing() as clock:
        with progress.phase("prepare"):
            if distributed:
                require_group()
            check_model(model, updates=protocol.replay == "online" or protocol.warm)
            replay_mode, num_negatives, ties, hits = (protocol.replay, protocol.num_negatives, protocol.ties,
                                                      protocol.hits)
            batch_size, seed, directed, uncovered = (protocol.batch_size, protocol.seed, protocol.directed,
                                                     protocol.uncovered)
            history = _history_mode(model, replay_mode, protocol.history)
            if not protocol.warm and model.training:
                _warn_mode_switch(model)
            data = _checked_inputs(model, data, segment, sampler=sampler, num_negatives=num_negatives, catalog=catalog,
                                   uncovered=uncovered, prefilter=protocol.prefilter)
            overlap = _trained_events(model, data, segment, allow_trained_events)
            if model.as_built():
                warnings.warn(f"{type(model).__name__} is evaluated with its parameters unchanged since it was built "
                              f"(never trained, nor loaded from a trained checkpoint): unless its constructor loads "
                              f"trained weights, these are the numbers of random weights. Train it first (tgeval.fit, "
                              f"train_epoch, `tgeval train`) or load a trained checkpoint.", UntrainedModelWarning,
                              stacklevel=2)
            device = data.src.device
            if catalog is not None and catalog.device != device:
                catalog = catalog.to(device)
            input_fingerprint = fingerprint(data)
            rank, world = rank_and_world() if distributed else (0, 1)
            if distributed:
                check_same("the evaluation (data, segment, model state, catalog, sampler, options)", (
                    input_fingerprint, segment.to_dict(), state_digest(model), model.describe(),
                    None if catalog is None else catalog.describe(), None if sampler is None else sampler.describe(),
                    protocol.to_dict(), history, candidate_budget, use_shortcut))
            check_built_for(data, known={data.num_events: input_fingerprint}, segment=segment.built_from,
                            catalog=None if catalog is None else catalog.built_from,
                            sampler=None if sampler is None else sampler.describe())
            # Replay in canonical order (t, src, dst): file order inside a group cannot matter. Every batch
            # carries e_id (each event's index in the input, file order) and position (its index in replay
            # order, which keys samplers' draws).
            given = {value.untyped_storage().data_ptr() for value in (data.src, data.dst, data.t)}  # the caller's
            walk = Walk(data, segment, batch_size=batch_size, validated=True)
            del data  # the walk holds it (its canonical stream) until the metrics
            stream_record = {"name": None, "fingerprint": input_fingerprint,
                             "canonical_fingerprint": input_fingerprint if walk.in_order else fingerprint(walk.stream),
                             "num_events": walk.stream.num_events, "num_nodes": model.num_nodes}
            past, events = walk.history, walk.events
            # what does not depend on the model, before the warm-up: its temporaries and these never add up
            strata = event_strata(past.src, past.dst, events.src, events.dst, model.num_nodes, directed=directed)
            history_record = None if history is None else _history_record(history, events.src, events.dst, events.t,
                                                                          walk.bounds)
            del past
        if protocol.warm:  # in eval mode, as the pass
            with progress.phase("warm_up"), eval_mode(model):
                walk.warm_up(model, [] if sampler is None else [sampler])
        with progress.phase("prepare"):
            generator = torch.Generator(device=device).manual_seed(seed)
            shortcut = use_shortcut and protocol.prefilter is None \
                and type(model).catalog_counts is not TemporalLinkModel.catalog_counts
            ranking = None if catalog is None else _Ranking(catalog, directed, candidate_budget, protocol.prefilter,
                                                            shortcut, shard=(rank, world))
        keep = records
        draws = _Draws(sampler, num_negatives, generator, None if sampler is None else
                       NegativesCheck(sampler, model.num_nodes))
        records, latencies, elapsed, streamed = _replay(
            model, walk, draws=draws, ranking=ranking,
            history=history, check_state=check_state, keep_ids=keep == "all")
        with progress.phase("metrics"):
            records.update({key: _segment_column(events[name], given) for key, name in (
                ("event", "e_id"), ("src", "src"), ("dst", "dst"), ("t", "t"))}, stratum=strata.cpu())
            num_batches = walk.num_batches
            del walk, events  # the replay-order copies of the whole stream are freed before the metrics
            metrics = summarize(records, ties=ties, hits=hits, uncovered=uncovered)
            if protocol.prefilter is not None and "all_entity" in metrics:
                metrics["all_entity"]["approximate"] = {
                    "prefilter": protocol.prefilter,
                    "rule": "per step, only the L catalog items with the highest candidate_prior were scored; the "
                            "others counted as below every positive, so ranks can only be better than exact"}
        with progress.phase("manifest"):
            lat = torch.tensor(latencies, dtype=torch.float64)
            performance = {
                "events_per_second": segment.num_events / elapsed if elapsed > 0 else float("inf"),
                "seconds": elapsed,
                "num_batches": num_batches,
                "num_steps": len(latencies),
                "step_latency_ms": {"mean": float(lat.mean()) * 1e3, "median": float(lat.median()) * 1e3,
                                     "max": float(lat.max()) * 1e3},
                **provenance.peak_memory(device),
            }
            manifest = {
                "created": provenance.created(),
                # the data's name and the split it comes from are the caller's to fill (the CLI does)
                "data": stream_record,
                "split": None,
                "segment": segment.to_dict(),
                "protocol": protocol.to_dict(),
                "history": history_record,
                "model": model.describe(),
                # a loaded checkpoint's training spec, data, counts, and the segment's events it was trained on
                "checkpoint": None if overlap is None else {**model.checkpoint_record, "overlap": overlap},
                "sampler": None if sampler is None else sampler.describe(),
                "negatives_check": None if draws.check is None else draws.check.record(),
                "negatives_checksum": None if sampler is None else negatives_checksum(
                    records["src"], records["dst"], records["t"], records["neg"], records.get("neg_src"),
                    records.get("neg_mask")) if keep == "all" else streamed,
                "catalog": None if catalog is None else catalog.describe(),
                "tie_tolerance": model.capabilities.tie_tolerance,
                "aggregation": {"micro": "mean over events", "macro": "mean over sources of per-source means"},
                "strata_reference": "events before the segment (pairs directed)" if directed
                else "events before the segment (pairs undirected)",
                "candidate_budget": candidate_budget,
                "state_guard": check_state,
                "device": str(device),
                "distributed": {"world_size": world, "backend": dist.get_backend() if distributed else None,
                                "sharded": "columns of the chunked all-entity path" if world > 1 else None},
                "threads": provenance.threads(),
                "versions": provenance.versions(),
            }
        performance.update(clock.snapshot())  # every second of the call, by phase
    if keep == "events":
        if "neg_mask" in records:  # what the per-event CSV needs of the mask: whether any negative was scored
            records["has_negatives"] = records["neg_mask"].any(1)
        records = {key: value for key, value in records.items() if key not in _PER_NEGATIVE}
    return Result(metrics, manifest, performance, records if keep != "none" else None)


#: records with one entry per (event, negative), ``[E, K]``, not kept under ``records="events"``
_PER_NEGATIVE = ("neg", "neg_src", "neg_mask", "neg_score")
