"""``tgeval diagnose``: lifetimes, surprise, novelty and Birth–Death plots of an event file.

:func:`diagnose` is the library entry point; :func:`diagnose_command` runs it for the
arguments parsed by :mod:`tgeval.cli.program`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Optional

from torch_geometric.data import TemporalData

from tgeval.core.atomic import PathLike, check_writable, json_safe, write_atomic
from tgeval.cli.program import DIAGNOSE_FILES, read_event_file
from tgeval.data.split import chronological_split
from tgeval.diagnostics.lifetimes import SURPRISE_RATIOS, lifetime_summary, surprise_table
from tgeval.diagnostics.novelty import novelty_series, novelty_summary, segment_strata_shares
from tgeval.errors import SplitError
from tgeval.diagnostics.plots import (birth_death_panels, is_bipartite, plot_birth_death, plot_novelty, short_name,
                                     time_axis)
from tgeval.samplers.lifespans import split_time

__all__ = ["diagnose", "format_summary", "diagnose_command"]


def diagnose(data: TemporalData, out: PathLike, *, test_ratio: float = 0.15, directed: bool = True,
             bipartite: Optional[bool] = None, num_nodes: Optional[int] = None, name: str = "") -> dict:
    r"""Write ``diagnose.json``, ``novelty.csv`` and the PNG plots of ``data`` into the folder ``out``.

    :math:`t_{split}` is :func:`~tgeval.samplers.lifespans.split_time` ``(data, test_ratio)``;
    the segment strata use :func:`~tgeval.data.split.chronological_split` with ratios
    ``(1 - 2 * test_ratio, test_ratio, test_ratio)`` (``data`` must be time-sorted).

    Files: ``diagnose.json``, ``novelty.csv`` (``t,novelty,distinct_pairs,new_pairs``),
    ``birth_death_nodes.png``, ``birth_death_pairs.png``, ``novelty.png``.

    Returns:
        dict: the report written to ``diagnose.json``: ``"data"``, ``"lifetimes"``
        (``{"t_split", "test_ratio", "nodes", "pairs"}``), ``"surprise_table"``,
        ``"novelty"`` (``"summary"``, ``"segments"``), ``"files"``, ``"seconds"``.
    """
    if not 0.0 < float(test_ratio) < 0.5:
        raise SplitError(f"test_ratio must lie in (0, 0.5) (validation and test take test_ratio each), "
                         f"got {test_ratio!r}.")
    start = time.perf_counter()
    folder = Path(out)
    t_split = split_time(data, test_ratio)
    bip = is_bipartite(data) if bipartite is None else bool(bipartite)
    lifetimes = {"test_ratio": float(test_ratio),
                 "boundary": "an event exactly at t_split is 'after' the split "
                             "(docs/protocol.md §4: b >= t_split is inductive); "
                             "chronological_split puts such events in the segment before the test segment",
                 **lifetime_summary(data, t_split, directed=directed, num_nodes=num_nodes)}
    table = surprise_table(data, directed=directed, ratios=SURPRISE_RATIOS, num_nodes=num_nodes)
    series = novelty_series(data, num_nodes, directed=directed)
    segments: dict[str, Any] = {}
    try:
        split = chronological_split(data, (1.0 - 2.0 * float(test_ratio), float(test_ratio), float(test_ratio)))
        segments = {"segments": segment_strata_shares(data, split, num_nodes, directed=directed),
                    "split": split.to_dict()}
    except SplitError as error:  # too few distinct timestamps for three whole-timestamp segments
        segments = {"segments": None, "segments_error": str(error)}
    rows = "".join(f"{t!r},{nu!r},{size},{new}\n" for t, nu, size, new in
                   zip(series.t.tolist(), series.novelty.tolist(), series.num_pairs.tolist(),
                       series.num_new_pairs.tolist()))
    write_atomic(folder / "novelty.csv", "t,novelty,distinct_pairs,new_pairs\n" + rows)
    label, when = f"{short_name(name)}: " if name else "", time_axis(t_split, t_split).text(t_split)
    plot_birth_death(folder / "birth_death_nodes.png",
                     birth_death_panels(data, kind="nodes", bipartite=bip), t_split,
                     title=f"{label}Birth-Death diagram of nodes, t_split = {when} (test ratio {test_ratio:g})")
    plot_birth_death(folder / "birth_death_pairs.png",
                     birth_death_panels(data, kind="pairs", directed=directed, num_nodes=num_nodes), t_split,
                     title=f"{label}Birth-Death diagram of {'directed' if directed else 'undirected'} pairs, "
                           f"t_split = {when}")
    plot_novelty(folder / "novelty.png", series, t_split=t_split, title=f"{label}novelty ratio per timestamp")
    report: dict[str, Any] = {
        "data": {"name": name, "events": int(data.src.numel()), "directed": directed, "bipartite": bip,
                 "t_min": float(data.t.min()), "t_max": float(data.t.max())},
        "lifetimes": lifetimes,
        "surprise_table": table,
        "novelty": {"definition": "nu_t = |E_t minus E_<t| / |E_t|, E_t the distinct pairs at timestamp t",
                    "summary": novelty_summary(series), "series_file": "novelty.csv",
                    **segments},
        "files": list(DIAGNOSE_FILES),
    }
    report["seconds"] = round(time.perf_counter() - start, 3)
    report = json_safe(report)
    write_atomic(folder / "diagnose.json", json.dumps(report, indent=2) + "\n")
    return report


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def format_summary(report: dict) -> str:
    """A short readable summary of a :func:`diagnose` report."""
    lt = report["lifetimes"]
    lines = [f"{report['data']['events']} events; t_split = {lt['t_split']:g} (test ratio {lt['test_ratio']:g}); "
             f"{'directed' if report['data']['directed'] else 'undirected'} pairs"
             f"{'; bipartite' if report['data']['bipartite'] else ''}"]
    for kind in ("nodes", "pairs"):
        c = lt[kind]
        lines.append(f"  {kind:<5}  historical {c['historical']:>7}  overlap {c['overlap']:>7}  "
                     f"inductive {c['inductive']:>7}  surprise {_pct(c['surprise'])}")
    lines.append("  surprise by test ratio:  " + "  ".join(
        f"{row['test_ratio']:.2f}: {_pct(row['nodes']['surprise'])}/{_pct(row['pairs']['surprise'])}"
        for row in report["surprise_table"][::2]) + "   (nodes/pairs)")
    nov = report["novelty"]
    lines.append(f"  novelty: mean nu_t {_pct(nov['summary']['mean_novelty'])} over "
                 f"{nov['summary']['timestamps']} timestamps")
    if nov["segments"] is None:
        lines.append(f"  no val/test segments strata: {nov.get('segments_error', '')}")
        return "\n".join(lines)
    for seg in ("val", "test"):
        s = nov["segments"][seg]
        lines.append(f"  {seg:<4} {s['events']:>7} events: repeated {_pct(s['repeated_share'])}, "
                     f"new pair {_pct(s['new_pair_share'])}, new node {_pct(s['new_node_share'])}")
    return "\n".join(lines)


def _intervention_command(args: argparse.Namespace, data: TemporalData, num_nodes: int) -> int:
    """``--intervention membership CHECKPOINT``: :func:`~tgeval.diagnostics.intervention.membership_intervention`
    of the checkpoint's model, fitted on the training segment and compared on the test segment."""
    from tgeval.training.checkpoint import load_checkpoint
    from tgeval.data.catalog import build_catalog
    from tgeval.diagnostics.intervention import membership_intervention

    path = args.intervention[1]
    k = 20 if args.negatives is None else args.negatives
    checkpoint = load_checkpoint(path, "cpu", data=data)
    split = chronological_split(data, args.split or (0.70, 0.15, 0.15))
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    result = membership_intervention(checkpoint.model, data, split.train, split.test, catalog, num_negatives=k,
                                     seed=args.seed or 0, directed=args.directed)
    result.manifest.update(checkpoint=checkpoint.describe(), data=str(args.data), split=split.to_dict())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "intervention.json", json.dumps(result.to_dict(), indent=2) + "\n")
    print(f"membership intervention of {checkpoint.name} ({Path(path).name}): fitted on {split.train.num_events} "
          f"training events, compared on {split.test.num_events} test events; MRR (all): all-entity over the "
          f"{catalog.size}-item training catalog; cells: K = {k} sampled, ties average")
    print(result.format_table())
    print(f"wrote {out / 'intervention.json'}")
    return 0


