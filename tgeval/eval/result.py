"""Results: metric tables, strata, a reproducibility manifest and per-event records (docs/protocol.md §7, §11).

A :class:`Result` is computed from per-event records (so every number can be recomputed
from them) and saved atomically as JSON; per-event records can be saved as CSV.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch
from torch import Tensor

from tgeval.core.atomic import check_input_file, json_safe, sha256_of, write_atomic, write_atomic_group
from tgeval.errors import EventsFileError, ResultFileError
from tgeval.core.progress import Timeline
from tgeval.eval.protocol import metric_name
from tgeval.eval.metrics import (
    TiePolicy,
    check_ties,
    hits_at_k,
    macro_mean,
    micro_mean,
    rank_from_counts,
    sampled_auroc_ap,
)

__all__ = ["Result", "STRATA", "summarize", "json_safe", "trained_events"]

#: Stratum codes of per-event records (docs/protocol.md §3), relative to the events before the segment:
#: ``repeated`` — the pair occurred before; ``new_pair`` — both nodes occurred before but not
#: the pair; ``new_node`` — the source or the destination never occurred before.
STRATA = ("repeated", "new_pair", "new_node")


def trained_events(manifest: Mapping[str, Any]) -> Optional[str]:
    """Why a result's numbers may measure events its model was trained on, from its manifest, or ``None``: its
    checkpoint's training range overlaps the evaluated segment, or the checkpoint does not record it (both
    allowed explicitly at evaluation, ``allow_trained_events``), or the result names a checkpoint without the
    overlap (written before tgeval recorded it). What ``tgeval compare`` and ``tgeval report`` refuse unless
    told (``--allow-trained-events``)."""
    checkpoint = manifest.get("checkpoint")
    if not checkpoint:
        return None
    overlap = checkpoint.get("overlap")
    if overlap is None:
        return "its checkpoint's training events were not checked (the result predates that check)"
    if overlap["num_events"] is None:
        return "its checkpoint does not record the events it was trained on (allowed at evaluation)"
    if overlap["num_events"]:
        return (f"{overlap['num_events']} of its events lie in its checkpoint's training range (allowed at "
                f"evaluation)")
    return None


def _ranking_table(above: Tensor, equal: Tensor, src: Tensor, ties: TiePolicy, hits: Sequence[int]) -> dict:
    """MRR and Hits@k, micro (mean over events) and macro (mean over sources)."""
    if above.numel() == 0:
        return {"num_events": 0}
    rank = rank_from_counts(above, equal, ties=ties)
    rr = 1.0 / rank
    table: dict[str, Any] = {
        "num_events": above.numel(),
        "mrr": {"micro": float(micro_mean(rr)), "macro": float(macro_mean(rr, src))},
        "mean_rank": float(rank.mean()),
        "events_with_ties": int((equal > 0).sum()),
    }
    for k in hits:
        h = hits_at_k(rank, k)
        table[f"hits@{k}"] = {"micro": float(micro_mean(h)), "macro": float(macro_mean(h, src))}
    return table


def summarize(records: dict[str, Tensor], *, ties: str, hits: Sequence[int] = (1, 3, 10),
              uncovered: str = "rank") -> dict:
    """Metric tables of a replay from its per-event records (all on one device).

    Returns a dict with ``"sampled"`` (rank metrics against the sampled negatives plus
    global and per-batch-mean AUROC / AP, and ``"negatives"``: ``total`` scored slots and
    ``masked`` ones, never scored; events whose negatives are all masked are left out of every
    sampled metric, counted as ``events_without_negatives``; a sampler's ``describe()`` splits
    its masked slots by cause, e.g. a TGB file's ``num_padded_slots`` and ``num_masked_collisions``),
    ``"all_entity"`` (rank metrics against the catalog, coverage and filtering counts) and
    ``"strata"`` (the same per stratum, each with its count). Missing parts (no sampler, no all-entity
    pass) are omitted.
    """
    ties = check_ties(ties)
    out: dict[str, Any] = {}
    src, stratum = records["src"], records["stratum"]
    # events whose negatives are all masked have nothing to be ranked against: left out, never ranked first
    scored = records["neg_mask"].any(1) if "neg_mask" in records else torch.ones_like(src, dtype=torch.bool)
    if "neg_score" in records:
        everything = "neg_mask" not in records or bool(scored.all())  # no copy of the [E, K] scores then
        pos, neg = (records["score"], records["neg_score"]) if everything else \
            (records["score"][scored], records["neg_score"][scored])
        table = _ranking_table(records["sampled_above"][scored], records["sampled_equal"][scored], src[scored], ties,
                               hits)
        if "neg_mask" in records:
            table["events_without_negatives"] = int((~scored).sum())
        if neg.size(1) > 0:
            valid = None if "neg_mask" not in records else records["neg_mask"] if everything \
                else records["neg_mask"][scored]
            separation = sampled_auroc_ap(pos, neg, mask=valid, groups=records["batch"][scored])
            table["auroc"] = {"global": float(separation.auroc),
                              "per_batch_mean": float(torch.nanmean(separation.grouped_auroc))}
            table["ap"] = {"global": float(separation.average_precision),
                           "per_batch_mean": float(torch.nanmean(separation.grouped_average_precision))}
            table["negatives"] = {"total": neg.numel() if valid is None else int(torch.count_nonzero(valid)),
                                  "masked": records["neg_mask"].numel() - int(torch.count_nonzero(records["neg_mask"]))
                                  if "neg_mask" in records else 0}
        out["sampled"] = table
    if "above" in records:
        keep = torch.ones_like(records["covered"]) if uncovered == "rank" else records["covered"]
        table = _ranking_table(records["above"][keep], records["equal"][keep], src[keep], ties, hits)
        table["coverage"] = {"covered": int(records["covered"].sum()),
                             "uncovered": int((~records["covered"]).sum()),
                             "uncovered_rule": uncovered}
        table["filtered_simultaneous_positives"] = int(records["filtered"].sum())
        table["mean_candidates"] = float(records["candidates"].double().mean())
        out["all_entity"] = table
    strata: dict[str, Any] = {}
    for code, name in enumerate(STRATA):
        mask = stratum == code
        entry: dict[str, Any] = {"count": int(mask.sum())}
        if "sampled_above" in records:
            m = mask & scored
            entry["sampled"] = _ranking_table(records["sampled_above"][m], records["sampled_equal"][m], src[m], ties,
                                              hits)
        if "above" in records:
            m = mask if uncovered == "rank" else mask & records["covered"]
            entry["all_entity"] = _ranking_table(records["above"][m], records["equal"][m], src[m], ties, hits)
        strata[name] = entry
    out["strata"] = strata
    return out


#: rows of the per-event CSV formatted at once
CSV_ROWS = 2**16

# Per-event CSV columns: (header, record key); ``rank`` is derived with the result's ties.
_EVENT_COLUMNS = (
    ("event", "event"), ("batch", "batch"), ("src", "src"), ("dst", "dst"), ("t", "t"),
    ("score", "score"), ("stratum", "stratum"),
    ("rank", None), ("above", "above"), ("equal", "equal"), ("candidates", "candidates"),
    ("filtered", "filtered"), ("covered", "covered"),
    ("sampled_rank", None), ("sampled_above", "sampled_above"), ("sampled_equal", "sampled_equal"),
)


class Nullable:
    """A schema entry (:func:`schema_mismatch`) that is ``null`` or matches ``schema``."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema


#: a JSON number (an int or a float, never true / false)
NUMBER = (int, float)
_AVERAGES = {"?micro": Nullable(NUMBER), "?macro": Nullable(NUMBER)}
_TABLE = {"?mrr": _AVERAGES, "?hits@10": _AVERAGES, "?ap": {"?global": Nullable(NUMBER)},
          "?events_without_negatives": int, "?coverage": {"?uncovered": int}}
_SAMPLER: dict = {"name": str, "?stored_num_negatives": Nullable(int), "?num_short_events": int,
                  "?num_filled_slots": int, "?num_fallback_events": int,
                  "?effective_num_negatives": Nullable({"min": int, "median": NUMBER, "max": int, "?mean": NUMBER,
                                                                "?num_rows": int, "?num_short_rows": int})}
_SAMPLER["?components"] = [_SAMPLER]
#: what tgeval reads of a result JSON (:meth:`Result.load`): the report, the printed table and ``compare``
RESULT_SCHEMA = {
    "manifest": {
        "segment": {"name": str, "start": int, "end": int, "num_events": int, "t_first": NUMBER, "t_last": NUMBER},
        "data": {"fingerprint": str, "?name": Nullable(str)},
        "protocol": {"replay": str, "ties": str, "uncovered": str, "num_negatives": int, "?prefilter": Nullable(int)},
        "sampler": Nullable(_SAMPLER), "catalog": Nullable({"kind": str, "size": int}),
        "?history": Nullable({"mode": str, "stale_events": int, "same_batch_fraction": NUMBER}),
        "?preset": Nullable({"name": str, "overridden": dict, "?reasons": dict}), "?model": dict,
        "?events_file": Nullable(str), "?events_sha256": Nullable(str)},
    "metrics": {"?sampled": _TABLE, "?all_entity": _TABLE,
                "strata": {stratum: {"count": int, "?sampled": _TABLE, "?all_entity": _TABLE} for stratum in STRATA}},
    "?performance": dict,
}
#: the deepest nesting of a result file read (a result's is below 10): deeper is refused before it is walked
MAX_JSON_DEPTH = 64
_KINDS = {int: "a whole number", float: "a number", str: "text", bool: "true / false", type(None): "null",
          list: "a list", dict: "an object"}


def schema_mismatch(value: Any, schema: Any, where: str) -> Optional[str]:
    """Where parsed JSON ``value`` (named ``where``) first departs from ``schema``, in words; ``None`` if nowhere.

    ``schema``: a type or a tuple of types (``int`` is never a bool), a dict (an object checked entry by entry; an
    entry whose key starts with ``?`` may be absent, others must be there; more entries are allowed), a
    one-item list (a list whose items all match it) or a :class:`Nullable`."""
    if isinstance(schema, Nullable):
        return None if value is None else schema_mismatch(value, schema.schema, where)
    if isinstance(schema, dict):
        if type(value) is not dict:
            return f"{where} is {_KINDS.get(type(value), type(value).__name__)}, expected an object"
        for key, entry in schema.items():
            name = key.lstrip("?")
            if name not in value:
                if key.startswith("?"):
                    continue
                return f"{where}.{name} is missing"
            found = schema_mismatch(value[name], entry, f"{where}.{name}")
            if found:
                return found
        return None
    if isinstance(schema, list):
        if type(value) is not list:
            return f"{where} is {_KINDS.get(type(value), type(value).__name__)}, expected a list"
        return next(filter(None, (schema_mismatch(item, schema[0], f"{where}[{i}]") for i, item in enumerate(value))),
                    None)
    types = schema if isinstance(schema, tuple) else (schema,)
    if type(value) in types:
        return None
    shown = json.dumps(value)[:40] if type(value) in (str, int, float, bool) else ""
    return (f"{where} is {_KINDS.get(type(value), type(value).__name__)}{f' ({shown})' if shown else ''}, expected "
            f"{'a number' if types == NUMBER else ' or '.join(_KINDS.get(kind, kind.__name__) for kind in types)}")


def load_json(path: str | os.PathLike, schema: Any, what: str, fix: str) -> Any:
    """The JSON file ``path`` (a ``what``, e.g. ``"result"``), checked against ``schema`` (:func:`schema_mismatch`)
    after its nesting (at most :data:`MAX_JSON_DEPTH`).

    Raises:
        InputPathError: no such file, a folder, or no regular file.
        ResultFileError: not UTF-8 JSON, nested too deep, or an entry missing or of another type (named), with
            ``fix``.
    """
    check_input_file(path, what=f"{what} file")
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except RecursionError:
        raise ResultFileError(f"{path}: not a {what} JSON: nested deeper than any {what} (more than "
                              f"{MAX_JSON_DEPTH} levels). {fix}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ResultFileError(f"{path}: not a {what} JSON ({error}). {fix}") from None
    stack, deepest = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            raise ResultFileError(f"{path}: not a {what} JSON: nested deeper than any {what} (more than "
                                  f"{MAX_JSON_DEPTH} levels). {fix}")
        if type(item) in (dict, list):
            stack.extend((child, depth + 1) for child in (item.values() if type(item) is dict else item))
    found = schema_mismatch(value, schema, what)
    if found:
        raise ResultFileError(f"{path}: not a {what} JSON: {found}. {fix}")
    return value


@dataclass
class Result:
    """The outcome of one evaluation.

    Attributes:
        metrics: output of :func:`summarize` (``sampled``, ``all_entity``, ``strata``).
        manifest: everything needed to reproduce the numbers (docs/protocol.md §11).
        performance: throughput, latency and memory of the replay; ``wall_seconds`` of the whole
            :func:`~tgeval.eval.engine.evaluate` call and its ``phases`` (seconds of ``prepare``,
            ``warm_up``, ``replay``, ``metrics``, ``manifest`` and ``other``, summing to ``wall_seconds``);
            the command line adds ``command``, the same for the whole command (``read``, ..., ``write``).
        records: per-event tensors on CPU (see :data:`_EVENT_COLUMNS`); not written to
            JSON, see :meth:`save_events`.
    """

    metrics: dict
    manifest: dict
    performance: dict = field(default_factory=dict)
    records: Optional[dict[str, Tensor]] = None

    def metric_name(self, part: str, metric: str) -> str:
        """``metrics[part][metric]``'s name with the protocol it was measured under, from the manifest
        (:func:`~tgeval.eval.protocol.metric_name`): e.g. ``result.metric_name("sampled", "mrr")`` is
        ``"MRR (K=20, uniform)"``, ``result.metric_name("all_entity", "mrr")`` is
        ``"all-entity MRR (catalog train, 1,459 items)"``."""
        m = self.manifest
        return metric_name(part, metric, num_negatives=m["protocol"]["num_negatives"], sampler=m["sampler"],
                           catalog=m["catalog"])

    def __str__(self) -> str:
        """What ``tgeval evaluate`` prints: the protocol line, the metrics' names and the table
        (:func:`tgeval.eval.display.summary`)."""
        from tgeval.eval.display import summary  # the display module reads Result: imported when printing

        return summary(self)

    def to_dict(self) -> dict:
        """JSON-safe ``manifest``, ``metrics`` and ``performance``; a :class:`~tgeval.core.progress.Timeline` in
        ``performance`` (the command line's) is written as its :meth:`~tgeval.core.progress.Timeline.snapshot` now."""
        performance = {key: value.snapshot() if isinstance(value, Timeline) else value
                       for key, value in self.performance.items()}
        return json_safe({"manifest": self.manifest, "metrics": self.metrics, "performance": performance})

    def save(self, path: str | os.PathLike, events: str | os.PathLike | None = None) -> None:
        """Write the result as JSON, atomically; with ``events``, also its per-event CSV
        (:meth:`save_events`), as one pair.

        The manifest then names the events file (``events_file``, relative to the JSON's folder)
        and its sha256 (``events_sha256``), and both files are written together
        (:func:`~tgeval.core.atomic.write_atomic_group`): a reader finds the old pair or the new one,
        and :func:`~tgeval.diagnostics.comparison.load_events` refuses a pair whose checksum
        does not match.
        """
        files: list[tuple[str | os.PathLike, str | bytes]] = []
        if events is not None:
            table = self._events_csv()
            self.manifest["events_file"] = os.path.relpath(events, Path(path).parent)
            self.manifest["events_sha256"] = sha256_of(table)
            files.append((events, table))
        write_atomic_group(files + [(path, json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n")])

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Result":
        """A result saved by :meth:`save`, its entries checked by type (:data:`RESULT_SCHEMA`) before any is read.

        Raises:
            InputPathError: no such file, a folder, or no regular file.
            ResultFileError: not JSON, nested too deep, or an entry tgeval reads missing or of another type.
        """
        payload = load_json(path, RESULT_SCHEMA, "result", "Give a result JSON written by `tgeval evaluate --out` "
                                                           "(or Result.save), as it was written.")
        return cls(payload["metrics"], payload["manifest"], payload.get("performance", {}))

    def event_table(self) -> dict[str, Tensor]:
        """Per-event columns of :meth:`save_events` as CPU tensors."""
        if self.records is None:
            raise EventsFileError("this Result holds no per-event records (loaded from JSON?).")
        ties = check_ties(self.manifest["protocol"]["ties"])
        rec = self.records
        table: dict[str, Tensor] = {}
        for header, key in _EVENT_COLUMNS:
            if header == "rank" and "above" in rec:
                table[header] = rank_from_counts(rec["above"], rec["equal"], ties=ties)
            elif header == "sampled_rank" and "sampled_above" in rec:
                rank = rank_from_counts(rec["sampled_above"], rec["sampled_equal"], ties=ties)
                # an event whose negatives are all masked has no sampled rank (left out of sampled metrics)
                scored = rec["has_negatives"] if "has_negatives" in rec else \
                    rec["neg_mask"].any(1) if "neg_mask" in rec else None
                table[header] = rank if scored is None else rank.masked_fill(~scored, float("nan"))
            elif key is not None and key in rec:
                table[header] = rec[key]
        return table

    def save_events(self, path: str | os.PathLike) -> None:
        """Write one CSV row per evaluated event, atomically. ``stratum`` is a name from
        :data:`STRATA`; ``rank`` uses the result's tie convention; ``sampled_rank`` is NaN for an
        event whose negatives are all masked."""
        write_atomic(path, self._events_csv())

    def _events_csv(self) -> bytearray:
        """The per-event CSV, UTF-8, formatted in chunks of :data:`CSV_ROWS` rows (never a Python list
        of every value of a column, nor a second copy of the text)."""
        table = self.event_table()
        out, buffer = bytearray(), io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(list(table))
        num_rows = next(iter(table.values())).numel() if table else 0
        for a in range(0, num_rows, CSV_ROWS):
            columns = {name: value[a:a + CSV_ROWS].tolist() for name, value in table.items()}
            columns["stratum"] = [STRATA[code] for code in columns["stratum"]]
            writer.writerows(zip(*columns.values()))
            out += buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
        out += buffer.getvalue().encode("utf-8")  # the header, when there is no row
        return out
