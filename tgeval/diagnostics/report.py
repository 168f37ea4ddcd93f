"""How results are shown: the protocol line and the table the commands print, and ``tgeval report``, one
self-contained HTML page of a results folder.

The page is titled with the data's name (paths in it cut to their last component; the folder's name
when no result names its data). Results are grouped by the events they were evaluated on (data
fingerprint, segment name and range), then by the settings they were measured under (seed, K, sampler,
catalog, ties, replay, history and every other protocol setting): each group has its own section, headed
by the segment's name, event range and time span (and the settings that tell it from the segment's other
sections), with its protocol lines, its Models table (time-block bootstrap intervals of each model's
all-entity MRR), its K-sweep with Kendall's τ, its time profile of ranks and its strata bars. Results of
different sections are never in one table or one plot, so they are never ranked against each other. A
result whose per-event file is missing, lies outside the folder or was not written with it (its sha256
differs) is shown from its JSON alone, with the reason. Then come the Birth–Death diagrams when the
folder holds ``diagnose`` output, and every manifest in a collapsible block. Every plot has a caption in
words that names its protocol, time axes as dates or durations
(:func:`~tgeval.diagnostics.plots.time_axis`) and its legend outside the axes. Long names wrap, so the
page never scrolls sideways. Images are embedded as ``data:`` PNGs; the page loads nothing else. Files
of the folder that are not results are listed with the reason, never dropped silently.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import torch
from torch import Tensor

from tgeval.core.atomic import PathLike, write_atomic
from tgeval.core.choices import DEFAULT_BLOCK
from tgeval.diagnostics.comparison import compare, events_file_of, fitting_block, k_label, load_events
from tgeval.diagnostics.plots import duration_unit, legend_outside, rank_axis, short_name, time_axis
from tgeval.diagnostics.time_bins import time_profile
from tgeval.errors import EventsFileError, InputPathError, ResultFileError
from tgeval.eval.display import strata_basis, format_number, protocol_lines
from tgeval.eval.result import NUMBER, STRATA, Result, load_json, trained_events
from tgeval.eval.stats import block_bootstrap_difference

__all__ = ["build_report", "write_report", "report_command"]


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 1100px; color: #222; }
h1, h2, h3, p, li, summary, figcaption { overflow-wrap: anywhere; }
.wide { overflow-x: auto; }
section { border-top: 2px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.8em; white-space: pre-wrap;
      overflow-wrap: anywhere; }
figure { margin: 1em 0; } figcaption { color: #444; font-size: 0.9em; max-width: 60em; }
img { max-width: 100%; } .note { color: #666; font-size: 0.9em; }
"""
#: Segment names as words in the section headings.
_SEGMENT_WORDS = {"train": "Training", "val": "Validation", "test": "Test"}


