"""``tgeval static``: static link-prediction report of an event file (:func:`~tgeval.static.report.run_static`).

:func:`add_static_parser` plugs it into ``tgeval``'s command line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional, get_args

from torch_geometric.data import TemporalData

from tgeval.atomic import check_writable
from tgeval.data.fingerprint import fingerprint
from tgeval.data.io import EventFormat, read_events
from tgeval.data.split import chronological_split
from tgeval.static.graph import static_graph
from tgeval.static.heuristics import HEURISTICS, Heuristic
from tgeval.static.report import run_static

__all__ = ["add_static_parser", "static_command", "format_static"]


def _models(text: str) -> tuple[Heuristic, ...]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    chosen = tuple(h for h in HEURISTICS if h in names)
    if len(chosen) != len(set(names)) or not names:
        raise argparse.ArgumentTypeError(f"--models takes a comma-separated subset of {','.join(HEURISTICS)}, "
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
    lines = [f"{report['data']['num_nodes']} nodes, {report['data']['num_edges']} edges; random edge split "
             f"beta={p['test_fraction']} (seed {p['seed']}): {p['num_train_edges']} train, {p['num_test_edges']} test; "
             f"one negative per positive",
             f"sigma = {report['sigma']:.4f}; PA AUROC: analytic Phi(sigma) = {report['pa_auroc_analytic']:.4f}, "
             f"uniform {report['pa_auroc_uniform']:.4f}, degree-corrected {report['pa_auroc_degree_corrected']:.4f}",
             f"{'method':<8} {'AUROC unif':>10} {'AUROC dc':>9} {'VCMPR@' + str(p['c']):>10}"]
    for m, value in report["vcmpr_at_c"].items():
        u, d = report["benchmarks"]["uniform"][m]["auroc"], report["benchmarks"]["degree_corrected"][m]["auroc"]
        lines.append(f"{m:<8} {u:>10.4f} {d:>9.4f} {value:>10.4f}")
    lines.append(f"VCMPR over {report['vcmpr_nodes']} nodes with a test edge; RBO(p={p['rbo_p']}) with the "
                 f"recommendation ranking: uniform {report['rbo']['uniform']:.4f}, degree-corrected "
                 f"{report['rbo']['degree_corrected']:.4f} (closer: {report['closer_to_recommendation']})")
    return "\n".join(lines)


def add_static_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``static`` to ``subparsers`` (from ``parser.add_subparsers``); sets ``func=static_command``."""
    st = subparsers.add_parser("static", help="static link prediction: degree bias, degree-corrected benchmark, "
                                              "recommendation check")
    st.add_argument("data", type=Path, help="event file (projected onto an undirected static graph)")
    st.add_argument("--format", choices=get_args(EventFormat), required=True, help="file format (see README)")
    st.add_argument("--remap", action="store_true", help="renumber ids to 0..n-1")
    st.add_argument("--bipartite", action="store_true", help="sources and destinations in disjoint id ranges")
    st.add_argument("--sort", action="store_true", help="stable-sort an unsorted file instead of failing")
    st.add_argument("--end", type=_end, default="all", help="project the events with t < END: 'all' (default), 'train' (the "
                                                 "training segment of the 70/15/15 chronological split) or a time")
    st.add_argument("--test-fraction", type=float, default=0.25, help="beta: fraction of edges held out as test")
    st.add_argument("--C", dest="c", type=int, default=50, help="length of each node's recommendation list")
    st.add_argument("--rbo-p", type=float, default=0.5, help="persistence p of rank-biased overlap")
    st.add_argument("--models", type=_models, default=HEURISTICS, help=f"comma-separated, of {','.join(HEURISTICS)}")
    st.add_argument("--seed", type=int, default=0, help="edge split and negatives")
    st.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default: $TGEVAL_THREADS, else torch's: the cores)")
    st.add_argument("--out", type=Path, required=True, help="folder for static.json and degree_ccdf.png")
    st.set_defaults(func=static_command)
    return st


def static_command(args: argparse.Namespace) -> int:
    """Run :func:`~tgeval.static.report.run_static` for parsed ``tgeval static`` arguments. Returns 0."""
    check_writable(args.out, folder=True, what="--out")
    data, info = read_events(args.data, args.format, remap=args.remap or None, bipartite=args.bipartite or None,
                             sort=args.sort)
    end = _end_time(args.end, data)
    graph = static_graph(data, end, num_nodes=info.num_nodes)
    source = {"name": str(args.data), "fingerprint": fingerprint(data), "format": args.format,
              "end": args.end, "end_time": end, "num_events": int(data.num_events)}
    report = run_static(graph, args.out, test_fraction=args.test_fraction, c=args.c, rbo_p=args.rbo_p,
                        methods=args.models, seed=args.seed, data=source)
    print(format_static(report))
    print(f"wrote {Path(args.out) / 'static.json'}{' and ' + report['plot'] if report['plot'] else ''} "
          f"({report['seconds']:.1f} s)")
    return 0
