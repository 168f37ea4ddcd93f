"""``tgeval static`` and ``tgeval shift``: static link-prediction reports of an event file
(:func:`~tgeval.static.report.run_static` on a random or a structural-shift split).

Their parsers are in :mod:`tgeval.cli.program`; :func:`static_command` and :func:`shift_command` run them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from torch_geometric.data import TemporalData

from tgeval.core.atomic import check_writable
from tgeval.data.hashing import fingerprint
from tgeval.cli.program import read_event_file
from tgeval.data.split import chronological_split
from tgeval.static.graph import StaticGraph, before, random_edge_split, static_graph
from tgeval.static.gnn import GNNConfig
from tgeval.static.report import run_static
from tgeval.static.shift import shift_split

__all__ = ["static_command", "shift_command", "format_static"]


def _projected(text: str, data: TemporalData) -> TemporalData:
    """The events ``--end`` projects: all, the training segment of the 70/15/15 chronological split (by
    index: exact for any timestamps), or those with ``t`` below a given time (compared exactly, the text read as
    an exact number: :func:`~tgeval.static.graph.before`)."""
    if text == "all":
        return data
    if text == "train":
        return data[: chronological_split(data).train.end]
    return data[: int(before(data.t, text).sum())]  # time-sorted: the events before the bound are a prefix


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
    sides = report["sides"]
    if sides["kind"] == "bipartite":
        sigma = "sigma source {sigma[source][sigma]:.4f}, destination {sigma[destination][sigma]:.4f}".format(
            sigma=report["sigma_sides"])
        kind = (f"bipartite graph ({sides['source_nodes']} source-side and {sides['destination_nodes']} "
                f"destination-side nodes; negatives join the sides; cn, aa, ra count paths of length 3)")
    else:
        sigma, kind = f"sigma = {report['sigma']:.4f}", "unipartite graph"
    lines = [f"{report['data']['num_nodes']} nodes, {report['data']['num_edges']} edges, {kind}; {how}: "
             f"{p['num_train_edges']} train, {p['num_test_edges']} test; one negative per positive",
             f"{sigma}; PA AUROC: analytic {report['pa_auroc_formula']} = {report['pa_auroc_analytic']:.4f}, "
             f"uniform {report['pa_auroc_uniform']:.4f}, degree-corrected {report['pa_auroc_degree_corrected']:.4f}",
             f"{'method':<8} {'AUROC unif':>10} {'AUROC dc':>9} {'VCMPR@' + str(p['c']):>10}"]
    for m, value in report["vcmpr_at_c"].items():
        u, d = report["benchmarks"]["uniform"][m]["auroc"], report["benchmarks"]["degree_corrected"][m]["auroc"]
        lines.append(f"{m:<8} {u:>10.4f} {d:>9.4f} {value:>10.4f}")
    lines += [f"{m:<8} not scored: {why}" for m, why in report["not_applicable"].items()]
    if "heart" in report:
        h = report["heart"]
        lines.append(f"HeaRT ({h['negatives']['heuristic']}, M={h['negatives']['per_positive']}) MRR: "
                     + ", ".join(f"{m} {r['mrr']:.4f}" for m, r in h["methods"].items()))
    lines.append(f"VCMPR over {report['vcmpr_nodes']} nodes with a test edge; RBO(p={p['rbo_p']}) with the "
                 f"recommendation ranking: uniform {report['rbo']['uniform']:.4f}, degree-corrected "
                 f"{report['rbo']['degree_corrected']:.4f} (closer: {report['closer_to_recommendation']})")
    return "\n".join(lines)


def _graph(args: argparse.Namespace) -> tuple[StaticGraph, dict]:
    """The static graph of ``args.data`` and what it came from (checks ``--out`` first)."""
    check_writable(args.out, folder=True, what="--out")
    data, info = read_event_file(args)
    projected = _projected(args.end, data)
    source = {"name": str(args.data), "fingerprint": fingerprint(data), "format": args.format,
              "end": args.end, "num_events": int(data.num_events), "projected_events": int(projected.num_events)}
    # the reader's bipartite flag (--bipartite, or the format's), unless --unipartite
    sides = info.dst_offset if info.bipartite and not args.unipartite else None
    return static_graph(projected, num_nodes=info.num_nodes, dst_offset=sides), source


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
    """Run :func:`~tgeval.static.report.run_static` on a structural-shift split for parsed ``tgeval shift``
    arguments."""
    graph, source = _graph(args)
    split = shift_split(graph, args.heuristic, args.thresholds, inverse=args.inverse, caps=args.caps, seed=args.seed,
                        max_depth=args.max_depth)
    report = run_static(split, args.out, c=args.c, rbo_p=args.rbo_p, methods=args.models, data=source,
                        heart=args.negatives, gnn=GNNConfig(negatives=args.gnn_negatives, seed=args.seed),
                        file="shift.json")
    return _report(args, report, "shift.json")