def _png(figure: Any, alt: str, caption: str) -> str:
    """A matplotlib figure as a ``<figure>`` with a base64 PNG and its caption."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return f"<figure>{_img(buffer.getvalue(), alt)}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _figure(width: float = 8.5, height: float = 3.6) -> tuple[Any, Any]:
    from tgeval.diagnostics.plots import new_figure

    fig = new_figure(width, height)
    return fig, fig.add_subplot(1, 1, 1)


def _load(folder: Path, allow_trained_events: bool) -> tuple[dict[str, Result], dict[str, dict[str, Tensor]],
                                                              dict[str, str], list[tuple[str, str]], dict[str, str]]:
    """Results by file stem, their per-event tables (results saved with events), why a result's per-event file
    was not used (:class:`~tgeval.errors.EventsFileError`: missing, elsewhere, or not written with
    it), the skipped files with the reason, and why a result may measure its checkpoint's training events
    (:func:`~tgeval.eval.result.trained_events`; skipped unless ``allow_trained_events``)."""
    results, tables, unused, skipped, trained = {}, {}, {}, [], {}
    audits = _audits(folder)
    for path in sorted(folder.glob("*.json")):
        if path.name in ("diagnose.json", "summary.json") or path in audits:  # shown in their sections
            continue
        try:
            result = Result.load(path)
        except (ResultFileError, InputPathError) as error:  # the reason, without the path the page names
            skipped.append((path.name, str(error).removeprefix(f"{path}: ")))
            continue
        why = trained_events(result.manifest)
        if why is not None and not allow_trained_events:
            skipped.append((path.name, f"{why}: pass --allow-trained-events (allow_trained_events=True) to report "
                                       f"it, marked"))
            continue
        if why is not None:
            trained[path.stem] = why
        results[path.stem] = result
        if result.manifest.get("events_file"):
            try:  # verified against the recorded sha256
                tables[path.stem] = load_events(events_file_of(path, direct=False))
            except EventsFileError as error:  # the result is shown from its JSON alone, and says why
                unused[path.stem] = str(error)
    return results, tables, unused, skipped, trained


def _audits(folder: Path) -> dict[Path, dict]:
    """The leak audits of ``folder`` (JSON files of ``tgeval audit --out``, ``"kind": "tgeval-audit"``), by path,
    their ``checks`` and ``manifest`` objects (else empty)."""
    found = {}
    for path in sorted(folder.glob("*.json")):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue  # not an audit: the results' reader says why
        if isinstance(payload, dict) and payload.get("kind") == "tgeval-audit":
            found[path] = {key: payload[key] if isinstance(payload.get(key), dict) else {}
                           for key in ("checks", "manifest")} | {"passed": payload.get("passed") is True}
    return found


def _audit_section(audits: dict[Path, dict]) -> str:
    """A table of the leak audits beside the results: per audit, its model, its verdict and each check's."""
    names = list(dict.fromkeys(str(name) for payload in audits.values() for name in payload["checks"]))
    head = "".join(f"<th>{html.escape(name)}</th>" for name in ["file", "model", "verdict", *names])
    rows = []
    for path, payload in audits.items():
        model = payload["manifest"].get("model")
        cells = [path.name, model.get("name", "?") if isinstance(model, dict) else "?",
                 "passed" if payload["passed"] else "FAILED"]
        cells += [_check_cell(payload["checks"].get(name)) for name in names]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in cells) + "</tr>")
    return ("<h2>Leak audits</h2><p class=\"note\">tgeval audit of the models (docs/guide/auditing.md): each check "
            "passes, fails, or is reported.</p>"
            f'<div class="wide"><table><tr>{head}</tr>{"".join(rows)}</table></div>')


def _check_cell(check: Any) -> str:
    if not isinstance(check, dict):
        return "-"
    passed = check.get("passed")
    return "pass" if passed is True else "FAIL" if passed is False else "reported" if "value" in check and \
        check["value"] is not None else "not run"


def _interval(table: dict[str, Tensor], uncovered: str) -> str:
    """95% time-block bootstrap interval of the mean all-entity reciprocal rank over the events the
    micro MRR averages (the interval of the difference against 0), as text, in blocks of ``tgeval compare``'s
    default :data:`~tgeval.core.choices.DEFAULT_BLOCK` events; for that many events or
    fewer (one block, a zero-width interval) the text says that there is none."""
    keep = table["covered"] if uncovered == "exclude" else torch.ones_like(table["rank"], dtype=torch.bool)
    t, rank = table["t"][keep], table["rank"][keep]
    if t.numel() <= DEFAULT_BLOCK:
        return f"none: {t.numel()} events, one block of {DEFAULT_BLOCK}"
    rr = (1.0 / rank.double())[torch.argsort(t, stable=True)]
    iv = block_bootstrap_difference(rr, torch.zeros_like(rr), block=DEFAULT_BLOCK, seed=0)
    return f"[{iv.low:.4f}, {iv.high:.4f}]"


def _title(results: dict[str, Result], folder: Path) -> str:
    """The data's name(s) of the results (:func:`~tgeval.diagnostics.plots.short_name`), else the folder's name."""
    names = dict.fromkeys(short_name(r.manifest["data"].get("name") or "") for r in results.values())
    return ", ".join(name for name in names if name) or folder.resolve().name


def _by_segment(results: dict[str, Result]) -> list[list[str]]:
    """Names of the results grouped by the events they were evaluated on (data fingerprint, segment name and
    range); groups in order of the data's first appearance, then of the segment's start."""
    groups: dict[tuple, list[str]] = {}
    for name, result in results.items():
        seg = result.manifest["segment"]
        groups.setdefault((result.manifest["data"]["fingerprint"], seg["start"], seg["end"], seg["name"]),
                          []).append(name)
    data = list(dict.fromkeys(key[0] for key in groups))
    return [groups[key] for key in sorted(groups, key=lambda key: (data.index(key[0]), *key[1:]))]


#: Labels of protocol settings in section headings (``hits`` only chooses the Hits@k reported: no setting).
_SETTING_LABELS = {"num_negatives": "K", "batch_size": "batch size", "uncovered": "uncovered positives",
                   "prefilter": "pre-filter", "warm": "warm start"}


