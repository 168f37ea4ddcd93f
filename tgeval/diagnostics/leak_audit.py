r"""A leak certificate for any model: :func:`audit` rebuilds it from altered copies of the stream and checks
that no score depends on what it must not see (docs/guide/auditing.md).

The engine's guards catch a model that *changes* its state while scoring or keeps history where
snapshots cannot see it. They cannot see a model that *reads* what it must not: the whole stream at
construction, the rest of the batch being scored, the other candidates of a scoring call. The audit
checks these by experiment, on *probes*: up to :data:`PROBES` events of the evaluated segment, each
scored against the same :data:`CANDIDATES` destinations (catalog items and the probes' own
destinations), from the state as the replay leaves it before their batch (score, then update, in
timestamp batches of the protocol's size, canonical order, the model's history mode)::

    no_future               for cut times T inside the segment: rebuild the model (build) from a copy whose
                            events at times >= T have other sources, destinations and features and later
                            times; every probe at time <= T must score as before
    candidate_independence  a (src, candidate, t) scores alike alone, in blocks of 20 candidates, in the
                            engine's blocks (candidate_scorer) and among all probes
    order_invariance        rebuilt from a copy whose simultaneous events are in another order: no change
    state                   the guards on every step (scoring changes nothing, update no hidden state); a
                            reset replays to the same scores, a snapshot restores them, a second model built
                            the same way scores alike (no state shared through class attributes)
    batch_size              reported, not failed: all-entity MRR in batches of the protocol's size minus
                            in one timestamp group per batch, over the first BATCH_SIZE_EVENTS of the segment,
                            both from a warm-up in the protocol's batches

Scores are compared bitwise on a CPU (a model rebuilt from the same seed computes the same floats) and
within the model's ``tie_tolerance`` (relative) elsewhere and between differently shaped calls.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Optional, Sequence

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.core.choices import AUDIT_CHECKS
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.data.hashing import fingerprint
from tgeval.data.split import Segment, Split
from tgeval.data.validation import per_event_keys, permute_events, validate
from tgeval.errors import ProtocolError, SlowPathWarning, UntrainedModelWarning
from tgeval.eval.engine import evaluate
from tgeval.models.base import TemporalLinkModel, checked_scores, score_of
from tgeval.eval.protocol import Protocol
from tgeval.core.provenance import versions
from tgeval.stream.state import restore_detached
from tgeval.stream.walk import Step, Walk

__all__ = ["audit", "AuditReport", "CheckResult", "CHECKS"]

#: every check, in the order they run and print
CHECKS = AUDIT_CHECKS
#: probe events (spread over the probed part of the segment) and candidates per probe
PROBES, CANDIDATES = 64, 96
#: cut times of the no-future check, as quantiles of the probes' times
CUT_QUANTILES = (0.25, 0.5, 0.75)
#: events of the segment the batch-size check evaluates (twice)
BATCH_SIZE_EVENTS = 500
#: candidates per block of the candidate-independence check's blocks
BLOCK = 20


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome.

    Attributes:
        passed: ``True`` / ``False``; ``None`` for a reported check (``batch_size``) and for a check not run
            because the reference replay failed.
        detail: what was compared and what came out, in a sentence.
        offence: the first offending probe (``event``: its index in the stream as given, ``src``, ``t``,
            ``candidate``, the two ``scores``) or ``None``.
        value: the reported number (``batch_size``: the MRR difference), else ``None``.
        seconds: how long the check ran.
    """

    passed: Optional[bool]
    detail: str
    offence: Optional[dict] = None
    value: Optional[float] = None
    seconds: float = 0.0


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit` found: ``checks`` by name (:data:`CHECKS`) and the ``manifest`` of the audit (model,
    data fingerprint, segment, probes, cut times, protocol, seed, versions)."""

    checks: dict[str, CheckResult]
    manifest: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No check failed and none was left unrun (reported checks do not count)."""
        return all(result.passed is not False for result in self.checks.values()) and not any(
            result.passed is None and name not in _REPORTED for name, result in self.checks.items())

    def to_json(self) -> str:
        """The report as JSON: ``kind`` (``"tgeval-audit"``), ``passed``, ``checks`` and ``manifest``."""
        return json.dumps({"kind": "tgeval-audit", "passed": self.passed,
                           "checks": {name: asdict(result) for name, result in self.checks.items()},
                           "manifest": self.manifest}, indent=1)

    def __str__(self) -> str:
        lines = [f"{_verdict(name, result):<8} {name}: {result.detail}" for name, result in self.checks.items()]
        return "\n".join(lines + [f"audit {'passed' if self.passed else 'FAILED'}: {self.manifest.get('summary', '')}"])


_REPORTED = ("batch_size",)


def _verdict(name: str, result: CheckResult) -> str:
    if result.passed is None:
        return "REPORT" if name in _REPORTED else "NOT RUN"
    return "pass" if result.passed else "FAIL"


@dataclass(frozen=True)
class _Probes:
    """The probe events: ``event`` (their positions in the canonical stream), ``src``, ``t`` ``[P]``, the
    ``candidates`` ``[C]``, the replay's ``batch_size`` and ``boundaries`` (event offsets of its batches over the
    segment), and for each batch the probes inside it (``slices``, ranges of probe indices)."""

    event: Tensor
    src: Tensor
    t: Tensor
    candidates: Tensor
    batch_size: int
    boundaries: list[int]
    slices: list[tuple[int, int]]
    segment: Segment

    def walk(self, data: TemporalData) -> Walk:
        """The walk of the probed segment of ``data`` (validated) in the replay's batches."""
        return Walk(data, self.segment, batch_size=self.batch_size)

    def batches_until(self, last_probe: int) -> int:
        """Batches to replay so that probes ``[0, last_probe]`` are scored."""
        return next(b for b, (_, hi) in enumerate(self.slices) if hi > last_probe) + 1


class _Offence(Exception):
    """A comparison's first difference (raised inside a check, reported as its offence)."""

    def __init__(self, detail: str, offence: dict) -> None:
        super().__init__(detail)
        self.detail, self.offence = detail, offence


def audit(build: Callable[[TemporalData], TemporalLinkModel], data: TemporalData, split: Split, *,
          protocol: Optional[Protocol] = None, catalog: Optional[Catalog] = None,
          checks: Optional[Sequence[str]] = None, seed: int = 0) -> AuditReport:
    """Audit the model ``build`` makes for leaks (the module docstring lists the checks).

    Args:
        build: ``build(data) -> TemporalLinkModel``: builds (and may load weights for, or train) a model from
            the stream it is given; called on ``data`` and on altered copies of it, with torch's generator
            seeded with ``seed`` before each call.
        data: the time-sorted stream.
        split: its chronological split: ``split.test`` is audited, the events before it warm the model up.
        protocol: batch size and history of the replay (default ``Protocol()``: batches of 200, the model's
            history mode).
        catalog: the candidates' catalog (default: the training catalog of ``split``).
        checks: names of :data:`CHECKS` to run (default all).
        seed: seeds the probes, the alterations and torch's generator before every ``build``.

    Returns:
        AuditReport: a failed check never raises: an error inside the model (or the engine's guards) fails
        the check that met it, naming the error.

    Raises:
        ProtocolError: an unknown check name.
    """
    chosen = tuple(CHECKS if checks is None else checks)
    unknown = sorted(set(chosen) - set(CHECKS))
    if unknown:
        raise ProtocolError(f"unknown audit checks {unknown}; choose among {list(CHECKS)}.")
    protocol = Protocol() if protocol is None else protocol
    data = validate(data)
    segment = split.test
    if catalog is None:
        catalog = build_catalog(data, "train", train_end=split.train.end)
    generator = torch.Generator().manual_seed(seed)

    def built(stream: TemporalData) -> TemporalLinkModel:
        torch.manual_seed(seed)
        return build(stream)

    try:
        model = built(data)
    except Exception as error:  # noqa: BLE001 - the model's error is the state check's finding
        return _not_run(chosen, f"build(data) raised {type(error).__name__}: {error}", {"seed": seed})
    history = protocol.history or ("exact" if model.capabilities.exact_history else "batch")
    walk = Walk(data, segment, batch_size=protocol.batch_size)
    stream = walk.stream
    probes = _probes(walk, segment, catalog, generator)
    cuts = _cut_times(probes)
    manifest = {"model": model.describe(), "data": fingerprint(data),
                "segment": {"name": segment.name, "start": segment.start, "end": segment.end},
                "probes": int(probes.event.numel()), "candidates": int(probes.candidates.numel()),
                "cut_times": [int(c) if float(c).is_integer() else float(c) for c in cuts.tolist()],
                "catalog": catalog.describe(), "batch_size": protocol.batch_size, "history": history,
                "ties": protocol.ties, "tie_tolerance": float(model.capabilities.tie_tolerance),
                "checks": list(chosen), "seed": seed, "versions": versions()}
    results: dict[str, CheckResult] = {}
    try:
        reference, snapshot = _replay(model, walk, probes, len(probes.slices), history,
                                      guard=True, keep=len(probes.slices) // 2)
    except Exception as error:  # noqa: BLE001 - the model's error is the state check's finding
        return _not_run(chosen, f"the reference replay failed: {type(error).__name__}: {error}", manifest)

    tolerance = float(model.capabilities.tie_tolerance)
    runs: dict[str, Callable[[], str]] = {
        "no_future": lambda: _no_future(built, data, probes, cuts, reference, history, tolerance, generator),
        "candidate_independence": lambda: _candidate_independence(built(data), walk, probes,
                                                                  reference, history, tolerance),
        "order_invariance": lambda: _order_invariance(built, data, probes, reference, history, tolerance,
                                                      generator),
        "state": lambda: _state(model, built(data), walk, probes, reference, snapshot, history,
                                tolerance),
    }
    for name in chosen:
        began = time.perf_counter()
        if name == "batch_size":
            result = _batch_size(built(data), data, walk, segment, protocol, catalog, history)
        else:
            try:
                result = CheckResult(True, runs[name]())
            except _Offence as found:
                result = CheckResult(False, found.detail, _described(found.offence, probes, stream))
            except Exception as error:  # noqa: BLE001 - an error inside the model fails the check that met it
                result = CheckResult(False, f"the model raised {type(error).__name__}: {error}")
        results[name] = replace(result, seconds=time.perf_counter() - began)
    failed = [name for name, result in results.items() if result.passed is False]
    summary = f"{len(failed)} of {len(chosen)} checks failed ({', '.join(failed)})" if failed else \
        f"{sum(r.passed is True for r in results.values())} checks passed"
    return AuditReport(results, {**manifest, "summary": summary})


def _not_run(chosen: Sequence[str], reason: str, manifest: dict) -> AuditReport:
    """The report of an audit whose model could not be built or replayed: ``state`` fails with ``reason``, the
    other checks are not run."""
    checks = {name: CheckResult(False, reason) if name == "state" else CheckResult(None, f"not run ({reason})")
              for name in chosen}
    return AuditReport(checks, {**manifest, "summary": reason})


# -- the probes and their replay ---------------------------------------------------------------------------
def _probes(walk: Walk, segment: Segment, catalog: Catalog, generator: torch.Generator) -> _Probes:
    """:data:`PROBES` events spread evenly over the segment (in canonical order), :data:`CANDIDATES`
    candidates (the probes' destinations, then catalog items drawn with ``generator``)."""
    if segment.end - segment.start < 2:
        raise ProtocolError(f"the {segment.name} segment holds {segment.end - segment.start} events: an audit needs "
                            f"at least 2 to probe.")
    stream, size = walk.stream, segment.end - segment.start
    count = min(PROBES, size)
    # integer arithmetic: linspace's float32 would round positions beyond 2^24 events
    event = segment.start + torch.arange(count) * (size - 1) // (count - 1)
    own = stream.dst[event].unique()
    extra = catalog.items[torch.randperm(catalog.items.numel(), generator=generator).to(catalog.items.device)]
    extra = extra[~torch.isin(extra, own)][:max(0, CANDIDATES - own.numel())]
    candidates = torch.cat([own, extra])[:max(CANDIDATES, own.numel())]
    boundaries = walk.bounds + segment.start
    cuts = torch.searchsorted(event, boundaries).tolist()
    return _Probes(event, stream.src[event], stream.t[event], candidates, walk.batch_size, boundaries.tolist(),
                   list(zip(cuts[:-1], cuts[1:])), segment)


def _cut_times(probes: _Probes) -> Tensor:
    """The no-future check's cut times: the probes' times at :data:`CUT_QUANTILES` (distinct)."""
    index = (torch.tensor(CUT_QUANTILES) * (probes.t.numel() - 1)).round().long()
    return probes.t[index].unique()


def _replay(model: TemporalLinkModel, walk: Walk, probes: _Probes, batches: int, history: str, *,
            guard: bool = False, keep: Optional[int] = None) -> tuple[Tensor, Any]:
    """Warm ``model`` up on the history of ``walk``, then score and feed the first ``batches`` batches of the
    probed segment: each batch's probes against every candidate (``[p, C]``, one ``score`` call) from the
    state before the batch, then ``update``. Returns the scores ``[P, C]`` (NaN where not scored) and, with
    ``keep``, the snapshot taken before batch ``keep``. ``guard``: the deep scoring guard on every step."""
    scores = torch.full((probes.event.numel(), probes.candidates.numel()), math.nan, dtype=torch.float64)
    snapshot = None
    model.eval()  # as evaluate: warm-up and pass in eval mode (PyG's TGNMemory updates differently in training)
    walk.warm_up(model)
    with torch.no_grad():
        for step in walk.steps(model, within=history != "batch", check_state="deep" if guard else False,
                               what="scoring a probe", stop=batches):
            lo, hi = probes.slices[step.index]
            if step.index == keep:
                snapshot = model.snapshot()
            if hi > lo:
                scores[lo:hi] = _score(step, probes, lo, hi)
    return scores, snapshot


def _score(step: Step, probes: _Probes, lo: int, hi: int, candidates: Optional[Tensor] = None) -> Tensor:
    """Probes ``[lo, hi)`` against ``candidates`` (default all) in one ``score`` call of the step's model, in
    ``step.scoring()``: ``[hi - lo, C]``."""
    candidates = probes.candidates if candidates is None else candidates
    c = candidates.numel()
    src, t = probes.src[lo:hi].repeat_interleave(c), probes.t[lo:hi].repeat_interleave(c)
    with step.scoring():
        return _as_scores(score_of(step.model, src, candidates.repeat(hi - lo), t)).view(hi - lo, c)


def _as_scores(scores: Tensor) -> Tensor:
    """Checked scores on the host, float64 kept, other kinds as float32 (compared as the engine ranks them)."""
    return scores.detach().float().cpu() if scores.dtype != torch.float64 else scores.detach().cpu()


# -- the checks ---------------------------------------------------------------------------------------------
def _compare(expected: Tensor, got: Tensor, probe_ids: Tensor, candidates: Tensor, tolerance: float,
             what: str) -> None:
    """Raise :class:`_Offence` at the first probe (``probe_ids``, rows of ``[n, C]`` scores) and candidate where
    ``got`` differs from ``expected``: bitwise for ``tolerance == 0``, else beyond ``tolerance * max(1, |a|)``."""
    same = (expected == got) | (expected.isnan() & got.isnan())
    if tolerance > 0:
        same |= (expected - got).abs() <= tolerance * expected.abs().clamp(min=1.0)
    if bool(same.all()):
        return
    i, j = (int(x) for x in torch.nonzero(~same)[0])
    a, b = float(expected[i, j]), float(got[i, j])
    raise _Offence(f"{what}: a probe scored {b!r} instead of {a!r} against candidate {int(candidates[j])}",
                   {"probe": int(probe_ids[i]), "candidate": int(candidates[j]), "scores": [a, b]})


def _described(offence: dict, probes: _Probes, stream: TemporalData) -> dict:
    """An offence with its probe's event: its index in the stream as given, source, destination and time."""
    position = probes.event[offence.pop("probe")]
    return {"event": int(stream.e_id[position]), "src": int(stream.src[position]), "dst": int(stream.dst[position]),
            "t": _number(stream.t[position]), **offence}


def _altered(data: TemporalData, cut: Tensor, generator: torch.Generator) -> TemporalData:
    """``data`` with every event at time ``>= cut`` given random sources and destinations, every other per-event
    field (features, labels, weights, ...) the row of a random event, and moved later (by the span of the altered
    times plus one, so timestamp groups stay whole and in order)."""
    out = data.clone()
    after = data.t >= cut
    count = int(after.sum())
    if count == 0:
        return out
    num_nodes = max(int(data.src.max()), int(data.dst.max())) + 1
    device = data.src.device  # drawn with the CPU generator, whatever the data's device
    out.src[after] = torch.randint(num_nodes, (count,), generator=generator).to(device)
    out.dst[after] = torch.randint(num_nodes, (count,), generator=generator).to(device)
    for key in per_event_keys(data):
        if key not in ("src", "dst", "t", "e_id", "position"):
            out[key][after] = data[key][torch.randint(data.num_events, (count,), generator=generator).to(device)]
    out.t[after] = data.t[after] + (data.t[-1] - cut + 1)
    return out


def _no_future(built: Callable[[TemporalData], TemporalLinkModel], data: TemporalData, probes: _Probes, cuts: Tensor,
               reference: Tensor, history: str, tolerance: float, generator: torch.Generator) -> str:
    for cut in cuts:
        rows = torch.nonzero(probes.t <= cut).flatten()
        changed = _altered(data, cut, generator)
        scores, _ = _replay(built(changed), probes.walk(changed), probes,
                            probes.batches_until(int(rows[-1])), history)
        _compare(reference[rows], scores[rows], rows, probes.candidates, tolerance,
                 f"rebuilt from a stream whose events at times >= {_number(cut)} were altered")
    return (f"{probes.event.numel()} probes x {probes.candidates.numel()} candidates scored alike when the events "
            f"from each of {cuts.numel()} cut times on ({', '.join(_number(c) for c in cuts)}) were altered")


def _candidate_independence(model: TemporalLinkModel, walk: Walk, probes: _Probes, reference: Tensor, history: str,
                            tolerance: float) -> str:
    first = next(b for b, (lo, hi) in enumerate(probes.slices) if hi > lo)
    _replay(model, walk, probes, first, history)  # the state before the first probed batch
    lo, hi = probes.slices[first]
    hi = min(hi, lo + 4)
    rows, candidates = torch.arange(lo, hi), probes.candidates
    step = walk.step(first, model, within=history != "batch", check_state=False)
    c = candidates.numel()

    def scored(pieces: int, i: int = lo, j: int = hi) -> Tensor:
        return torch.cat([_score(step, probes, i, j, candidates[k:k + pieces]) for k in range(0, c, pieces)],
                         dim=1)

    alone = torch.cat([scored(1, i, i + 1) for i in range(lo, hi)])
    ways = {"among all probes": reference[lo:hi], f"in blocks of {BLOCK}": scored(BLOCK)}
    with torch.no_grad(), step.scoring():
        ways["in the engine's blocks (candidate_scorer)"] = _as_scores(checked_scores(
            model, model.candidate_scorer(probes.src[lo:hi], probes.t[lo:hi], candidates)(slice(None), slice(None)),
            (hi - lo, c), "candidate_scorer"))
    for way, scores in ways.items():
        _compare(alone, scores, rows, candidates, tolerance, f"scored {way}, unlike alone")
    return f"{hi - lo} probes x {c} candidates scored alike alone, in blocks of {BLOCK}, in the engine's blocks " \
           f"and among all probes"


def _order_invariance(built: Callable[[TemporalData], TemporalLinkModel], data: TemporalData, probes: _Probes,
                      reference: Tensor, history: str, tolerance: float, generator: torch.Generator) -> str:
    order = torch.randperm(data.num_events, generator=generator).to(data.src.device)
    order = order[torch.argsort(data.t[order], stable=True)]  # within each timestamp group: a random order
    shuffled = permute_events(data, order)
    scores, _ = _replay(built(shuffled), probes.walk(shuffled), probes, len(probes.slices),
                        history)
    _compare(reference, scores, torch.arange(probes.event.numel()), probes.candidates, tolerance,
             "rebuilt from the stream with its simultaneous events in another order")
    return "every probe scored alike when the stream's simultaneous events were given in another order"


def _state(model: TemporalLinkModel, second: TemporalLinkModel, walk: Walk, probes: _Probes, reference: Tensor,
           snapshot: Any, history: str, tolerance: float) -> str:
    everything, candidates = torch.arange(probes.event.numel()), probes.candidates
    again, _ = _replay(model, walk, probes, len(probes.slices), history)
    _compare(reference, again, everything, candidates, tolerance, "replayed after a reset")
    keep = len(probes.slices) // 2
    restore_detached(model, snapshot)
    lo, hi = probes.slices[keep]
    if hi > lo:
        with torch.no_grad():
            restored = _score(walk.step(keep, model, within=history != "batch", check_state=False), probes, lo, hi)
        _compare(reference[lo:hi], restored, torch.arange(lo, hi), candidates, tolerance,
                 "scored after restoring a snapshot")
    other, _ = _replay(second, walk, probes, len(probes.slices), history)
    _compare(reference, other, everything, candidates, tolerance,
             "a second model built the same way, after the first one's replay (state shared between instances)")
    return ("scoring changed nothing and update no hidden state on every step; a reset, a snapshot and a second "
            "build gave the same scores")


def _batch_size(model: TemporalLinkModel, data: TemporalData, walk: Walk, segment: Segment,
                protocol: Protocol, catalog: Catalog, history: str) -> CheckResult:
    """All-entity MRR over the first :data:`BATCH_SIZE_EVENTS` of ``segment`` in the protocol's batches minus in one
    timestamp group per batch, both from the state of a warm-up in the protocol's batches (reported)."""
    end = min(segment.end, segment.start + BATCH_SIZE_EVENTS)
    end = int(torch.searchsorted(data.t, data.t[end - 1:end], right=True))  # whole groups
    window = Segment(segment.name, segment.start, end, data.t[segment.start].item(), data.t[end - 1].item())
    try:
        mrr = []
        with warnings.catch_warnings():  # the audit's own passes: how fast, and whether trained, is not its finding
            warnings.simplefilter("ignore", SlowPathWarning)
            warnings.simplefilter("ignore", UntrainedModelWarning)
            for size in (protocol.batch_size, 1):
                model.eval()
                walk.warm_up(model)
                result = evaluate(model, data, window, Protocol(batch_size=size, num_negatives=0, history=history,
                                                                ties=protocol.ties, warm=False), catalog=catalog)
                mrr.append(result.metrics["all_entity"]["mrr"]["micro"])
    except Exception as error:  # noqa: BLE001 - reported: the model cannot be evaluated this way
        return CheckResult(None, f"not measured: {type(error).__name__}: {error}")
    delta = mrr[0] - mrr[1]
    return CheckResult(None, f"all-entity MRR (micro, catalog {catalog.kind} of {catalog.items.numel()} items, "
                             f"{protocol.ties} ties, online, history {history}) {mrr[0]:.4f} in batches of "
                             f"{protocol.batch_size}, {mrr[1]:.4f} in one timestamp group per batch ({delta:+.4f}; "
                             f"events [{segment.start}, {end}))", value=delta)


def _number(value: Any) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:g}"


# -- the command line ------------------------------------------------------------------------------------
