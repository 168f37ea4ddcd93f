"""Render the documentation's measurement tables from the benchmarks' saved JSON outputs.

A page holds a generated table between two markers::

    <!-- table:NAME -->
    | ... the rendered table ... |
    <!-- /table:NAME -->

``python benchmarks/tables.py`` rewrites every such table of the pages below from the JSON files in
``benchmarks/results/``; ``--check`` rewrites nothing and exits 1 (naming the pages) when a page
differs from what would be rendered; either exits 2, writing nothing, when a page cannot be rendered (a
missing results file, an unpaired marker: the message names the page and the fix). Needs only the standard
library.

Generic tables: ``NAME`` is the stem of ``benchmarks/results/NAME.json``, the ``--out`` file of
``python benchmarks/NAME.py --threads 1 --out benchmarks/results/NAME.json`` (``benchmarks/_common.py``'s
``save_results``, which keeps every table the script printed); ``SCRIPT-VARIANT.json`` holds a run of
``SCRIPT.py`` with other options (``bench_ops-batch.json``: ``bench_ops.py --history batch``).
``<!-- table:NAME -->`` renders all its tables, each after its title if it has one; ``<!-- table:NAME:I -->``
only the I-th (from 1). Either ends with one italic line naming the command, torch threads, load average,
torch version and date of the run.

Bespoke tables:
    tgb_leaderboard: ``benchmarks/results/tgb_leaderboard/*.json``, the ``--out`` files of
        ``python benchmarks/tgb_leaderboard.py --models M --seeds S --threads 1 --out FILE`` (finished runs only).
    scale_in_process: ``benchmarks/results/scale/in_process-*.json``, the ``--out`` files of
        ``python benchmarks/bench_scale.py``.
    scale_command_line: ``benchmarks/results/scale/command_line-*.json``, the ``--out`` files of
        ``python benchmarks/bench_scale_cli.py``.
    bench_prefilter: ``benchmarks/results/bench_prefilter.json``, the ``--out`` file of
        ``python benchmarks/bench_prefilter.py --threads 1 --out benchmarks/results/bench_prefilter.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGES = ("README.md", "benchmarks/README.md", "docs/*.md", "docs/guide/*.md")
MARKER = re.compile(r"(<!-- table:(?P<name>[\w-]+)(?::(?P<index>\d+))? -->\n)(?P<body>.*?)"
                    r"(<!-- /table:(?P=name)(?P<close>:\d+)? -->)", re.S)
#: an opening marker on a line of its own (one quoted in prose is not a marker)
OPENER = re.compile(r"^<!-- table:(?P<name>[\w-]+)(?::\d+)? -->$", re.M)


class TableError(ValueError):
    """A marker or a results file that cannot be rendered; the message names the problem and the fix."""


# tgb_leaderboard.py's model names, as the table prints them.
LEADERBOARD_LABELS = {
    "tgn": "TGN",
    "dyrep": "DyRep",
    "dyrep-event": "DyRep, partner embedding written at the event (`dyrep-event`)",
    "graphmixer": "GraphMixer",
}


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table of ``header`` and ``rows`` (cells as given, ``|`` escaped)."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(row) for row in rows]) + "\n"


def _spread(values: list[float], digits: int) -> str:
    """One value as is; several as ``mean ± sample standard deviation``."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def tgb_leaderboard(results: Path) -> str:
    """Test MRR on tgbl-wiki of the models trained with TGB's recipes, one row per model (seeds pooled),
    beside TGB's leaderboard; unfinished runs are left out."""
    runs: dict[str, list[dict]] = {}
    leaderboard: dict[str, list[float]] = {}
    for path in sorted((results / "tgb_leaderboard").glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        leaderboard.update(report["leaderboard"])
        for run in report["runs"].values():
            if run.get("finished") and "test_mrr_tgb_preset" in run:
                runs.setdefault(run["model"], []).append(run)
    rows = []
    for model in sorted(runs, key=lambda m: (list(LEADERBOARD_LABELS).index(m) if m in LEADERBOARD_LABELS else 99, m)):
        group = sorted(runs[model], key=lambda run: run["seed"])
        published = leaderboard.get(model)
        rows.append([
            LEADERBOARD_LABELS.get(model, f"`{model}`"),
            f"{published[0]:.3f} ± {published[1]:.3f}" if published else "",
            ", ".join(str(run["seed"]) for run in group),
            _spread([run["test_mrr_tgb_preset"] for run in group], 4),
            _spread([run["test_mrr_tgeval_protocol"] for run in group], 4),
            "; ".join(f"{run['best_epoch']} / {run['epochs_run']}" for run in group),
            "; ".join(f"{statistics.median(e['train_seconds'] for e in run['history']):.0f}" for run in group),
        ])
    header = ["model", "TGB leaderboard (tgbl-wiki-v2)", "seeds", "test MRR, `--preset tgb`",
              "test MRR, tgeval's own protocol", "best epoch (from 0) / epochs run", "train s/epoch (median)"]
    return _markdown(header, rows)


def _scale_runs(results: Path, pattern: str) -> list[dict]:
    """The runs of the ``--out`` files ``results/scale/<pattern>``, in file-name order."""
    return [run for path in sorted((results / "scale").glob(pattern))
            for run in json.loads(path.read_text(encoding="utf-8"))["runs"]]


def scale_in_process(results: Path) -> str:
    """EdgeBank's evaluation of the tgbl-flight-shaped stream built in memory, one row per run."""
    rows = [[r["run"]["order"], r["run"]["setting"], str(r["run"]["threads"]), f"{r['run']['events']:,}",
             f"{r['run']['test_events']:,}", f"{r['run']['seconds']:.0f}", f"{r['run']['peak_mib'] / 1024:.2f}",
             f"{r['tiny']['peak_mib'] / 1024:.2f}", f"{r['bytes_per_event']:.0f}", f"{r['run']['mrr']:.4f}"]
            for r in _scale_runs(results, "in_process-*.json")]
    return _markdown(["stream order", "setting", "threads", "events", "test events", "evaluation s", "peak GiB",
                      "tiny run's peak GiB", "B/event", "test MRR"], rows)


def scale_command_line(results: Path) -> str:
    """Each command on the tgbl-flight-shaped SNAP file, in a fresh process, one row per run."""
    rows = [[f"`{r['run']['command']}`", f"{r['events']:,}", str(r["threads"]), f"{r['run']['seconds']:.0f}",
             f"{r['run']['peak_mib'] / 1024:.2f}", f"{r['tiny']['peak_mib'] / 1024:.2f}",
             f"{r['bytes_per_event']:.0f}"]
            for r in _scale_runs(results, "command_line-*.json")]
    return _markdown(["command", "events", "threads", "wall s (whole command)", "peak GiB", "tiny file's peak GiB",
                      "B/event"], rows)


def _provenance(report: dict) -> str:
    """One italic line: how the results were measured."""
    machine = report["machine"]
    omp = f"OMP_NUM_THREADS={machine['omp_num_threads']} " if machine.get("omp_num_threads") else ""
    threads = machine["torch_threads"]
    return (f"*Measured by `{omp}{report['command']}`: {threads} torch thread{'s' * (threads != 1)}, "
            f"{machine['cpus']} CPUs, load average {machine['load_start'][0]:.2f} at the start and "
            f"{machine['load_end'][0]:.2f} at the end, torch {report['versions']['torch']}, "
            f"{report['date'][:10]}.*\n")


def generic(results: Path, name: str, index: int | None = None) -> str:
    """The tables of ``results/<name>.json`` (all, or the ``index``-th from 1), then their provenance line.

    Raises:
        FileNotFoundError: no such results file (the message names the command that writes it).
        IndexError: ``index`` is not one of the file's tables.
    """
    path = results / f"{name}.json"
    if not path.is_file():
        script, _, variant = name.partition("-")
        raise FileNotFoundError(f"{path} is missing: run OMP_NUM_THREADS=1 python benchmarks/{script}.py "
                                f"--threads 1 --out benchmarks/results/{name}.json"
                                + (f" with the options of its {variant!r} variant (the page's command)" if variant
                                   else ""))
    report = json.loads(path.read_text(encoding="utf-8"))
    if "tables" not in report or "machine" not in report:
        raise TableError(f"{path} holds no tables saved by _common.save_results: rerun its script with --out, or "
                         f"render it with a bespoke function of TABLES")
    chosen = report["tables"]
    if index is not None:
        if not 1 <= index <= len(chosen):
            raise IndexError(f"{path.name} has {len(chosen)} tables, not a table {index}")
        chosen = [chosen[index - 1]]
    parts = [(f"{table['title']}\n\n" if table["title"] else "") + _markdown(table["header"], table["rows"])
             for table in chosen]
    return "\n".join(parts + [_provenance(report)])


def bench_prefilter(results: Path) -> str:
    """The pre-filter's error and speed against exact ranking, one row per dataset and ``L``, then the command."""
    report = json.loads((results / "bench_prefilter.json").read_text(encoding="utf-8"))
    rows = [[{"uci": "UCI", "wikipedia": "Wikipedia"}.get(data, data), f"{run['catalog_size']:,}", f"{int(top):,}",
             f"{run['exact_mrr']:.4f}", f"{m['mrr']:.4f} ({m['mrr_difference']:+.3f})",
             f"{m['fraction_rank_changed']:.1%}", f"{m['largest_rank_ratio']:.3g}x", f"{m['speed_ratio']:.2f}x"]
            for data, run in report["runs"].items() for top, m in run["prefilter"].items()]
    header = ["data", "catalog", "L", "MRR exact", "MRR pre-filtered", "events whose rank changed",
              "largest rank ratio", "speed vs exact"]
    return _markdown(header, rows) + f"\n*Measured by `{report['command']}`.*\n"


TABLES: dict[str, Callable[[Path], str]] = {"tgb_leaderboard": tgb_leaderboard, "scale_in_process": scale_in_process,
                                            "scale_command_line": scale_command_line,
                                            "bench_prefilter": bench_prefilter}


def pages(root: Path = ROOT) -> list[Path]:
    """Every Markdown page that may hold a generated table."""
    return sorted({path for pattern in PAGES for path in root.glob(pattern)})


def render(text: str, results: Path = RESULTS) -> str:
    """``text`` with every marked table rendered from ``results``: a bespoke table of ``TABLES``, else
    :func:`generic`.

    Raises:
        FileNotFoundError: a marker names neither a bespoke table nor a results file.
        IndexError: a marker's index is not one of its file's tables.
        TableError: an opening marker without its closing one (the same name and index), an index on a bespoke
            table, or a results file without saved tables.
    """
    paired = {match.start() for match in MARKER.finditer(text)}
    for opener in OPENER.finditer(text):
        if opener.start() not in paired:
            raise TableError(f"{opener.group(0)} has no closing <!-- /table:{opener['name']} --> "
                             f"(with the same :I, if any)")

    def fill(match: re.Match) -> str:
        name, index = match["name"], match["index"]
        if (match["close"] or "") != ("" if index is None else f":{index}"):
            raise TableError(f"<!-- table:{name}{'' if index is None else ':' + index} --> is closed by "
                             f"<!-- /table:{name}{match['close'] or ''} -->: the closing marker repeats the index")
        if name in TABLES:
            if index is not None:
                raise TableError(f"{name} is a bespoke table: its marker takes no :{index}")
            body = TABLES[name](results)
        else:
            body = generic(results, name, None if index is None else int(index))
        return match.group(1) + body + match.group(5)
    return MARKER.sub(fill, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when a page differs")
    args = parser.parse_args(argv)
    stale, errors = {}, []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        try:
            rendered = render(text)
        except (FileNotFoundError, IndexError, TableError) as error:
            errors.append(f"{page.relative_to(ROOT)}: {error}")
            continue
        if rendered != text:
            stale[page] = rendered
    if errors:  # nothing is written unless every page renders
        print("\n".join(errors), file=sys.stderr)
        return 2
    if not args.check:
        for page, rendered in stale.items():
            page.write_text(rendered, encoding="utf-8")
    stale = [page.relative_to(ROOT) for page in stale]
    verb = "differ from their results (run python benchmarks/tables.py)" if args.check else "rewritten"
    for page in stale:
        print(f"{page}: {verb}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