def _settings(result: Result) -> dict[str, Any]:
    """What a result's numbers were measured under besides its events, by label: every protocol setting but
    ``hits`` (``K`` is 0 without a sampler), the sampler and the catalog as described (a negatives file by its
    checksum, not by the path it was read from)."""
    m, p = result.manifest, result.manifest["protocol"]
    out = {_SETTING_LABELS.get(key, key): value for key, value in p.items() if key != "hits"}
    out["K"] = p["num_negatives"] if m["sampler"] is not None else 0
    out["sampler"], out["catalog"] = _without_paths(m["sampler"]), m["catalog"]
    return out


def _without_paths(value: Any) -> Any:
    """``value`` without its ``path`` entries, at any depth."""
    if isinstance(value, dict):
        return {key: _without_paths(item) for key, item in value.items() if key != "path"}
    return [_without_paths(item) for item in value] if isinstance(value, list) else value


def _setting_words(label: str, value: Any, others: Sequence[Any]) -> str:
    """``label=value`` of a setting whose value differs among ``others``; a sampler or a catalog by its name (or
    kind; a catalog with its size), and the entries in which it differs from ``others`` of that name, e.g.
    ``sampler=uniform (catalog=all)``."""
    if value is None:
        return f"{label}={'model default' if label == 'history' else 'none'}"
    if not isinstance(value, dict):
        return f"{label}={value}"
    name = value.get("name", value.get("kind"))
    alike = [o for o in others if isinstance(o, dict) and o.get("name", o.get("kind")) == name]
    shown = [f"{key}={item.get('name', item.get('kind', '...')) if isinstance(item, dict) else item}"
             for key, item in value.items() if any(o.get(key) != item for o in alike)]
    size = f" ({value['size']:,} items)" if "size" in value else ""
    return f"{label}={name}{size}" + (f" ({', '.join(shown)})" if shown else "")


def _sections(results: dict[str, Result]) -> list[tuple[list[str], list[str]]]:
    """Names of the results by section: grouped by the events they were evaluated on (:func:`_by_segment`), then
    by the settings they were measured under (:func:`_settings`), in order of first appearance; with each group,
    the words of the settings that tell it from the other groups of its segment (none when the segment has one)."""
    out = []
    for names in _by_segment(results):
        settings = {name: _settings(results[name]) for name in names}
        key = {name: json.dumps(value, sort_keys=True, default=str) for name, value in settings.items()}
        groups: dict[str, list[str]] = {}
        for name in names:
            groups.setdefault(key[name], []).append(name)
        labels = dict.fromkeys(label for value in settings.values() for label in value)
        differing = [label for label in labels if len({json.dumps(value.get(label), sort_keys=True, default=str)
                                                       for value in settings.values()}) > 1]
        for group in groups.values():
            mine = settings[group[0]]
            out.append((group, [_setting_words(label, mine.get(label), [value.get(label) for value in
                                                                        settings.values()]) for label in differing]))
    return out


def _segment_heading(result: Result, with_data: bool, settings: Sequence[str]) -> str:
    """``<h2>`` and a note: the segment's name, event range and time span (and the data when the folder holds
    several), and the ``settings`` that tell this section from the other sections of its segment."""
    seg, data = result.manifest["segment"], result.manifest["data"]
    heading = f"{_SEGMENT_WORDS.get(seg['name'], seg['name'])} segment: events [{seg['start']}, {seg['end']})"
    if with_data:
        heading += f" of {short_name(data.get('name') or 'unnamed data')} (fingerprint {data['fingerprint'][:12]})"
    if settings:
        heading += f"; {', '.join(settings)}"
    axis = time_axis(seg["t_first"], seg["t_last"])
    span = seg["t_last"] - seg["t_first"]
    unit, size = duration_unit(span)
    length = f"{span:g} time units" if axis.kind == "plain" else f"{span / size:.3g} {unit}"
    others = ("results of other segments have their own sections and are never ranked against these" if not settings
              else f"results of this segment measured under other settings (they differ in "
                   f"{', '.join(word.split('=')[0] for word in settings)}), and of other segments, have their own "
                   f"sections and are never ranked against these")
    return (f"<h2>{html.escape(heading)}</h2><p class=\"note\">{html.escape(str(seg['num_events']))} events from "
            f"{html.escape(axis.text(seg['t_first']))} to {html.escape(axis.text(seg['t_last']))} ({length}). Every "
            f"row and plot of this section was measured on these events"
            f"{' under these settings' if settings else ''}; {html.escape(others)}.</p>")


