"""Command line: ``tgeval evaluate``, ``train``, ``run``, ``diagnose``, ``compare``, ``static``, ``shift``, ``report``.

This module holds the argument parsers and :func:`main`, and imports neither torch nor PyG:
``tgeval --help`` and usage errors answer at once. Each command's module (``tgeval.cli.commands``,
``tgeval.cli.diagnose``, ``tgeval.diagnostics.comparison``, ``tgeval.cli.static``, ``tgeval.diagnostics.report``) is
imported only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import shlex
import signal
import sys
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Literal, NamedTuple, Optional, Sequence, Union, get_args, get_origin

from tgeval.core.atomic import check_distinct, check_input_file, writing_outputs
from tgeval.core.choices import (AUDIT_CHECKS, CATALOG_KINDS, DEFAULT_BLOCK, DEFAULT_SWEEP, DUPLICATE_RULES, GNN_MODELS,
                            HEART_HEURISTICS, HISTORY_MODES, REPLAY_MODES, SHIFT_HEURISTICS, STATIC_HEURISTICS,
                            TIE_POLICIES, UNCOVERED_RULES, VAL_METRICS, VAL_STATES, WEIGHTINGS, flag)
from tgeval.data import formats
from tgeval.errors import DeviceError, InputPathError, ProtocolError, TGEvalError
from tgeval.models import registry
from tgeval.eval.presets import PRESETS, apply_preset, given_options
from tgeval.eval.protocol import DEFAULT_NEGATIVES, DEFAULT_VAL_NEGATIVES

__all__ = ["main", "build_parser", "hyperparameter_flags", "cli_message", "refuse_unused"]


def _ratios(text: str) -> tuple[float, float, float]:
    parts = [float(x) for x in text.split(",")]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"--split needs three comma-separated fractions, got {text!r}")
    return parts[0], parts[1], parts[2]


#: the largest size a flag takes (K, a batch size, k of Hits@k, epochs, budgets, threads): beyond it
#: tensors overflow int32 indexing or any machine's memory, and numbers overflow C integers
MAX_COUNT = 2**31 - 1
#: a seed seeds torch, Python's ``random`` and NumPy's generator, whose seeds lie in [0, 2^32)
MAX_SEED = 2**32 - 1


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _count(text: str) -> int:
    """A size (K, a batch size, epochs, ...): an integer of magnitude at most :data:`MAX_COUNT` (the
    command checks the lower bound that applies and names the fix)."""
    value = _integer(text)
    if abs(value) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT:,} (2^31 - 1), got {text}")
    return value


def _seed(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed lies in [0, {MAX_SEED:,}] (it seeds torch, Python's random and "
                                         f"NumPy), got {text}")
    return value


def _positive_finite(what: str) -> Callable[[str], float]:
    """The type of a flag that takes a positive finite number (``what`` names it in the error)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"{what} is a positive finite number, got {text!r}")
        return value
    return parse


_learning_rate = _positive_finite("a learning rate")
_half_life = _positive_finite("a half-life")


def _clock(text: str) -> Union[str, int]:
    """``--clock``: ``time``, or ``events:TICK`` (the number of events per tick, returned as an int)."""
    kind, _, tick = text.partition(":")
    if kind == "time" and not tick:
        return "time"
    if kind == "events" and tick.isdigit() and int(tick) >= 1:
        return int(tick)
    raise argparse.ArgumentTypeError(f"a clock is 'time' or 'events:TICK' with TICK >= 1 events per tick (e.g. "
                                     f"events:200, PopTrack's), got {text!r}")


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(not 1 <= k <= MAX_COUNT for k in values):
        raise argparse.ArgumentTypeError(f"every k must lie in [1, {MAX_COUNT:,}], got {text!r}")
    return values


