r"""``tgeval compare``: K-sweep, Kendall τ and paired intervals for results on one test segment.

Input: per-event tables as written by :meth:`~tgeval.eval.result.Result.save_events` (read
back with :func:`load_events`), one per model, all evaluated on the **same** events (same
``event`` ids; checked). :func:`compare` reports

* the **K-sweep** (:func:`~tgeval.eval.expected.k_sweep`): expected sampled MRR per model and
  ``K`` from the all-entity counts ``above`` / ``equal`` / ``candidates``, with Kendall's
  :math:`\tau_b` per ``K`` between the models' order at ``K`` and at the full catalog;
* for every pair of models ``(A, B)`` (in the given order, ``A`` before ``B``), the
  **time-block paired bootstrap** interval (:func:`~tgeval.eval.stats.block_bootstrap_difference`)
  of :math:`\text{mean}_e(1/r^A_e - 1/r^B_e)`, the difference of full-catalog reciprocal
  ranks under ``ties``; events are aligned by ``event`` id and ordered by ``(t, event)``.

All events of the tables are used (positives outside the catalog were ranked against it,
``uncovered="rank"``); the ``rank`` column of the file is ignored and ranks are recomputed
from ``above`` / ``equal`` with ``ties``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch
from torch import Tensor

from tgeval.core.atomic import PathLike, check_input_file, file_sha256, json_safe, write_atomic
from tgeval.core.choices import DEFAULT_BLOCK
from tgeval.errors import EventSetMismatchError, EventsFileError, LeakageError, MetricInputError
from tgeval.eval.expected import DEFAULT_SWEEP, k_sweep
from tgeval.eval.metrics import TiePolicy, check_ties, rank_from_counts
from tgeval.eval.result import STRATA, Result
from tgeval.eval.stats import block_bootstrap_difference
from tgeval.eval.result import trained_events

__all__ = ["fitting_block", "events_file_of", "load_events", "compare", "format_compare",
           "compare_command", "k_label"]

_REQUIRED = ("event", "t", "above", "equal", "candidates")


def _parse_column(name: str, values: list[str]) -> Tensor:
    if name == "stratum":
        try:
            return torch.tensor([STRATA.index(v) for v in values], dtype=torch.long)
        except ValueError as error:
            raise EventsFileError(f"column 'stratum' must hold names from {STRATA}: {error}") from None
    if values and all(v in ("True", "False") for v in values):
        return torch.tensor([v == "True" for v in values], dtype=torch.bool)
    try:
        return torch.tensor([int(v) for v in values], dtype=torch.long)
    except ValueError:
        pass
    try:
        return torch.tensor([float(v) for v in values], dtype=torch.float64)
    except ValueError:
        raise EventsFileError(f"column {name!r} holds a value that is neither bool, int nor float.") from None


def events_file_of(result_path: PathLike, *, direct: bool = True) -> Path:
    """The per-event file a result JSON names: a regular file inside the JSON's folder (a result
    cannot point the reader elsewhere, e.g. at ``/dev/zero``), whose sha256 matches the one the
    result recorded (a pair broken by a kill between its two writes is refused).

    ``direct``: the reader also takes the per-event CSV itself (``tgeval compare``); a message
    then names that fix too where it applies.

    Raises:
        ResultFileError: the result JSON is no result (:meth:`~tgeval.eval.result.Result.load`).
        EventsFileError: if the result names no per-event file, or one that is missing, outside the
            result's folder or no regular file, or one whose sha256 differs from the recorded one.
    """
    result_path = Path(result_path)
    manifest = Result.load(result_path).manifest
    events_file, recorded = manifest.get("events_file"), manifest.get("events_sha256")
    if not events_file:
        raise EventsFileError(f"{result_path}: this result names no per-event file; write one with "
                              f"`tgeval evaluate ... --save-events EVENTS.csv` and compare those.")
    folder = result_path.resolve().parent
    path = (folder / events_file).resolve()
    csv_name = Path(events_file).name if events_file.endswith(".csv") else f"{result_path.stem}.csv"
    again = (f"evaluate again with --save-events beside --out (`tgeval evaluate ... --out {result_path} "
             f"--save-events {result_path.parent / csv_name}`), which writes the pair anew")
    if not path.is_relative_to(folder) or not path.is_file():
        if not path.exists():
            why, direct_fix = (f"{str(path)!r} does not exist (moved, renamed or deleted since the result was "
                               f"written)", "If the CSV was moved, pass its new path itself (`tgeval compare "
                               "PATH.csv ...`); else ")
        elif not path.is_file():
            why, direct_fix = f"{str(path)!r} is no regular file", ""
        else:
            why, direct_fix = (f"it resolves to {str(path)!r}, outside that folder, and a result's per-event file "
                               f"is read only beside it", f"Pass that CSV itself (`tgeval compare {path} ...`), "
                               f"or ")
        fix = (direct_fix if direct else "") + again
        raise EventsFileError(f"{result_path}: its events_file {events_file!r} is not a regular file inside the "
                              f"result's folder {str(folder)!r}: {why}. {fix[0].upper()}{fix[1:]}.")
    if recorded is not None and file_sha256(path) != recorded:
        raise EventsFileError(f"{result_path}: the events file {str(path)!r} does not match this result (its sha256 "
                              f"differs from the recorded {recorded}): the pair was not written together (e.g. a "
                              f"later evaluation was killed between writing the CSV and the JSON, or the CSV was "
                              f"replaced since). {again[0].upper()}{again[1:]}.")
    return path


def load_events(csv_path: PathLike) -> dict[str, Tensor]:
    """Read a :meth:`~tgeval.eval.result.Result.save_events` CSV back into CPU tensors.

    A result JSON is accepted too when its manifest names its per-event file
    (``manifest.events_file``, written by ``tgeval evaluate --out R.json --save-events E.csv``;
    a relative name is relative to the JSON's folder).

    Columns of integers (``event``, ``batch``, ``src``, ``dst``, ``above``, ``equal``,
    ``candidates``, ``sampled_above``, ``sampled_equal`` and integer ``t``) become int64,
    ``True``/``False`` columns (``filtered``, ``covered``) bool, other numbers float64, and
    ``stratum`` names their code in :data:`~tgeval.eval.result.STRATA`. Columns absent from
    the file are absent from the table.

    Returns:
        dict[str, Tensor]: column name -> ``[E]`` tensor.

    Raises:
        EventsFileError: for a result JSON whose per-event file cannot be read with it
            (:func:`events_file_of`).
        EventsFileError: if the file has no header or a malformed row / column.
    """
    if str(csv_path).endswith(".json"):
        csv_path = events_file_of(csv_path)
    check_input_file(csv_path, what="events file")
    with open(csv_path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header:
            raise EventsFileError(f"{csv_path}: empty file; expected a per-event CSV from `Result.save_events`.")
        rows = list(reader)
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise EventsFileError(f"{csv_path}: row {i + 2} has {len(row)} fields, the header {len(header)}.")
    columns = list(zip(*rows)) if rows else [() for _ in header]
    return {name: _parse_column(name, list(col)) for name, col in zip(header, columns)}


def _aligned(event_tables: Mapping[str, Mapping[str, Tensor]]) -> dict[str, dict[str, Tensor]]:
    """Tables reordered to the first table's ``(t, event)`` order, after checking the event sets."""
    names = list(event_tables)
    for name in names:
        missing = [k for k in _REQUIRED if k not in event_tables[name]]
        if missing:
            raise EventsFileError(f"events of model {name!r} lack the columns {missing}; `compare` needs "
                                  f"{list(_REQUIRED)} (an all-entity pass: evaluate with a catalog).")
    ref = event_tables[names[0]]
    ref_event = ref["event"].cpu().long()
    if torch.unique(ref_event).numel() != ref_event.numel():
        raise EventSetMismatchError(f"events of model {names[0]!r} repeat an `event` id.")
    order = torch.argsort(ref_event, stable=True)
    order = order[torch.argsort(ref["t"].cpu()[order], stable=True)]  # by (t, event)
    target = ref_event[order]
    sorted_ref = torch.sort(ref_event)[0]
    out: dict[str, dict[str, Tensor]] = {}
    for name in names:
        table = event_tables[name]
        ev = table["event"].cpu().long()
        sev, perm = torch.sort(ev)
        if sev.numel() != sorted_ref.numel() or not torch.equal(sev, sorted_ref):
            only_a = sorted(set(ev.tolist()) - set(ref_event.tolist()))
            only_b = sorted(set(ref_event.tolist()) - set(ev.tolist()))
            raise EventSetMismatchError(
                f"model {name!r} was evaluated on other events than {names[0]!r}: {ev.numel()} vs "
                f"{ref_event.numel()} events, {len(only_a)} only in {name!r} (e.g. {only_a[:5]}), "
                f"{len(only_b)} only in {names[0]!r} (e.g. {only_b[:5]}). Compare results of one test segment.")
        idx = perm[torch.searchsorted(sev, target)]
        aligned = {key: value.cpu()[idx] for key, value in table.items()
                   if isinstance(value, Tensor) and value.dim() == 1 and value.numel() == ev.numel()}
        if not torch.equal(aligned["t"].double(), ref["t"].cpu()[order].double()):
            raise EventSetMismatchError(f"model {name!r} gives other times `t` than {names[0]!r} for the same "
                                        f"event ids; the tables come from different streams.")
        if not torch.equal(aligned["candidates"].long(), ref["candidates"].cpu()[order].long()):
            raise EventSetMismatchError(f"model {name!r} was ranked against other candidate sets than {names[0]!r} "
                                        f"(the `candidates` counts differ): compare results of one catalog.")
        out[name] = aligned
    return out


def k_label(K: Optional[int]) -> str:
    """A sample size of the K-sweep as written in tables: its number, or ``full`` for the catalog."""
    return "full" if K is None else str(K)


def fitting_block(num_events: int) -> int:
    """The block of a comparison its caller did not choose (``tgeval run``, the report): :data:`DEFAULT_BLOCK`
    events, or half the segment when it holds fewer than two such blocks, so that at least two blocks resample."""
    return max(1, min(DEFAULT_BLOCK, num_events // 2))


def compare(event_tables: Mapping[str, Mapping[str, Tensor]], *,
            ks: Sequence[Optional[int]] = DEFAULT_SWEEP, ties: TiePolicy = "average", block: int = DEFAULT_BLOCK,
            seed: int = 0, num_resamples: int = 2000, confidence: float = 0.95) -> dict[str, Any]:
    r"""K-sweep, Kendall τ and pairwise time-block bootstrap intervals for models on one segment.

    Args:
        event_tables: model name -> per-event table (from :func:`load_events` or
            ``Result.event_table()``) with ``event``, ``t``, ``above``, ``equal``,
            ``candidates``; all with the same ``event`` ids. Need not be time-sorted.
        ks: sample sizes of the sweep (``None`` = full catalog).
        ties: tie convention of every rank.
        block: events per bootstrap block (chronological).
        seed: bootstrap seed (the same for every pair).
        num_resamples: bootstrap resamples.
        confidence: nominal coverage of the intervals.

    Returns:
        dict: ``{"models", "num_events", "ties", "t_range": [t_min, t_max], "k_sweep":``
        :func:`~tgeval.eval.expected.k_sweep` output ``, "pairs": [{"a", "b", "estimate",
        "low", "high", "confidence", "n", "block", "num_resamples", "method"}],
        "definition"}``. ``estimate`` is ``mean(RR_a - RR_b)`` at the full catalog.

    Raises:
        EventSetMismatchError: (a ``ValueError``) if the tables' event sets or times differ.
        EventsFileError: if a table lacks a needed column.
        EventSetMismatchError: if a table repeats an ``event`` id.
        ProtocolError: on invalid options.
        MetricInputError: with no model.
    """
    ties = check_ties(ties)
    if not event_tables:
        raise MetricInputError("`event_tables` must contain at least one model.")
    tables = _aligned(event_tables)
    names = list(tables)
    first = tables[names[0]]
    sweep = k_sweep({n: {k: tables[n][k] for k in ("above", "equal", "candidates")} for n in names}, ks, ties=ties)
    rr = {n: 1.0 / rank_from_counts(tables[n]["above"], tables[n]["equal"], ties=ties).double() for n in names}
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            iv = block_bootstrap_difference(rr[a], rr[b], block=block, num_resamples=num_resamples,
                                            confidence=confidence, seed=seed)
            pairs.append({"a": a, "b": b, "estimate": iv.estimate, "low": iv.low, "high": iv.high,
                          "confidence": iv.confidence, "n": iv.n, "block": block, "num_resamples": num_resamples,
                          "method": iv.method})
    t = first["t"]
    return {
        "models": names,
        "num_events": int(first["event"].numel()),
        "ties": ties,
        "t_range": [t.min().item(), t.max().item()] if t.numel() else [None, None],
        "k_sweep": sweep,
        "pairs": pairs,
        "definition": ("k_sweep: expected sampled MRR (uniform K of M without replacement) from all-entity counts; "
                       "kendall_tau: tau_b of model order at K vs full catalog; pairs: time-block paired bootstrap "
                       "of mean(RR_a - RR_b), full-catalog reciprocal ranks, events in (t, event) order"),
    }


def _fmt(x: Any, width: int = 9) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return f"{'-':>{width}}"
    return f"{x:>{width}.4f}"


def format_compare(report: Mapping[str, Any]) -> str:
    """A readable table of a :func:`compare` report."""
    sweep = report["k_sweep"]
    labels = [k_label(K) for K in sweep["K"]]
    width = max([len("Kendall tau"), *(len(n) for n in sweep["models"])]) + 2
    lines = [f"{report['num_events']} events, ties={report['ties']}; expected MRR with K sampled negatives",
             f"{'model':<{width}}" + "".join(f"{'K=' + lab:>9}" for lab in labels)]
    for name in sweep["models"]:
        lines.append(f"{name:<{width}}" + "".join(_fmt(v) for v in sweep["mrr"][name]))
    lines.append(f"{'Kendall tau':<{width}}" + "".join(_fmt(v) for v in sweep["kendall_tau"]))
    if report["pairs"]:
        conf = report["pairs"][0]["confidence"]
        lines.append(f"paired differences of full-catalog MRR, {100 * conf:g}% time-block bootstrap "
                     f"(block {report['pairs'][0]['block']}):")
        for p in report["pairs"]:
            lines.append(f"  {p['a']} - {p['b']}: {p['estimate']:+.4f}  [{p['low']:+.4f}, {p['high']:+.4f}]")
    return "\n".join(lines)


def _trained(names: Sequence[str], paths: Sequence[Path], allow: bool) -> dict[str, str]:
    """The results given as JSON whose numbers may measure their checkpoint's training events
    (:func:`~tgeval.eval.result.trained_events`), by name; refused unless ``allow`` (a per-event CSV carries no
    manifest to check).

    Raises:
        LeakageError: naming the first such result, unless ``allow``.
        ResultFileError: a JSON that is no result (:meth:`~tgeval.eval.result.Result.load`).
    """
    trained = {}
    for name, path in zip(names, paths):
        if str(path).endswith(".json"):
            why = trained_events(Result.load(path).manifest)
            if why is not None:
                trained[name] = why
    if trained and not allow:
        name, why = next(iter(trained.items()))
        raise LeakageError(f"result {name!r}: {why}, so comparing it ranks memory of training events beside "
                           f"prediction. Compare results of segments after their checkpoints' training, or pass "
                           f"--allow-trained-events to compare it anyway (the report then lists it).")
    return trained


def compare_command(args: argparse.Namespace) -> int:
    """Run :func:`compare` for parsed ``tgeval compare`` arguments; print the table. Returns 0."""
    paths = list(args.events)
    if args.names:
        names = [n.strip() for n in args.names.split(",")]
        if len(names) != len(paths):
            raise ValueError(f"--names gives {len(names)} names for {len(paths)} files.")
    else:
        names = [p.stem for p in paths]
    if len(set(names)) != len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)] if not args.names else names
        if len(set(names)) != len(names):
            raise ValueError(f"--names must be distinct, got {names}.")
    trained = _trained(names, paths, args.allow_trained_events)
    tables = {name: load_events(path) for name, path in zip(names, paths)}
    report = compare(tables, ks=args.ks, ties=args.ties, block=args.block, seed=args.seed,
                     num_resamples=args.resamples)
    report["files"] = {name: str(path) for name, path in zip(names, paths)}
    report["trained_events"] = trained
    print(format_compare(report))
    for name, why in trained.items():
        print(f"note: {name}: {why}")
    if args.out is not None:
        write_atomic(args.out, json.dumps(json_safe(report), indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0
