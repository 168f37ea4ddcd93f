"""``tgeval static`` and ``tgeval shift``: static link-prediction reports of an event file
(:func:`~tgeval.static.report.run_static` on a random or a structural-shift split).

:func:`add_static_parser` plugs both into ``tgeval``'s command line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional, cast, get_args

from torch_geometric.data import TemporalData

from tgeval.atomic import check_writable
from tgeval.data.fingerprint import fingerprint
from tgeval.data.io import EventFormat, read_events
from tgeval.data.split import chronological_split
from tgeval.static.graph import StaticGraph, random_edge_split, static_graph
from tgeval.static.heart import HEART_HEURISTICS, HeartHeuristic
from tgeval.static.gnn import GNN_MODELS, GNNConfig
from tgeval.static.heuristics import HEURISTICS
from tgeval.static.negatives import WEIGHTINGS
from tgeval.static.report import run_static
from tgeval.static.shift import SHIFT_HEURISTICS, shift_split

__all__ = ["add_static_parser", "static_command", "shift_command", "format_static"]


METHODS = (*HEURISTICS, *GNN_MODELS)


def _models(text: str) -> tuple[str, ...]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    chosen = tuple(m for m in METHODS if m in names)
    if len(chosen) != len(set(names)) or not names:
        raise argparse.ArgumentTypeError(f"--models takes a comma-separated subset of {','.join(METHODS)}, "
                                         f"got {text!r}")
    return chosen


def _end(text: str) -> str:
    """``--end``: ``all``, ``train`` or a number (resolved against the data by :func:`_end_time`)."""
    if text not in ("all", "train"):
        try:
            float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--end takes 'all', 'train' or a time, got {text!r}") from None
    return text


def _end_time(text: str, data: TemporalData) -> Optional[float]:
    if text == "all":
        return None
    if text == "train":  # the end of the training segment of the 70/15/15 chronological split
        split = chronological_split(data)
        return float(data.t[split.train.end]) if split.train.end < data.num_events else None
    return float(text)


def format_static(report: dict) -> str:
    """A short readable summary of a :func:`~tgeval.static.report.run_static` report."""
    p = report["protocol"]
    if p["split"] == "random":
        how = f"random edge split beta={p['test_fraction']} (seed {p['seed']})"
    else:
        sizes, dropped = p["sizes"], p["dropped_isolated"]
        how = (f"{p['heuristic']} {'inverse' if p['inverse'] else 'forward'} shift split at {p['thresholds']} "
               f"(valid {sizes['valid']}; dropped without a training node: valid {dropped['valid']}, test "
               f"{dropped['test']}; EMD train-test {p['emd_train_test']:.4f})")
    lines = [f"{report['data']['num_nodes']} nodes, {report['data']['num_edges']} edges; {how}: "
             f"{p['num_train_edges']} train, {p['num_test_edges']} test; one negative per positive",
             f"sigma = {report['sigma']:.4f}; PA AUROC: analytic Phi(sigma) = {report['pa_auroc_analytic']:.4f}, "
             f"uniform {report['pa_auroc_uniform']:.4f}, degree-corrected {report['pa_auroc_degree_corrected']:.4f}",
             f"{'method':<8} {'AUROC unif':>10} {'AUROC dc':>9} {'VCMPR@' + str(p['c']):>10}"]
    for m, value in report["vcmpr_at_c"].items():
        u, d = report["benchmarks"]["uniform"][m]["auroc"], report["benchmarks"]["degree_corrected"][m]["auroc"]
        lines.append(f"{m:<8} {u:>10.4f} {d:>9.4f} {value:>10.4f}")
    if "heart" in report:
        h = report["heart"]
        lines.append(f"HeaRT ({h['negatives']['heuristic']}, M={h['negatives']['per_positive']}) MRR: "
                     + ", ".join(f"{m} {r['mrr']:.4f}" for m, r in h["methods"].items()))
    lines.append(f"VCMPR over {report['vcmpr_nodes']} nodes with a test edge; RBO(p={p['rbo_p']}) with the "
                 f"recommendation ranking: uniform {report['rbo']['uniform']:.4f}, degree-corrected "
                 f"{report['rbo']['degree_corrected']:.4f} (closer: {report['closer_to_recommendation']})")
    return "\n".join(lines)


def _add_common(parser: argparse.ArgumentParser, out_help: str) -> None:
    parser.add_argument("data", type=Path, help="event file (projected onto an undirected static graph)")
    parser.add_argument("--format", choices=get_args(EventFormat), required=True, help="file format (see README)")
    parser.add_argument("--remap", action="store_true", help="renumber ids to 0..n-1")
    parser.add_argument("--bipartite", action="store_true", help="sources and destinations in disjoint id ranges")
    parser.add_argument("--sort", action="store_true", help="stable-sort an unsorted file instead of failing")
    parser.add_argument("--end", type=_end, default="all",
                        help="project the events with t < END: 'all' (default), 'train' (the training segment of "
                             "the 70/15/15 chronological split) or a time")
    parser.add_argument("--C", dest="c", type=int, default=50, help="length of each node's recommendation list")
    parser.add_argument("--rbo-p", type=float, default=0.5, help="persistence p of rank-biased overlap")
    parser.add_argument("--models", type=_models, default=HEURISTICS,
                        help=f"comma-separated, of {','.join(METHODS)} (default: the heuristics; gcn and sage are "
                             f"GNN baselines trained on the training graph)")
    parser.add_argument("--gnn-negatives", choices=WEIGHTINGS, default="uniform",
                        help="training negatives of the GNN baselines")
    parser.add_argument("--seed", type=int, default=0, help="edge split, caps and negatives")
    parser.add_argument("--negatives", type=_negatives, default=None, metavar="heart:cn|ra:M",
                        help="also rank each test edge against M HeaRT hard negatives (MRR, Hits@k)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: $TGEVAL_THREADS, else torch's: the cores)")
    parser.add_argument("--out", type=Path, required=True, help=out_help)


def _negatives(text: str) -> tuple[HeartHeuristic, int]:
    parts = text.split(":")
    if len(parts) != 3 or parts[0] != "heart" or parts[1] not in HEART_HEURISTICS or not parts[2].isdigit() \
            or int(parts[2]) < 1:
        raise argparse.ArgumentTypeError(f"--negatives takes heart:{'|'.join(HEART_HEURISTICS)}:M (e.g. heart:cn:250), "
                                         f"got {text!r}")
    return cast(HeartHeuristic, parts[1]), int(parts[2])


def _thresholds(text: str) -> tuple[float, float]:
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--thresholds takes two numbers I_TRAIN,I_VALID, got {text!r}") from None
    return low, high


def _caps(text: str) -> tuple[Optional[int], ...]:
    parts = text.split(",")
    if len(parts) != 3 or not all(p in ("", "none") or p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"--caps takes TRAIN,VALID,TEST sizes ('none' or empty: no cap), got {text!r}")
    return tuple(None if p in ("", "none") else int(p) for p in parts)


def add_static_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``static`` and ``shift`` to ``subparsers`` (from ``parser.add_subparsers``); returns ``static``'s parser."""
    st = subparsers.add_parser("static", help="static link prediction: degree bias, degree-corrected benchmark, "
                                              "recommendation check")
    _add_common(st, "folder for static.json and degree_ccdf.png")
    st.add_argument("--test-fraction", type=float, default=0.25, help="beta: fraction of edges held out as test")
    st.set_defaults(func=static_command)
    sh = subparsers.add_parser("shift", help="structural-shift split of a static graph's links, and its benchmarks")
    _add_common(sh, "folder for shift.json and degree_ccdf.png")
    sh.add_argument("--heuristic", choices=SHIFT_HEURISTICS, required=True,
                    help="link score: common neighbours, 1/shortest path without the link, or k_u*k_v")
    sh.add_argument("--thresholds", type=_thresholds, required=True,
                    help="I_TRAIN,I_VALID: h <= I_TRAIN train, <= I_VALID valid, else test")
    sh.add_argument("--inverse", action="store_true", help="swap train and test")
    sh.add_argument("--caps", type=_caps, default=(None, None, None), help="most links per split, TRAIN,VALID,TEST (e.g. none,none,5000)")
    sh.add_argument("--max-depth", type=int, default=6, help="deepest breadth-first level for 'sp'")
    sh.set_defaults(func=shift_command)
    return st


