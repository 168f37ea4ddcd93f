"""How a result reads as text: the protocol line, the names of the measured metrics and the table that
``tgeval evaluate``, ``train`` and ``run`` print, and ``print(result)`` (:meth:`~tgeval.eval.result.Result.__str__`)."""

from __future__ import annotations

from typing import Optional, Sequence

from tgeval.eval.result import STRATA, Result

__all__ = ["summary", "protocol_line", "protocol_lines", "metric_names", "format_table", "format_number",
           "strata_basis"]


def summary(result: Result, label: Optional[str] = None) -> str:
    """What the command line prints for one result: its :func:`protocol_line`, :func:`metric_names` and
    :func:`format_table` row, labelled ``label`` (default: the model's name from the manifest)."""
    name = label if label is not None else str(result.manifest.get("model", {}).get("name", "model"))
    return "\n".join([protocol_line(result), metric_names(result), format_table([(name, result)])])


def format_number(value: Optional[float], digits: int = 4) -> str:
    """A metric for a table: ``-`` when undefined (``None`` or NaN)."""
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def protocol_line(result: Result) -> str:
    """The protocol behind a result's numbers, in one line (segment, replay, sampler, K, catalog, ties)."""
    m, p = result.manifest, result.manifest["protocol"]
    sampler = "none" if m["sampler"] is None else m["sampler"]["name"]
    catalog = ("none (no all-entity pass)" if m["catalog"] is None
               else f"{m['catalog']['kind']} ({m['catalog']['size']})")
    if m["catalog"] is not None and p.get("prefilter") is not None:
        catalog += f", APPROXIMATE: top-{p['prefilter']} pre-filter per step (ranks optimistic)"
    history = m.get("history")
    preset = m.get("preset")
    why = (preset or {}).get("reasons", {}).get("history")
    replay = f"{p['replay']} replay" + ("" if history is None else f", history {history['mode']}") + (
        f" ({why})" if why and history is not None else "")
    if preset is not None:  # named first: the settings below are the preset's unless listed as overridden
        overridden = ", ".join(f"{k}={v}" for k, v in preset["overridden"].items())
        replay = f"preset {preset['name']}" + (f" (overridden: {overridden})" if overridden else "") + f"; {replay}"
    clock = (m.get("model") or {}).get("clock")
    if isinstance(clock, dict):  # named with the replay: it decides which earlier events a score counts
        starts = ", ".join(f"{origin:,}" for origin in clock["origins"])
        replay += (f"; event clock: one tick per {clock['tick']} events from events {starts} (earlier events one "
                   f"tick; a score counts the ticks before its own)")
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
    effective = (m["sampler"] or {}).get("effective_num_negatives")
    if effective is not None and effective["min"] < p["num_negatives"]:
        without = result.metrics.get("sampled", {}).get("events_without_negatives", 0)
        rows = (f"; {effective['num_short_rows']} of {effective['num_rows']} rows below K, each event ranked against "
                f"its own row" if "num_short_rows" in effective else "")
        mean = f" / mean {effective['mean']:.10g}" if "mean" in effective else ""
        line += (f"\nnegatives: effective K per row: min {effective['min']} / median {effective['median']:g}{mean} / "
                 f"max {effective['max']}{rows} (masked slots are not scored)"
                 + (f"; {without} events without negatives, excluded from sampled metrics" if without else ""))
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
    width = max([22] + [len(name) for name, _ in rows])  # the model column fits the longest name
    head = (f"{'model':<{width}} {'sampled MRR':>11} {'all-ent MRR':>11} {'macro MRR':>10} {'Hits@10':>8} "
            + " ".join(f"{name:>17}" for name in STRATA) + f" {'events/s':>10}")
    lines = [head, "-" * len(head)]
    for name, result in rows:
        m = result.metrics
        sampled = m.get("sampled", {}).get("mrr", {}).get("micro")
        full = m.get("all_entity", {})
        strata = []
        basis = strata_basis(result)
        for stratum in STRATA:
            entry = m["strata"][stratum]
            mrr = entry.get(basis, {}).get("mrr", {}).get("micro")
            strata.append(f"{format_number(mrr)} (n={entry['count']})".rjust(17))
        micro = format_number(full.get('mrr', {}).get('micro'))
        lines.append(f"{name:<{width}} {format_number(sampled):>11} {micro:>11} "
                     f"{format_number(full.get('mrr', {}).get('macro')):>10} "
                     f"{format_number(full.get('hits@10', {}).get('micro')):>8} "
                     + " ".join(strata) + f" {result.performance['events_per_second']:>10.0f}")
    bases = sorted({strata_basis(r).replace("_", "-") for _, r in rows})
    lines.append(f"strata columns: {' or '.join(bases)} MRR (micro; each row's all-entity MRR where it was measured) "
                 f"and event count per stratum")
    return "\n".join(lines)


def strata_basis(result: Result) -> str:
    """The metrics the strata of ``result`` are shown in: all-entity when measured, else sampled."""
    return "all_entity" if "all_entity" in result.metrics else "sampled"


def metric_names(result: Result) -> str:
    """The printed table's MRR columns, each named with its protocol (:meth:`Result.metric_name`)."""
    return "metrics: " + "; ".join(f"{column} = {result.metric_name(part, 'mrr')}" for column, part in (
        ("sampled MRR", "sampled"), ("all-ent MRR", "all_entity")) if part in result.metrics)