def _catalog_words(result: Result) -> str:
    """The all-entity pass's catalog as :func:`~tgeval.eval.protocol.metric_name` names it: ``catalog train, 1,459
    items``."""
    c = result.manifest["catalog"]
    return "no all-entity pass" if c is None else f"catalog {c['kind']}, {c['size']:,} items"


def _column(results: dict[str, Result], part: str, metric: str) -> str:
    """A column's heading: the metric's name with its protocol (:meth:`Result.metric_name`), which the results of
    a section share (:func:`_sections`), or its plain name when none of them measured it."""
    measured = "sampler" if part == "sampled" else "catalog"
    names = {r.metric_name(part, metric) for r in results.values() if r.manifest[measured] is not None}
    if names:
        return names.pop()
    plain = metric.replace("hits@", "Hits@") if metric.startswith("hits@") else metric.upper()
    return f"{plain if part == 'sampled' else 'all-entity ' + plain} (not measured)"


def _main_table(results: dict[str, Result], tables: dict[str, dict[str, Tensor]]) -> str:
    head = ("model", _column(results, "sampled", "mrr"), _column(results, "all_entity", "mrr"),
            "95% interval of the all-entity MRR (time blocks)", "macro " + _column(results, "all_entity", "mrr"),
            _column(results, "all_entity", "hits@10"), _column(results, "sampled", "ap"), "uncovered positives")
    rows = ["<tr>" + "".join(f"<th>{html.escape(cell)}</th>" for cell in head) + "</tr>"]
    for name, result in results.items():
        m = result.metrics
        full = m.get("all_entity", {})
        interval = "–"
        if name in tables and "rank" in tables[name]:
            interval = _interval(tables[name], result.manifest["protocol"]["uncovered"])
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in (
            name, format_number(m.get("sampled", {}).get("mrr", {}).get("micro")),
            format_number(full.get("mrr", {}).get("micro")), interval, format_number(full.get("mrr", {}).get("macro")),
            format_number(full.get("hits@10", {}).get("micro")),
            format_number(m.get("sampled", {}).get("ap", {}).get("global")),
            full.get("coverage", {}).get("uncovered", "–"))) + "</tr>")
    return '<div class="wide"><table>' + "".join(rows) + "</table></div>"


def _k_sweep_figure(report: dict) -> Any:
    sweep = report["k_sweep"]
    labels = [k_label(k) for k in sweep["K"]]
    fig, ax = _figure()
    for name in sweep["models"]:
        ax.plot(labels, sweep["mrr"][name], marker="o", label=name)
    ax.set_xlabel("K, the number of negatives drawn uniformly from the catalog (full: the whole catalog)")
    ax.set_ylabel(f"expected MRR ({report['ties']} ties)")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def _k_sweep(report: dict, result: Result) -> str:
    labels = [k_label(k) for k in report["k_sweep"]["K"]]
    taus = "none (one model has no order to compare)" if len(report["models"]) < 2 else ", ".join(
        f"K={k}: {t:.2f}" if t == t else f"K={k}: n/a" for k, t in zip(labels, report["k_sweep"]["kendall_tau"]))
    caption = (f"The MRR each model would get if its positives were ranked against K negatives drawn uniformly "
               f"from the catalog ({_catalog_words(result)}) instead of against all of it: the expected value, "
               f"computed exactly from the all-entity ranks, {report['ties']} ties. Lines that cross mean that "
               f"the K chosen changes which model looks better. Kendall's τ between each K's order of the models "
               f"and the whole catalog's: {taus}.")
    return _png(_k_sweep_figure(report), "K-sweep plot", caption)


