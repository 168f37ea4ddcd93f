"""How results are shown: the protocol line and the table the commands print, and ``tgeval report``, one
self-contained HTML page of a results folder.

The page holds the protocol line, the main table with time-block bootstrap intervals of each
model's all-entity MRR, the K-sweep plot with Kendall's τ, the time profile of ranks, the strata
bars, the Birth–Death diagrams when the folder holds ``diagnose`` output, and every manifest in a
collapsible block. Images are embedded as ``data:`` PNGs; the page loads nothing else. Files of
the folder that are not results are listed with the reason, never dropped silently.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import torch
from torch import Tensor

from tgeval.atomic import write_atomic
from tgeval.diagnostics.compare import compare, k_label, load_events
from tgeval.diagnostics.time_profile import time_profile
from tgeval.eval.result import STRATA, Result
from tgeval.eval.stats import block_bootstrap_difference

__all__ = ["protocol_line", "protocol_lines", "format_table", "format_number", "build_report", "write_report", "report_command"]

PathLike = Union[str, "os.PathLike[str]"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
img { max-width: 100%; } .note { color: #666; font-size: 0.9em; }
"""


def format_number(value: Optional[float], digits: int = 4) -> str:
    """A metric for a table: ``-`` when undefined (``None`` or NaN)."""
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def protocol_line(result: Result) -> str:
    """The protocol behind a result's numbers, in one line (segment, replay, sampler, K, catalog, ties)."""
    m, p = result.manifest, result.manifest["protocol"]
    sampler = "none" if m["sampler"] is None else m["sampler"]["name"]
    catalog = "none (no all-entity pass)" if m["catalog"] is None else f"{m['catalog']['kind']} ({m['catalog']['size']})"
    if m["catalog"] is not None and p.get("prefilter") is not None:
        catalog += f", APPROXIMATE: top-{p['prefilter']} pre-filter per step (ranks optimistic)"
    history = m.get("history")
    replay = f"{p['replay']} replay" + ("" if history is None else f", history {history['mode']}")
    line = (f"{m['segment']['name']} segment, {m['segment']['num_events']} events; {replay}; "
            f"sampler {sampler}, K={p['num_negatives'] if m['sampler'] is not None else 0}; catalog {catalog}; "
            f"ties {p['ties']}; "
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


def protocol_lines(rows: Sequence[tuple[str, Result]]) -> str:
    """The first row's protocol line, then each other row whose protocol (replay, history, sampler, K, catalog,
    ties, segment) differs, named."""
    first = protocol_line(rows[0][1])
    return "\n".join([f"protocol: {first}"] + [f"{name}: {line}" for name, r in rows[1:]
                                                if (line := protocol_line(r)) != first])


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
    lines = [head, "-" * len(head)]
    for name, result in rows:
        m = result.metrics
        sampled = m.get("sampled", {}).get("mrr", {}).get("micro")
        full = m.get("all_entity", {})
        strata = []
        basis = _strata_basis(result)
        for stratum in STRATA:
            entry = m["strata"][stratum]
            mrr = entry.get(basis, {}).get("mrr", {}).get("micro")
            strata.append(f"{format_number(mrr)} (n={entry['count']})".rjust(17))
        lines.append(f"{name:<22} {format_number(sampled):>11} {format_number(full.get('mrr', {}).get('micro')):>11} "
                     f"{format_number(full.get('mrr', {}).get('macro')):>10} {format_number(full.get('hits@10', {}).get('micro')):>8} "
                     + " ".join(strata) + f" {result.performance['events_per_second']:>10.0f}")
    bases = sorted({_strata_basis(r).replace("_", "-") for _, r in rows})
    lines.append(f"strata columns: {' or '.join(bases)} MRR (micro; each row's all-entity MRR where it was measured) "
                 f"and event count per stratum")
    return "\n".join(lines)


def _strata_basis(result: Result) -> str:
    """The metrics the strata of ``result`` are shown in: all-entity when measured, else sampled."""
    return "all_entity" if "all_entity" in result.metrics else "sampled"


def _png(figure: Any) -> str:
    """A matplotlib figure as an ``<img>`` with a base64 PNG."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return _img(buffer.getvalue(), "plot")


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _figure(width: float = 7.0, height: float = 3.6) -> tuple[Any, Any]:
    from tgeval.diagnostics.plots import _matplotlib

    figure_type, canvas_type = _matplotlib()
    fig = figure_type(figsize=(width, height))
    canvas_type(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _load(folder: Path) -> tuple[dict[str, Result], dict[str, dict[str, Tensor]], list[tuple[str, str]]]:
    """Results by file stem, their per-event tables (results saved with events), and the skipped
    files with the reason."""
    results, tables, skipped = {}, {}, []
    for path in sorted(folder.glob("*.json")):
        if path.name in ("diagnose.json", "summary.json"):  # shown in the Birth-Death section / the table
            continue
        try:
            result = Result.load(path)
        except (ValueError, KeyError, TypeError) as error:
            skipped.append((path.name, f"not a result JSON (no {error} entry)" if isinstance(error, KeyError)
                            else f"unreadable ({type(error).__name__}: {error})"))
            continue
        results[path.stem] = result
        if result.manifest.get("events_file"):
            tables[path.stem] = load_events(path)  # verified against the recorded sha256
    return results, tables, skipped


def _interval(table: dict[str, Tensor], uncovered: str) -> tuple[float, float]:
    """95% time-block bootstrap interval of the mean all-entity reciprocal rank over the events the
    micro MRR averages (the interval of the difference against 0)."""
    keep = table["covered"] if uncovered == "exclude" else torch.ones_like(table["rank"], dtype=torch.bool)
    t, rank = table["t"][keep], table["rank"][keep]
    rr = (1.0 / rank.double())[torch.argsort(t, stable=True)]
    iv = block_bootstrap_difference(rr, torch.zeros_like(rr), seed=0)  # blocks of 128 events, as compare
    return iv.low, iv.high


def _main_table(results: dict[str, Result], tables: dict[str, dict[str, Tensor]]) -> str:
    rows = ["<tr><th>model</th><th>sampled MRR</th><th>all-entity MRR</th><th>95% interval (time blocks)</th>"
            "<th>macro MRR</th><th>Hits@10</th><th>AP</th><th>uncovered</th></tr>"]
    for name, result in results.items():
        m = result.metrics
        full = m.get("all_entity", {})
        interval = "–"
        if name in tables and "rank" in tables[name]:
            low, high = _interval(tables[name], result.manifest["protocol"]["uncovered"])
            interval = f"[{low:.4f}, {high:.4f}]"
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in (
            name, format_number(m.get("sampled", {}).get("mrr", {}).get("micro")), format_number(full.get("mrr", {}).get("micro")),
            interval, format_number(full.get("mrr", {}).get("macro")), format_number(full.get("hits@10", {}).get("micro")),
            format_number(m.get("sampled", {}).get("ap", {}).get("global")),
            full.get("coverage", {}).get("uncovered", "–"))) + "</tr>")
    return "<table>" + "".join(rows) + "</table>"


def _k_sweep(report: dict) -> str:
    sweep = report["k_sweep"]
    labels = [k_label(k) for k in sweep["K"]]
    fig, ax = _figure()
    for name in sweep["models"]:
        ax.plot(labels, sweep["mrr"][name], marker="o", label=name)
    ax.set_xlabel("K sampled negatives (expected, from the exact ranks)")
    ax.set_ylabel("MRR")
    ax.legend(fontsize=8)
    fig.tight_layout()
    taus = ", ".join(f"K={k}: {t:.2f}" if t == t else f"K={k}: n/a" for k, t in zip(labels, sweep["kendall_tau"]))
    return _png(fig) + f'<p class="note">Kendall τ of each K\'s model order with the full catalog\'s: {taus}</p>'


def _time_profile(tables: dict[str, dict[str, Tensor]]) -> str:
    """Mean all-entity rank of each model's positives in 30 equal time bins of the segment."""
    t = next(iter(tables.values()))["t"]
    span = (float(t.min()), float(t.max()))
    fig, ax = _figure(8.0, 3.8)
    for name, table in tables.items():
        profile = time_profile(table, bins=30, t_range=span)
        ax.plot(((profile.t_start + profile.t_end) / 2).numpy(), profile.pos_rank.numpy(), marker=".", label=name)
    ax.set_yscale("log")
    ax.set_xlabel("time")
    ax.set_ylabel("mean all-entity rank of the positives")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _strata(results: dict[str, Result]) -> str:
    fig, ax = _figure()
    width = 0.8 / max(len(results), 1)
    for i, (name, result) in enumerate(results.items()):
        basis = _strata_basis(result)
        values = [result.metrics["strata"][s].get(basis, {}).get("mrr", {}).get("micro") for s in STRATA]
        values = [math.nan if v is None else v for v in values]  # undefined: no bar, not a zero
        ax.bar([j + i * width for j in range(len(STRATA))], values, width=width, label=name)
    first = next(iter(results.values()))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(STRATA))])
    ax.set_xticklabels([f"{s} (n={first.metrics['strata'][s]['count']})" for s in STRATA])
    ax.set_ylabel("MRR (all-entity where measured)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _birth_death(folder: Path) -> str:
    report = json.loads((folder / "diagnose.json").read_text(encoding="utf-8"))
    images = [_img((folder / name).read_bytes(), name)
              for name in ("birth_death_nodes.png", "birth_death_pairs.png", "novelty.png") if (folder / name).is_file()]
    lt = report["lifetimes"]
    return (f'<p>t_split = {lt["t_split"]:g} (test ratio {lt["test_ratio"]:g}); surprise: nodes '
            f'{lt["nodes"]["surprise"]:.1%}, pairs {lt["pairs"]["surprise"]:.1%}</p>' + "".join(images))


def build_report(folder: PathLike, comparison: Optional[dict] = None) -> str:
    """The HTML page of the results in ``folder`` (see the module docstring).

    ``comparison``: :func:`~tgeval.diagnostics.compare.compare` of the folder's results that have
    per-event files, when the caller has computed it (else computed here)."""
    folder = Path(folder)
    results, tables, skipped = _load(folder)
    if not results:
        raise ValueError(f"{folder}: no result JSON (from `tgeval evaluate --out` or `tgeval run`) to report.")
    first = next(iter(results.values()))
    parts = [f"<h1>tgeval report: {html.escape(str(first.manifest['data'].get('name') or folder.name))}</h1>",
             f"<p>{html.escape(protocol_lines(list(results.items()))).replace(chr(10), '<br>')}</p>"]
    parts += ["<h2>Models</h2>", _main_table(results, tables)]
    with_events = {name: table for name, table in tables.items() if "above" in table}
    if with_events:
        comparison = compare(with_events) if comparison is None else comparison
        parts += ["<h2>K-sweep</h2>", _k_sweep(comparison), "<h2>Time profile</h2>", _time_profile(with_events)]
    else:
        parts.append('<p class="note">The K-sweep and the time profile need per-event files with all-entity ranks '
                     '(`--save-events` with the all-entity pass); none of these results has one.</p>')
    parts += ["<h2>Strata</h2>", _strata(results)]
    if (folder / "diagnose.json").is_file():
        parts += ["<h2>Birth–Death</h2>", _birth_death(folder)]
    parts.append("<h2>Manifests</h2>")
    for name, result in results.items():
        text = json.dumps(result.manifest, indent=2, default=str)
        parts.append(f"<details><summary>{html.escape(name)}</summary><pre>{html.escape(text)}</pre></details>")
    if skipped:
        parts.append("<h2>Files not reported</h2><ul>" + "".join(
            f"<li>{html.escape(name)}: {html.escape(why)}</li>" for name, why in skipped) + "</ul>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tgeval report</title>"
            f"<style>{_STYLE}</style></head><body>" + "\n".join(parts) + "</body></html>\n")


def write_report(folder: PathLike, out: PathLike, comparison: Optional[dict] = None) -> Path:
    """Write :func:`build_report` of ``folder`` to ``out`` atomically; returns ``out``."""
    write_atomic(out, build_report(folder, comparison))
    return Path(out)


def report_command(args: argparse.Namespace) -> int:
    """``tgeval report RESULTS_DIR --out report.html``."""
    from tgeval.atomic import check_writable

    check_writable(args.out, what="--out")
    path = write_report(args.results, args.out)
    print(f"wrote {path}")
    return 0