def _graph(args: argparse.Namespace) -> tuple[StaticGraph, dict]:
    """The static graph of ``args.data`` and what it came from (checks ``--out`` first)."""
    check_writable(args.out, folder=True, what="--out")
    data, info = read_events(args.data, args.format, remap=args.remap or None, bipartite=args.bipartite or None,
                             sort=args.sort)
    end = _end_time(args.end, data)
    source = {"name": str(args.data), "fingerprint": fingerprint(data), "format": args.format,
              "end": args.end, "end_time": end, "num_events": int(data.num_events)}
    return static_graph(data, end, num_nodes=info.num_nodes), source


def _report(args: argparse.Namespace, report: dict, file: str) -> int:
    print(format_static(report))
    print(f"wrote {Path(args.out) / file}{' and ' + report['plot'] if report['plot'] else ''} "
          f"({report['seconds']:.1f} s)")
    return 0


def static_command(args: argparse.Namespace) -> int:
    """Run :func:`~tgeval.static.report.run_static` on a random edge split for parsed ``tgeval static`` arguments."""
    graph, source = _graph(args)
    split = random_edge_split(graph, args.test_fraction, seed=args.seed)
    report = run_static(split, args.out, c=args.c, rbo_p=args.rbo_p, methods=args.models, data=source,
                        heart=args.negatives, gnn=GNNConfig(negatives=args.gnn_negatives, seed=args.seed))
    return _report(args, report, "static.json")


def shift_command(args: argparse.Namespace) -> int:
    """Run :func:`~tgeval.static.report.run_static` on a structural-shift split for parsed ``tgeval shift`` arguments."""
    graph, source = _graph(args)
    split = shift_split(graph, args.heuristic, args.thresholds, inverse=args.inverse, caps=args.caps, seed=args.seed,
                        max_depth=args.max_depth)
    report = run_static(split, args.out, c=args.c, rbo_p=args.rbo_p, methods=args.models, data=source,
                        heart=args.negatives, gnn=GNNConfig(negatives=args.gnn_negatives, seed=args.seed),
                        file="shift.json")
    return _report(args, report, "shift.json")