def _time_profile_figure(tables: dict[str, dict[str, Tensor]], bins: int = 30, ties: str = "average") -> Any:
    """Mean all-entity rank (under ``ties``) of each model's positives in ``bins`` equal time bins of the
    segment."""
    t = next(iter(tables.values()))["t"]
    span = (float(t.min()), float(t.max()))
    axis = time_axis(*span)
    fig, ax = _figure(9.0, 3.8)
    profiles = {name: time_profile(table, bins=bins, ties=ties, t_range=span) for name, table in tables.items()}
    for name, profile in profiles.items():
        ax.plot(axis.values((profile.t_start + profile.t_end) / 2), profile.pos_rank.numpy(), marker=".",
                label=name)
    rank_axis(ax, [profile.pos_rank for profile in profiles.values()])
    axis.apply(ax.xaxis)
    ax.set_ylabel("mean all-entity rank\nof the positives")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def _time_profile(tables: dict[str, dict[str, Tensor]], result: Result) -> str:
    caption = (f"How each model's ranking changes through the segment: the mean rank of the true destination "
               f"among all catalog destinations ({_catalog_words(result)}, average ties; 1 is best) in 30 equal "
               f"time bins. A line that climbs means the model ranks later events worse.")
    return _png(_time_profile_figure(tables, ties="average"), "time profile plot", caption)


def _strata_figure(results: dict[str, Result]) -> Any:
    fig, ax = _figure()
    width = 0.8 / max(len(results), 1)
    for i, (name, result) in enumerate(results.items()):
        basis = strata_basis(result)
        values = [result.metrics["strata"][s].get(basis, {}).get("mrr", {}).get("micro") for s in STRATA]
        values = [math.nan if v is None else v for v in values]  # undefined: no bar, not a zero
        what = "all-entity" if basis == "all_entity" else "sampled"
        ax.bar([j + i * width for j in range(len(STRATA))], values, width=width, label=f"{name} ({what})")
    first = next(iter(results.values()))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(STRATA))])
    ax.set_xticklabels([f"{s}\n(n={first.metrics['strata'][s]['count']})" for s in STRATA])
    ax.set_ylabel("MRR")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def _strata(results: dict[str, Result]) -> str:
    ties = f"{next(iter(results.values())).manifest['protocol']['ties']} ties"  # one per section (_sections)
    caption = (f"MRR on three kinds of events, relative to the events before the segment: pairs seen before "
               f"(repeated), new pairs of known nodes, and events with a node never seen; n is the number of events "
               f"of each kind. A bar is the model's {_column(results, 'all_entity', 'mrr')} where it was measured "
               f"(legend: all-entity), else its {_column(results, 'sampled', 'mrr')} (legend: sampled), {ties}; no "
               f"bar: no event of that kind.")
    return _png(_strata_figure(results), "strata bar chart", caption)


#: what the report reads of ``diagnose.json``
_DIAGNOSE_SCHEMA = {"lifetimes": {"t_split": NUMBER, "test_ratio": NUMBER, "nodes": {"surprise": NUMBER},
                                  "pairs": {"surprise": NUMBER}}}


def _birth_death(folder: Path) -> str:
    try:
        report = load_json(folder / "diagnose.json", _DIAGNOSE_SCHEMA, "diagnose output",
                           "Write it anew with `tgeval diagnose --out FOLDER`.")
    except (ResultFileError, InputPathError) as error:
        return f'<p class="note">diagnose.json is not shown: {html.escape(str(error))}</p>'
    images = [_img((folder / name).read_bytes(), name)
              for name in ("birth_death_nodes.png", "birth_death_pairs.png", "novelty.png")
              if (folder / name).is_file()]
    lt = report["lifetimes"]
    split = time_axis(lt["t_split"], lt["t_split"]).text(lt["t_split"])
    return (f'<p>t_split = {html.escape(split)} (test ratio {lt["test_ratio"]:g}); surprise: nodes '
            f'{lt["nodes"]["surprise"]:.1%}, pairs {lt["pairs"]["surprise"]:.1%}</p>' + "".join(images))


def _segment_section(results: dict[str, Result], tables: dict[str, dict[str, Tensor]], unused: dict[str, str],
                     comparison: Optional[dict], with_data: bool, settings: Sequence[str]) -> str:
    """The section of one segment's results measured under one set of settings: heading, protocol lines, Models
    table (with why a result's per-event file was not used) and plots."""
    first = next(iter(results.values()))
    parts = ["<section>", _segment_heading(first, with_data, settings),
             f"<p>{html.escape(protocol_lines(list(results.items()))).replace(chr(10), '<br>')}</p>",
             "<h3>Models</h3>", _main_table(results, tables)]
    parts += [f'<p class="note">{html.escape(name)}: its per-event file was not used (no interval, not in the '
              f'K-sweep nor the time profile): {html.escape(unused[name])}</p>' for name in results if name in unused]
    with_events = {name: tables[name] for name in results if name in tables and "above" in tables[name]}
    if with_events:
        if comparison is None or set(comparison["models"]) != set(with_events):
            comparison = compare(with_events, block=fitting_block(first.manifest["segment"]["num_events"]))
        parts += ["<h3>K-sweep</h3>", _k_sweep(comparison, first), "<h3>Time profile</h3>",
                  _time_profile(with_events, first)]
    else:
        parts.append('<p class="note">The K-sweep and the time profile need per-event files with all-entity ranks '
                     '(`--save-events` with the all-entity pass); none of these results has one.</p>')
    parts += ["<h3>Strata</h3>", _strata(results), "</section>"]
    return "\n".join(parts)