def diagnose_command(args: argparse.Namespace) -> int:
    """Run :func:`diagnose` for parsed ``tgeval diagnose`` arguments (or, with ``--intervention``,
    the membership intervention); print a summary. Returns 0."""
    check_writable(args.out, folder=True, what="--out")  # before any work: a folder (or none yet) that accepts files
    if args.intervention is not None:
        kind = args.intervention[0]
        if kind != "membership":
            raise ValueError(f"--intervention takes 'membership CHECKPOINT' (the one intervention there is), got "
                             f"{kind!r}.")
    else:
        given = [flag for flag, value in (("--split", args.split), ("--negatives", args.negatives),
                                          ("--seed", args.seed)) if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} only apply to --intervention membership CHECKPOINT; drop them, or "
                             f"add --intervention.")
    data, info = read_event_file(args, directed=args.directed)
    if args.intervention is not None:
        return _intervention_command(args, data, info.num_nodes)
    report = diagnose(data, args.out, test_ratio=args.test_ratio, directed=args.directed,
                      bipartite=True if (args.bipartite or info.bipartite) else None, num_nodes=info.num_nodes,
                      name=str(args.data))
    print(format_summary(report))
    print(f"wrote {Path(args.out) / 'diagnose.json'} and the plots ({report['seconds']:.1f} s)")
    return 0