def _positive_int(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected one integer >= 1, got {text!r}")
    return value


def _parse_ks(text: str) -> list[Optional[int]]:
    out: list[Optional[int]] = []
    for part in text.split(","):
        part = part.strip()
        if part in ("full", "none", "None", "all"):
            out.append(None)
            continue
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--ks must be comma-separated ints or 'full', got {part!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"--ks values must be >= 0, got {value}")
        out.append(value)
    return out


def _add_compare_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``tgeval compare`` (:func:`tgeval.diagnostics.comparison.compare_command`)."""
    cp = subparsers.add_parser("compare", help="K-sweep, Kendall tau and paired intervals of results on one segment")
    cp.add_argument("events", type=Path, nargs="+", help="per-event CSV files from Result.save_events")
    cp.add_argument("--names", default=None, help="comma-separated model names (default: file stems)")
    cp.add_argument("--ks", type=_parse_ks, default=list(DEFAULT_SWEEP),
                    help="sample sizes, e.g. 1,5,20,50,100,full (default)")
    cp.add_argument("--ties", choices=TIE_POLICIES, default="average", help="tie convention (default average)")
    cp.add_argument("--block", type=_count, default=DEFAULT_BLOCK,
                    help=f"events per bootstrap block (default {DEFAULT_BLOCK})")
    cp.add_argument("--resamples", type=_count, default=2000, help="bootstrap resamples (default 2000)")
    cp.add_argument("--seed", type=_seed, default=0, help="bootstrap seed (default 0)")
    cp.add_argument("--out", type=Path, default=None, help="write the report as JSON (atomically)")
    cp.add_argument("--allow-trained-events", action="store_true",
                    help="compare results (JSON) of checkpoints evaluated on events they were trained on "
                         "(refused without it; the report lists them)")
    cp.set_defaults(handler=("tgeval.diagnostics.comparison", "compare_command"))
    return cp


def _add_event_file(parser: argparse.ArgumentParser, *, data_help: str = "event file",
                    bipartite_help: str = "sources and destinations in disjoint id ranges") -> None:
    """The event file and how to read it: ``data``, ``--format``, ``--remap``, ``--bipartite``, ``--sort``,
    ``--cache-dir``."""
    parser.add_argument("data", type=Path, help=data_help)
    parser.add_argument("--format", choices=formats.names(), required=True, help="file format: " + "; ".join(
        f"{name}: {formats.entry(name).help}" for name in formats.names()).replace("%", "%%"))
    parser.add_argument("--remap", action="store_true", help="renumber ids to 0..n-1")
    parser.add_argument("--bipartite", action="store_true", help=bipartite_help)
    parser.add_argument("--sort", action="store_true", help="stable-sort an unsorted file instead of failing")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="keep the validated arrays of the file in this folder, keyed by its sha256 and the "
                             "reading options, and reuse them (default: $TGEVAL_CACHE_DIR when set, else no cache)")


def read_event_file(args: argparse.Namespace, *, show_progress: bool = True, **extra: Any) -> tuple[Any, Any]:
    """:func:`~tgeval.data.read_events` of ``args.data`` with the options :func:`_add_event_file` declares
    (and ``extra``), its progress on stderr (:class:`~tgeval.core.progress.StderrProgress`)."""
    from tgeval.core import progress
    from tgeval.data.io import read_events

    with progress.reporting(progress.StderrProgress(f"reading {args.data.name}", enabled=show_progress)):
        return read_events(args.data, args.format, cache_dir=args.cache_dir, remap=args.remap or None,
                           bipartite=args.bipartite or None, sort=args.sort, **extra)


def _add_diagnose_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``tgeval diagnose`` (:func:`tgeval.cli.diagnose.diagnose_command`)."""
    dg = subparsers.add_parser("diagnose", help="lifetimes, surprise index, novelty and Birth-Death plots of a file")
    _add_event_file(dg, bipartite_help="sources and destinations in disjoint id ranges (default: detected as "
                                       "max(src) < min(dst))")
    dg.add_argument("--test-ratio", type=float, default=0.15,
                    help="t_split is the (1 - ratio) quantile of the event times (default 0.15)")
    group = dg.add_mutually_exclusive_group()
    group.add_argument("--directed", dest="directed", action="store_true", default=True,
                       help="pairs are ordered (default)")
    group.add_argument("--undirected", dest="directed", action="store_false", help="pairs are unordered")
    dg.add_argument("--out", type=Path, required=True, help="folder for diagnose.json and the plots")
    iv = dg.add_argument_group("the representation intervention (instead of the stream diagnostics)")
    iv.add_argument("--intervention", nargs=2, metavar=("membership", "CHECKPOINT"), default=None,
                    help="fit the pair-membership direction of a trained model (a checkpoint of `tgeval train`) on "
                         "the training segment, project it out, and compare full-catalog MRR and the membership "
                         "factorial with a random and a shuffled-label direction on the test segment "
                         "(writes intervention.json)")
    # defaults None: given without --intervention, they are refused (the command applies 0.70,0.15,0.15 / 20 / 0)
    iv.add_argument("--split", type=_ratios, default=None,
                    help="train,val,test fractions of the checkpoint's training run (default 0.70,0.15,0.15)")
    iv.add_argument("--negatives", type=_positive_int, default=None, metavar="K",
                    help="K seen and K unseen negatives per factorial cell (default 20)")
    iv.add_argument("--seed", type=_seed, default=None,
                    help="seed of the draws and of the control directions (default 0)")
    dg.set_defaults(handler=("tgeval.cli.diagnose", "diagnose_command"))
    return dg


def _add_audit_parser(subparsers: Any) -> argparse.ArgumentParser:
    """``tgeval audit`` (:func:`tgeval.cli.leaks.audit_command`)."""
    au = subparsers.add_parser("audit", help="a leak certificate for a model: does any score read the future, the "
                                             "other candidates, the order of simultaneous events, or hidden state?")
    _add_event_file(au)
    au.add_argument("--model", required=True,
                    help="a registered model's name (heuristics: with their default options; neural models: built "
                         "with their default configuration, or loaded from --checkpoint), or module:callable, a "
                         "function of the stream that returns the model (called on altered copies of it)")
    au.add_argument("--checkpoint", default=None, help="a checkpoint of `tgeval train` holding --model's weights")
    au.add_argument("--split", type=_ratios, default=(0.70, 0.15, 0.15),
                    help="train,val,test fractions; the test segment is audited (default 0.70,0.15,0.15)")
    au.add_argument("--batch-size", type=_positive_int, default=200, help="events per timestamp batch (default 200)")
    au.add_argument("--checks", type=_checks, default=None,
                    help="comma-separated checks (default all: " + ", ".join(AUDIT_CHECKS) + ")")
    au.add_argument("--seed", type=_seed, default=0, help="seed of the probes, the alterations and the builds")
    au.add_argument("--out", type=Path, default=None, help="write the audit as JSON (atomically)")
    au.set_defaults(handler=("tgeval.cli.leaks", "audit_command"))
    return au


def _checks(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in AUDIT_CHECKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--checks takes names among {', '.join(AUDIT_CHECKS)}, got {text!r}")
    return names


STATIC_METHODS = (*STATIC_HEURISTICS, *GNN_MODELS)


def _static_models(text: str) -> tuple[str, ...]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    chosen = tuple(m for m in STATIC_METHODS if m in names)
    if len(chosen) != len(set(names)) or not names:
        raise argparse.ArgumentTypeError(f"--models takes a comma-separated subset of {','.join(STATIC_METHODS)}, "
                                         f"got {text!r}")
    return chosen


def _static_end(text: str) -> str:
    """``--end``: ``all``, ``train`` or a finite number, kept as text (read exactly against the data by
    ``tgeval.cli.static``: an integer beyond 2^53 stays that integer)."""
    if text not in ("all", "train"):
        try:
            Fraction(text)  # finite numbers only: NaN and inf are no bound
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"--end takes 'all', 'train' or a finite time, got {text!r}") from None
    return text


def _window(text: str) -> str | int | float:
    """``--window``: ``val``, ``test-duration``, ``tgb`` or a positive duration, an exact int when written as one (a
    duration at or beyond 2^63, ``inf`` included, is unlimited: ``tgeval.models.heuristics.edgebank_window``)."""
    if text in ("val", "test-duration", "tgb"):
        return text
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
    if not value > 0:  # NaN included
        raise argparse.ArgumentTypeError(f"--window takes 'val', 'test-duration', 'tgb' or a positive duration (inf: "
                                         f"unlimited), got {text!r}")
    return value


def _add_static_common(parser: argparse.ArgumentParser, out_help: str) -> None:
    _add_event_file(parser, data_help="event file (projected onto an undirected static graph)")
    parser.add_argument("--unipartite", action="store_true",
                        help="one side: treat the graph as unipartite even when --bipartite or the format makes it "
                             "bipartite (negatives and heuristics over every pair of nodes)")
    parser.add_argument("--end", type=_static_end, default="all",
                        help="project the events with t < END: 'all' (default), 'train' (the training segment of "
                             "the 70/15/15 chronological split) or a time")
    parser.add_argument("--C", dest="c", type=_count, default=50, help="length of each node's recommendation list")
    parser.add_argument("--rbo-p", type=float, default=0.5, help="persistence p of rank-biased overlap")
    parser.add_argument("--models", type=_static_models, default=STATIC_HEURISTICS,
                        help=f"comma-separated, of {','.join(STATIC_METHODS)} (default: the heuristics; gcn and sage "
                             f"are GNN baselines trained on the training graph)")
    parser.add_argument("--gnn-negatives", choices=WEIGHTINGS, default="uniform",
                        help="training negatives of the GNN baselines")
    parser.add_argument("--seed", type=_seed, default=0, help="edge split, caps and negatives")
    parser.add_argument("--negatives", type=_heart_negatives, default=None,
                        metavar=f"heart:{'|'.join(HEART_HEURISTICS)}:M",
                        help="also rank each test edge against M HeaRT hard negatives (MRR, Hits@k)")
    parser.add_argument("--out", type=Path, required=True, help=out_help)


def _heart_negatives(text: str) -> tuple[str, int]:
    parts = text.split(":")
    if len(parts) != 3 or parts[0] != "heart" or parts[1] not in HEART_HEURISTICS or not parts[2].isdigit() \
            or int(parts[2]) < 1:
        raise argparse.ArgumentTypeError(f"--negatives takes heart:{'|'.join(HEART_HEURISTICS)}:M (e.g. heart:cn:250), "
                                         f"got {text!r}")
    return parts[1], int(parts[2])


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


def _add_static_parsers(subparsers: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """``tgeval static`` and ``tgeval shift`` (:mod:`tgeval.cli.static`)."""
    st = subparsers.add_parser("static", help="static link prediction: degree bias, degree-corrected benchmark, "
                                              "recommendation check")
    _add_static_common(st, "folder for static.json and degree_ccdf.png")
    st.add_argument("--test-fraction", type=float, default=0.25, help="beta: fraction of edges held out as test")
    st.set_defaults(handler=("tgeval.cli.static", "static_command"))
    sh = subparsers.add_parser("shift", help="structural-shift split of a static graph's links, and its benchmarks")
    _add_static_common(sh, "folder for shift.json and degree_ccdf.png")
    sh.add_argument("--heuristic", choices=SHIFT_HEURISTICS, required=True,
                    help="link score: common neighbours, 1/shortest path without the link, or k_u*k_v")
    sh.add_argument("--thresholds", type=_thresholds, required=True,
                    help="I_TRAIN,I_VALID: h <= I_TRAIN train, <= I_VALID valid, else test")
    sh.add_argument("--inverse", action="store_true", help="swap train and test")
    sh.add_argument("--caps", type=_caps, default=(None, None, None),
                    help="most links per split, TRAIN,VALID,TEST (e.g. none,none,5000)")
    sh.add_argument("--max-depth", type=_count, default=6, help="deepest breadth-first level for 'sp'")
    sh.set_defaults(handler=("tgeval.cli.static", "shift_command"))
    return st, sh


def hyperparameter_flags() -> dict[str, tuple[type, dict[str, Any]]]:
    """``{field: (type, {model: default})}``: the config fields of the registered neural models,
    each a ``tgeval train`` flag (``memory_dim`` -> ``--memory-dim``) for the models that have it."""
    flags: dict[str, tuple[type, dict[str, Any]]] = {}
    for name in registry.names("neural"):
        for key, (kind, default) in registry.entry(name).hyperparameters().items():
            flags.setdefault(key, (kind, {}))[1][name] = default
    return flags


#: what ``tgeval --help`` says of the tool (the module docstring is for developers)
DESCRIPTION = """\
Leak-free evaluation of link prediction on continuous-time dynamic graphs.

tgeval replays an event stream in timestamp batches, scores every event from
strictly earlier history, ranks the positive against sampled negatives and,
exactly, against every destination of a catalog, and writes results that name
their protocol (sampler, K, catalog, ties, replay, data fingerprint, seeds).

Start with `tgeval run`: the baselines on CollegeMsg, and a report.
`tgeval audit` certifies that a model reads no future event.
`tgeval COMMAND --help` lists a command's options."""

#: where ``tgeval --help`` sends the reader for more
EPILOG = """\
Documentation: README.md and docs/guide/ in the tgeval source (installation,
first run, evaluating, training, auditing, samplers, diagnostics,
torch.distributed)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tgeval", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    ev = sub.add_parser("evaluate", help="evaluate a heuristic or a trained checkpoint on an event file")
    _add_event_file(ev)
    ev.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="reader option, e.g. src_col=Source (generic csv) or time_format=%%Y-%%m-%%d; options: "
                         + "; ".join(f"{name}: {', '.join(formats.entry(name).options)}" for name in formats.names()
                                     if formats.entry(name).options))
    ev.add_argument("--model", required=True,
                    help=f"a heuristic ({', '.join(registry.names('heuristic'))}), a static GNN baseline "
                         f"({', '.join(GNN_MODELS)}: "
                         f"trained on the graph of the events before the segment; --protocol fixed) or the path of "
                         f"a checkpoint of `tgeval train`")
    ev.add_argument("--window", type=_window, default=None,
                    help="edgebank-window: a duration (at or beyond 2^63, e.g. inf: unlimited), 'val' (chosen on "
                         "validation, the default), 'test-duration' or 'tgb' (TGB's: 0.15 x the training span, ending "
                         "at the latest time observed); recency-* and popularity-local / -global: a duration or "
                         "'test-duration' (default: unlimited)")
    ev.add_argument("--half-life", dest="model_half_life", type=_half_life, default=None,  # not the sampler option
                    help="popularity, popularity-local / -global: decay each past event by 2^(-age / HALF_LIFE) "
                         "(default: plain counts)")
    ev.add_argument("--clock", type=_clock, default=None,
                    help="what ages events for --half-life: 'time' (the default) or 'events:TICK', one tick per TICK "
                         "events (the half-life is then in ticks): the training events are one tick, then each "
                         "evaluated segment (validation, test) is cut into ticks of TICK events from its start, as "
                         "TGB's batches; poptrack's default is events:200")
    ev.add_argument("--preset", choices=tuple(PRESETS), default=None,
                    help="a benchmark's whole protocol: 'tgb' = --protocol online --history batch (exact for the "
                         "recency and popularity heuristics, as their leaderboard figures) --batch-size 200 "
                         "--all-entity --catalog range --negatives 0 (unless --sampler is given, e.g. "
                         "tgb:path=FILE, read with short=allow: TGB's short rows) --ties average --window tgb, TGB's "
                         "split; flags given beside it win and are recorded as overridden")
    ev.add_argument("--protocol", choices=REPLAY_MODES, default="online",
                    help="online: the model observes each batch after scoring it; fixed: its state stays as at the "
                         "segment start")
    ev.add_argument("--history", choices=HISTORY_MODES, default=None,
                    help="online: 'exact' (each event sees every earlier timestamp, inside its batch too; the "
                         "default for the heuristics), 'batch' (the history at the batch start, as TGB and DyGLib; "
                         "memory models) or 'neighbors' (batch-start memory, neighbour lists with the batch's "
                         "earlier events: TGN with --time-gap query, as DyGLib's TGN)")
    ev.add_argument("--split", type=_ratios, default=(0.70, 0.15, 0.15), help="train,val,test fractions")
    ev.add_argument("--segment", choices=("val", "test"), default="test")
    ev.add_argument("--sampler", default="uniform",
                    help="NAME[:key=value,...], NAME a registered sampler (an unknown name lists them), e.g. "
                         "historical:replace=true, uniform:directed=false, mixture:historical=0.5,uniform=0.5")
    ev.add_argument("--negatives", type=_count, default=None,
                    help=f"K negatives per positive (default: every negative of a fixed-negatives file, fixed:/tgb:, "
                         f"else {DEFAULT_NEGATIVES}; fewer from a file is recorded as such; 0: no sampled metrics)")
    ev.add_argument("--all-entity", action=argparse.BooleanOptionalAction, default=True,
                    help="exact ranking against the whole catalog")
    ev.add_argument("--catalog", choices=CATALOG_KINDS, default="train")
    ev.add_argument("--prefilter", type=_count, default=None, metavar="L",
                    help="APPROXIMATE all-entity ranking: score only the L catalog items with the highest "
                         "candidate prior per step, counting the rest below the positive (ranks can only improve); "
                         "neural models; the result says so")
    ev.add_argument("--uncovered", choices=UNCOVERED_RULES, default="rank",
                    help="positives outside the catalog (always counted)")
    ev.add_argument("--ties", choices=TIE_POLICIES, default="average")
    ev.add_argument("--hits", type=_ints, default=(1, 3, 10), help="k of Hits@k, comma-separated")
    ev.add_argument("--undirected", dest="directed", action="store_false", help="pairs are unordered")
    ev.add_argument("--batch-size", type=_count, default=200)
    ev.add_argument("--candidate-budget", type=_count, default=2**22)
    ev.add_argument("--seed", type=_seed, default=0)
    ev.add_argument("--allow-trained-events", action="store_true",
                    help="evaluate a checkpoint on a segment that overlaps the events it was trained on, or whose "
                         "checkpoint does not record them (refused without it; recorded in the manifest)")
    ev.add_argument("--out", type=Path, help="result JSON")
    ev.add_argument("--save-events", type=Path, help="per-event CSV")
    ev.set_defaults(handler=("tgeval.cli.commands", "evaluate_command"))

    tr = sub.add_parser("train", help="fit a trainable model on the training segment, evaluate on validation")
    _add_event_file(tr)
    trainable = registry.names(trainable=True)
    tr.add_argument("--model", choices=trainable, default="membership",
                    help="; ".join(f"{name}: {registry.entry(name).help}" for name in trainable)
                         + " (neural models read the event features `msg` when the data has them, else one zero "
                           "column)")
    tr.add_argument("--sampler", default="uniform", help="training negatives, NAME[:key=value,...]")
    tr.add_argument("--negatives", "--num-negatives", type=_count, default=1, help="K training negatives per positive")
    tr.add_argument("--allow-whole-stream", action="store_true",
                    help="train with a sampler defined with the whole stream (inductive, Birth-Death) on purpose: its "
                         "negatives of a batch know later events (recorded in the training specification)")
    tr.add_argument("--loss", default="bce", help="bce, bpr or sampled_softmax")
    tr.add_argument("--epochs", type=_count, default=3)
    tr.add_argument("--patience", type=_count, help="stop after this many epochs without validation improvement "
                                                 "(default: train every epoch; the best epoch is kept either way)")
    tr.add_argument("--lr", type=_learning_rate, help="Adam learning rate (default 0.1 for membership, 1e-4 otherwise)")
    tr.add_argument("--split", type=_ratios, default=(0.70, 0.15, 0.15))
    tr.add_argument("--batch-size", type=_count, default=200)
    tr.add_argument("--seed", type=_seed, default=0, help="model initialisation, dropout and negatives")
    tr.add_argument("--val-metric", choices=tuple(VAL_METRICS), default="ap",
                    help="validation metric of early stopping and of the best epoch")
    tr.add_argument("--val-negatives", type=_count, default=DEFAULT_VAL_NEGATIVES,
                    help=f"K uniform negatives (training catalog) per positive in validation, per epoch and in the "
                         f"final result (default {DEFAULT_VAL_NEGATIVES}, as fit's)")
    tr.add_argument("--history", choices=HISTORY_MODES, default=None,
                    help="what a training event is scored from: 'batch' (the state at the batch start, the default), "
                         "'exact' (also the batch's earlier events: GraphMixer with --time-gap query) or 'neighbors' "
                         "(those events as neighbours, the memory as of the batch start: TGN with --time-gap query); "
                         "validation uses 'neighbors' too when training did")
    tr.add_argument("--val-state", choices=VAL_STATES, default=None,
                    help="the state each epoch's validation scores from: 'rebuilt' from the history with the epoch's "
                         "weights (the default, tgeval's protocol) or 'training', the state training left (DyGLib's, "
                         "PyG's)")
    for key, (kind, defaults) in hyperparameter_flags().items():
        by_default: dict[Any, list[str]] = {}
        for name, default in defaults.items():
            by_default.setdefault(default, []).append(name)
        choices = dict(choices=get_args(kind)) if get_origin(kind) is Literal else dict(type=kind)
        tr.add_argument(flag(key), **choices, help="model config field, default " + "; ".join(
            f"{default} ({', '.join(names)})" for default, names in by_default.items()))
    tr.add_argument("--checkpoint-dir", type=Path, help="write last.pt every epoch and best.pt on improvement")
    tr.add_argument("--resume", type=Path, help="continue the run of this last.pt (same options)")
    tr.add_argument("--overwrite", action="store_true",
                    help="replace the run in --checkpoint-dir (without it, a folder holding a run is refused)")
    tr.add_argument("--out", type=Path, help="validation result JSON (training record in manifest.training)")
    tr.set_defaults(handler=("tgeval.cli.commands", "train_command"))

    _add_diagnose_parser(sub)
    _add_audit_parser(sub)
    _add_compare_parser(sub)
    static, shift = _add_static_parsers(sub)

    rp = sub.add_parser("report", help="one self-contained HTML page of a results folder")
    rp.add_argument("results", type=Path, help="folder of result JSONs (tgeval run --out, tgeval evaluate --out ...)")
    rp.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    rp.add_argument("--allow-trained-events", action="store_true",
                    help="report results of checkpoints evaluated on events they were trained on, marked (without "
                         "it they are listed as not reported)")
    rp.set_defaults(handler=("tgeval.diagnostics.report", "report_command"))

    run = sub.add_parser("run", help="compare the baselines on the default dataset")
    run.add_argument("--data", type=Path, default=None, help="event file (default: CollegeMsg, else synthetic)")
    run.add_argument("--format", choices=formats.names(), default="snap")
    run.add_argument("--negatives", type=_count, default=20)
    run.add_argument("--batch-size", type=_count, default=200)
    run.add_argument("--seed", type=_seed, default=0)
    run.add_argument("--out", type=Path, default=Path("tgeval-results"),
                     help="folder for the result files, written beside it and swapped in whole when complete")
    run.add_argument("--overwrite", action="store_true",
                     help="replace the previous run in --out, every file of it (without it, a non-empty folder is "
                          "refused)")
    run.add_argument("--tgn-epochs", type=_count, default=1, help="epochs of the TGN trained beside the heuristics "
                     "(0: heuristics only)")
    run.set_defaults(handler=("tgeval.cli.commands", "run_command"))
    for command in (ev, tr):
        command.add_argument("--duplicates", choices=DUPLICATE_RULES, default="keep",
                             help="events equal in every field to an earlier one: keep (counted) or drop them")
    for command in (ev, tr, run):
        command.add_argument("--device", default="cpu",
                             help="where the data, catalogs and models live: cpu (default), cuda or cuda:INDEX "
                                  "(checked before any work; recorded in each result's manifest)")
    for command in (ev, tr, run, static, shift):
        command.add_argument("--threads", type=_count, default=None,
                             help=f"torch intra-op threads (default: ${THREADS_ENV}, else torch's: the cores); use 1 "
                                  f"on a loaded machine; recorded in the manifest")
    return parser


#: the files ``tgeval diagnose`` writes into its --out folder (with --intervention: intervention.json alone)
DIAGNOSE_FILES = ("diagnose.json", "novelty.csv", "birth_death_nodes.png", "birth_death_pairs.png", "novelty.png")
#: the files ``tgeval static`` and ``tgeval shift`` write into their --out folder
STATIC_FILES = {"static": ("static.json", "degree_ccdf.png"), "shift": ("shift.json", "degree_ccdf.png")}


def _sampler_files(spec: str) -> dict[str, Path]:
    """The files a ``--sampler`` spec reads (``fixed:path=...``, ``tgb:path=...``, inside a mixture too)."""
    return {f"--sampler path {i + 1}": Path(path) for i, path in
            enumerate(re.findall(r"(?:^|[:,=])path=([^,]+)", spec))}


Paths = dict[str, Optional[Path]]


class CommandPaths(NamedTuple):
    """The paths of a parsed command, each keyed by how the user named it (:func:`command_paths`)."""

    inputs: Paths  # the files it reads
    outputs: Paths  # the files it writes
    replaced: Paths  # the folders it writes anew and swaps in whole
    writes: dict[str, str]  # what an output writes, where it is a result, a checkpoint or a report


def command_paths(args: argparse.Namespace) -> CommandPaths:
    """Every file a parsed command reads and writes, for :func:`tgeval.core.atomic.check_distinct` and
    :func:`tgeval.core.atomic.writing_outputs`: ``train``'s checkpoint folder is its run's files (``--checkpoint-dir
    last.pt``, ...), ``diagnose``'s and ``static``'s folder the files they write, ``run``'s folder a folder swapped in
    whole. A checkpoint resumed from the checkpoint folder is no input of it: resuming continues that run."""
    inputs: Paths = {"the data file": getattr(args, "data", None)}
    folder = getattr(args, "out", None)
    if args.command == "evaluate":
        model = None if args.model in (*registry.names("heuristic"), *GNN_MODELS) else Path(args.model)
        return CommandPaths({**inputs, "--model": model, **_sampler_files(args.sampler)},
                            {"--out": args.out, "--save-events": args.save_events}, {}, {"--out": "result"})
    if args.command == "train":
        from tgeval.core.atomic import same_file
        from tgeval.training.fitting import RUN_FILES

        run = args.checkpoint_dir
        files = {} if run is None else {f"--checkpoint-dir {name}": run / name for name in RUN_FILES}
        resumed = args.resume is not None and run is not None and same_file(args.resume.parent, run)
        return CommandPaths({**inputs, "--resume": None if resumed else args.resume}, {**files, "--out": args.out},
                            {}, {"--out": "result", **{name: "checkpoint" for name in files if name.endswith(".pt")}})
    if args.command == "diagnose":
        checkpoint = None if args.intervention is None else Path(args.intervention[1])
        names = DIAGNOSE_FILES if checkpoint is None else ("intervention.json",)
        return CommandPaths({**inputs, "--intervention": checkpoint},
                            {f"--out {name}": folder / name for name in names}, {}, {})
    if args.command in STATIC_FILES:
        return CommandPaths(inputs, {f"--out {name}": folder / name for name in STATIC_FILES[args.command]}, {}, {})
    if args.command == "compare":
        return CommandPaths({f"events file {i + 1}": path for i, path in enumerate(args.events)}, {"--out": folder},
                            {}, {"--out": "comparison"})
    if args.command == "audit":
        checkpoint = None if args.checkpoint is None else Path(args.checkpoint)
        return CommandPaths({**inputs, "--checkpoint": checkpoint}, {"--out": args.out}, {}, {"--out": "audit"})
    if args.command == "report":
        read = sorted(path for pattern in ("*.json", "*.csv") for path in args.results.glob(pattern))
        return CommandPaths({f"the results folder's {path.name}": path for path in read}, {"--out": folder}, {},
                            {"--out": "report"})
    return CommandPaths(inputs, {}, {"--out": folder}, {})  # run: the folder is swapped in whole


def _input_hints() -> dict[str, str]:
    """What an input flag takes, said when its path is missing (the data file and files named by the user
    need no more than their path)."""
    names = ", ".join((*registry.names("heuristic"), *GNN_MODELS))
    checkpoint = "a checkpoint file written by `tgeval train --checkpoint-dir DIR` (DIR/best.pt or DIR/last.pt)"
    return {"--model": f"it is neither a model name ({names}) nor a checkpoint file. Give a name, or {checkpoint}.",
            "--intervention": f"--intervention membership takes {checkpoint}."}


def check_inputs(inputs: Paths) -> None:
    """Raise :class:`~tgeval.errors.InputPathError` for an input of a command (keyed by how the user named it,
    as for :func:`tgeval.core.atomic.check_distinct`; ``None`` skipped) that does not exist, is a folder or is no
    regular file: called when a command meets a missing file or a folder where it reads one, or a reader refuses
    an input (after its options are checked), so the
    user reads which input it is, by the name they gave it, and what to give instead of Python's bare error or a
    reader's :func:`~tgeval.core.atomic.check_input_file` ("event file ..."). ``train --resume`` is left to
    :func:`tgeval.training.fitting.fit`, which resumes from the ``best.pt`` beside a missing ``last.pt``."""
    hints = _input_hints()
    for name, path in inputs.items():
        if path is not None and name != "--resume":
            check_input_file(path, what=name, fix=hints.get(name))


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM ends the command like Ctrl-C: as an exception, so that temporary files are removed."""
    raise SystemExit(128 + signum)


#: environment variable giving the torch intra-op threads when --threads is not given
THREADS_ENV = "TGEVAL_THREADS"
#: the most torch intra-op threads per core that --threads takes
THREADS_PER_CORE = 4


def _set_threads(given: Optional[int]) -> None:
    """torch's intra-op threads: ``--threads``, else ``$TGEVAL_THREADS``, else torch's default (the
    cores; a loaded machine oversubscribes them: 5.5x slower at load ≈ 10, docs/performance.md, *Threads*,
    so set 1 there), at most :data:`THREADS_PER_CORE` per core. Recorded in every result's manifest."""
    text = os.environ.get(THREADS_ENV) if given is None else str(given)
    if text is None:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not text.strip().isdigit() or not 1 <= int(text) <= THREADS_PER_CORE * cores:
        source = "--threads" if given is not None else f"${THREADS_ENV}"
        raise DeviceError(f"{source} must be a positive integer of at most {THREADS_PER_CORE * cores} "
                          f"({THREADS_PER_CORE} per core of the {cores} this process may use: more only oversubscribe "
                          f"them, and tens of thousands exhaust memory), got {text!r}.")
    import torch

    torch.set_num_threads(int(text))


#: the library's names of options whose flag is named otherwise (every other flag is its option's name)
API_NAMES = {"num_negatives": "negatives", "replay": "protocol", "checkpoint_folder": "checkpoint_dir",
             "checkpoint_resume": "resume", "checkpoint_overwrite": "overwrite", "num_resamples": "resamples",
             "val_patience": "patience"}
#: the library's value objects whose fields are flags, with the prefix of their names in :data:`API_NAMES` or as
#: flags (``Validation.metric`` is ``--val-metric``, ``Checkpointing.folder`` is ``--checkpoint-dir``,
#: ``Recipe.batch_size`` is ``--batch-size``)
API_OBJECTS = {"Protocol": "", "Tuning": "", "Recipe": "", "Validation": "val_", "Checkpointing": "checkpoint_"}
#: an option's value in a message: quoted, or one word / number / path
_VALUE = r"'[^']*'|\"[^\"]*\"|[\w.+/-]*[\w/]"


def cli_message(text: str, parser: argparse.ArgumentParser) -> str:
    """A library message as a command-line user reads it: the options ``parser`` has as flags, named by flag
    (``sort=True`` -> ``--sort``, ``Protocol(prefilter=0)`` -> ``--prefilter 0``, ``batch_size`` ->
    ``--batch-size``, ``Protocol.ties`` -> ``--ties``, ``Validation.metric`` -> ``--val-metric``), outside code
    spans (backticks) and quoted input (``'...'`` not after ``=`` or a letter); a flag the message already gave
    after the library's spelling is not repeated; other names stay as they are.

    Example:
        >>> evaluate = _subparser(build_parser(), "evaluate")
        >>> cli_message("unsorted: pass sort=True (--sort), or set Protocol.batch_size.", evaluate)
        'unsorted: pass --sort, or set --batch-size.'
    """
    actions = {action.dest: action for action in parser._actions if action.option_strings}

    def action_of(match: re.Match) -> Optional[argparse.Action]:
        name = API_OBJECTS.get(match.groupdict().get("object") or "", "") + match["name"]
        return actions.get(API_NAMES.get(name, name))

    def flag(action: argparse.Action) -> str:
        return next(option for option in action.option_strings if option.startswith("--"))

    def assignment(match: re.Match) -> str:
        action, value = action_of(match), match["value"].strip("'\"")
        if action is None or value == "None":
            return match[0]
        if value in ("True", "False"):  # a switch: its flag (--no-... for False), where it has one
            wanted = [option for option in action.option_strings if option.startswith("--no-") == (value == "False")]
            return wanted[0] if wanted and not action.nargs else match[0]
        return f"{flag(action)} {value}"

    def name(match: re.Match) -> str:
        action = action_of(match)
        return match[0] if action is None else flag(action)

    objects = "|".join(API_OBJECTS)
    # a quote after "=" or a word character opens no quoted input: it closes an assignment's value
    parts = re.split(r"(`[^`]*`|(?<![=\w])'[^']*')", text)
    for i in range(0, len(parts), 2):  # outside code spans and quoted input
        part = re.sub(rf"\b(?P<object>{objects})\((?P<name>\w+)=(?P<value>{_VALUE})\)", assignment, parts[i])
        part = re.sub(rf"\b(?P<name>\w+)=(?P<value>{_VALUE})", assignment, part)
        part = re.sub(rf"\b(?P<object>{objects})\.(?P<name>\w+)\b", name, part)
        part = re.sub(r"(?<![\w./-])(?P<name>[a-z]+(?:_[a-z]+)+)\b(?![=(./])", name, part)  # snake_case, not in paths
        parts[i] = re.sub(r"(?P<flag>--[\w-]+)(?P<value> [^\s,()]+)?(?: \((?P=flag)(?: [^\s,()]+)?\)|, (?P=flag)\b)",
                          r"\g<flag>\g<value>", part)
    return "".join(parts)


#: ``tgeval train`` options of the neural models only (beside their config fields, :func:`hyperparameter_flags`)
NEURAL_ONLY = ("patience", "checkpoint_dir", "resume", "history", "val_state", "val_metric")


def _takers(option: str, exclude: Sequence[str] = ()) -> str:
    """The heuristics whose constructor takes ``option`` (``exclude`` left out), comma-separated."""
    return ", ".join(name for name in registry.names("heuristic") if option in registry.options(name)
                     and name not in exclude)


def _unused_evaluate(args: argparse.Namespace, given: set[str]) -> Optional[str]:
    """Why an option given to ``tgeval evaluate`` would change nothing (:func:`refuse_unused`), or ``None``."""
    heuristic = args.model in registry.names("heuristic")
    taken = registry.options(args.model) if heuristic else ()
    if "window" in given and ("window" not in taken or args.model == "edgebank"):
        also = " (edgebank remembers every pair: its windowed variant is edgebank-window)" \
            if args.model == "edgebank" else ""
        return f"--window applies to {_takers('window', ('edgebank',))}, not to --model {args.model}{also}."
    if "model_half_life" in given and "half_life" not in taken:
        return f"--half-life applies to {_takers('half_life')}, not to --model {args.model}."
    if "clock" in given and "clock" not in taken:
        return f"--clock applies to {_takers('clock')}, not to --model {args.model}."
    if "allow_trained_events" in given and (heuristic or args.model in GNN_MODELS):
        return (f"--allow-trained-events applies to a checkpoint of `tgeval train`, and --model {args.model} is "
                f"trained on no segment's events.")
    how = "set by --preset " + args.preset if getattr(args, "preset", None) and "negatives" not in given else "given"
    if args.negatives == 0:
        for dest in ("sampler", "seed"):
            if dest in given and not (dest == "seed" and args.model in GNN_MODELS):  # the seed trains a GNN
                return (f"--{dest} {'chooses' if dest == 'sampler' else 'seeds'} the sampled negatives, and "
                        f"--negatives 0 ({how}) draws none: give --negatives K, or drop --{dest}.")
    if not args.all_entity:
        for dest in ("catalog", "uncovered", "candidate_budget", "prefilter"):
            if dest in given:
                return (f"--{dest.replace('_', '-')} applies to the all-entity ranking, and --no-all-entity skips "
                        f"it: drop one of them.")
    return None


def _unused_train(args: argparse.Namespace, given: set[str]) -> Optional[str]:
    """Why an option given to ``tgeval train`` would change nothing (:func:`refuse_unused`), or ``None``."""
    flags = hyperparameter_flags()
    if registry.entry(args.model).kind == "heuristic":
        named = [flag(key) for key in (*NEURAL_ONLY, *flags) if key in given]
        if named:
            return (f"{', '.join(named)} apply to the neural models ({', '.join(registry.names('neural'))}), "
                    f"not to {args.model}.")
        return None
    accepted = registry.entry(args.model).hyperparameters()
    foreign = [flag(key) for key in flags if key in given and key not in accepted]
    if foreign:
        return (f"{', '.join(foreign)} does not apply to {args.model}; its config flags: "
                f"{', '.join(flag(k) for k in accepted)}.")
    return None


#: per command, why an option given would change nothing (``None``: every option given is used)
_UNUSED = {"evaluate": _unused_evaluate, "train": _unused_train}


def refuse_unused(args: argparse.Namespace, given: set[str]) -> None:
    """Raise :class:`~tgeval.errors.ProtocolError` for an option given on the command line (``given``, the
    destinations set explicitly: :func:`~tgeval.eval.presets.given_options`) that the command, with the model and
    options chosen, would not use, naming what takes it: ``--window`` for a model without a window (``edgebank``
    included: ``edgebank-window`` has one), ``--half-life`` where no model takes it, ``--sampler`` / ``--seed``
    with ``--negatives 0``, the all-entity options with ``--no-all-entity``, ``tgeval train``'s neural options
    for ``membership`` and config flags of another neural model. Checked before any work."""
    check = _UNUSED.get(args.command)
    why = None if check is None else check(args, given)
    if why is not None:
        raise ProtocolError(why)


#: the commands that run under ``torchrun`` (sharded evaluation, data-parallel training); the others refuse it
SHARDED_COMMANDS = ("evaluate", "train")


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``command`` (``evaluate``, ``train``, ...)."""
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return commands.choices[command]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors and --help end here, before torch is imported
    given = given_options(parser, argv)
    import torch

    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    threads = torch.get_num_threads()
    try:
        if getattr(args, "preset", None):
            args.preset_record = apply_preset(args, given)
        refuse_unused(args, given)  # before any work: an option that would change nothing is a mistake
        if args.command not in SHARDED_COMMANDS:
            from tgeval.core.distributed import refuse_launch

            refuse_launch(args.command)  # before any work: its ranks would repeat it and race on its files
        _set_threads(getattr(args, "threads", None))
        paths = command_paths(args)
        check_distinct(*paths)  # before any work: no output destroys an input or another output
        args.command_line = shlex.join(["tgeval", *(sys.argv[1:] if argv is None else argv)])  # a lock's holder
        module, name = args.handler
        with writing_outputs(paths.outputs, paths.replaced):  # a full disk, the folders a failure leaves
            try:
                return int(getattr(importlib.import_module(module), name)(args))
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError, InputPathError):
                check_inputs(paths.inputs)  # the input that is missing or a folder, named as the user gave it
                raise
    except (TGEvalError, ValueError, TypeError, OSError) as error:
        print(f"tgeval: error: {type(error).__name__}: {cli_message(str(error), _subparser(parser, args.command))}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # files are written atomically: each is the old one or the new one
        print("tgeval: interrupted", file=sys.stderr)
        return 130
    finally:
        torch.set_num_threads(threads)
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