def build_report(folder: PathLike, comparison: Optional[dict] = None, *, allow_trained_events: bool = False) -> str:
    """The HTML page of the results in ``folder`` (see the module docstring).

    ``comparison``: :func:`~tgeval.diagnostics.comparison.compare` of the per-event files of one section's
    results, when the caller has computed it; used for the section whose results with all-entity ranks are
    exactly its models (every other section's is computed here). A result whose numbers may measure its
    checkpoint's training events (:func:`~tgeval.eval.result.trained_events`) is listed as not reported, unless
    ``allow_trained_events``: then it is reported and the page says so."""
    return _page(Path(folder), comparison, allow_trained_events)[0]


def _page(folder: Path, comparison: Optional[dict], allow_trained_events: bool) -> tuple[str, dict[str, str]]:
    """:func:`build_report`'s page, and why the per-event file of a result was not used, by result."""
    results, tables, unused, skipped, trained = _load(folder, allow_trained_events)
    if not results:
        why = "".join(f" {name}: {reason}" for name, reason in skipped)
        raise InputPathError(f"{folder}: no result JSON (from `tgeval evaluate --out` or `tgeval run`) to report."
                             + (f" Files that are no result:{why}" if why else ""))
    title = _title(results, folder)
    sections = _sections(results)
    segments = len(_by_segment(results))
    several_data = len({r.manifest["data"]["fingerprint"] for r in results.values()}) > 1
    layout = ("one section each" if len(sections) == segments else
              f"{len(sections)} sections, one per segment and settings: results measured under other settings are "
              f"never ranked together")
    parts = [f"<h1>{html.escape(title)}</h1>",
             f'<p class="note">tgeval report of the results folder {html.escape(folder.resolve().name)}: '
             f'{len(results)} results on {segments} segment(s), {layout}.</p>']
    parts += [f'<p class="note">{html.escape(name)} may measure events its model was trained on: '
              f'{html.escape(why)}.</p>' for name, why in trained.items()]
    parts += [_segment_section({name: results[name] for name in names}, tables, unused, comparison, several_data,
                               settings) for names, settings in sections]
    audits = _audits(folder)
    if audits:
        parts.append(_audit_section(audits))
    if (folder / "diagnose.json").is_file():
        parts += ["<h2>Birth–Death</h2>", _birth_death(folder)]
    parts.append("<h2>Manifests</h2>")
    for name, result in results.items():
        text = json.dumps(result.manifest, indent=2, default=str)
        parts.append(f"<details><summary>{html.escape(name)}</summary><pre>{html.escape(text)}</pre></details>")
    if skipped:
        parts.append("<h2>Files not reported</h2><ul>" + "".join(
            f"<li>{html.escape(name)}: {html.escape(why)}</li>" for name, why in skipped) + "</ul>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}: tgeval report</title>"
            f"<style>{_STYLE}</style></head><body>" + "\n".join(parts) + "</body></html>\n"), unused


def write_report(folder: PathLike, out: PathLike, comparison: Optional[dict] = None, *,
                 allow_trained_events: bool = False) -> dict[str, str]:
    """Write :func:`build_report` of ``folder`` to ``out`` atomically; returns why the per-event file of a result
    was not used, by result (each also said on the page)."""
    page, unused = _page(Path(folder), comparison, allow_trained_events)
    write_atomic(out, page)
    return unused


def report_command(args: argparse.Namespace) -> int:
    """``tgeval report RESULTS_DIR --out report.html``; a result whose per-event file cannot be used is reported
    from its JSON alone, and said on stderr."""
    from tgeval.core.atomic import check_writable

    check_writable(args.out, what="--out")
    unused = write_report(args.results, args.out, allow_trained_events=args.allow_trained_events)
    for name, why in unused.items():
        print(f"tgeval: warning: result {name!r} is reported without its per-event file: {why}", file=sys.stderr)
    print(f"wrote {args.out}")
    return 0
