"""Shared helpers of the benchmark scripts (not part of the package).

Each benchmark is run as ``python benchmarks/<script>.py`` from the repository root (or
anywhere else: the repository root is put on ``sys.path`` here).

Every table a script prints through :func:`print_table` is also kept in the process; with ``--out FILE``
(:func:`add_results_arg`, part of :func:`add_common_args`) :func:`save_results` writes them as JSON::

    {"script": "bench_x.py", "command": "python benchmarks/bench_x.py --threads 1 --out ...",
     "versions": {"tgeval": ..., "torch": ..., "numpy": ..., "python": ...},
     "machine": {"cpus": 2, "torch_threads": 1, "omp_num_threads": "1",
                 "load_start": [1m, 5m, 15m], "load_end": [1m, 5m, 15m]},
     "date": "2026-12-02T20:00:00Z", "tables": [{"title": ..., "header": [...], "rows": [[...], ...]}]}

``benchmarks/tables.py`` renders ``benchmarks/results/<script>.json`` into the documentation.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
#: the benchmarks' default dataset folder (the library itself reads only ``data_dir`` or ``$TGEVAL_DATA_DIR``)
os.environ.setdefault("TGEVAL_DATA_DIR", str(REPO_ROOT.parent / "shared" / "datasets"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_geometric  # noqa: E402
from torch_geometric.data import TemporalData  # noqa: E402

import tgeval  # noqa: E402
from tgeval.core.atomic import write_atomic  # noqa: E402
from tgeval.data.catalog import Catalog  # noqa: E402
from tgeval.data.split import Segment, Split  # noqa: E402

#: how tables name the shared datasets and the reference models
DATASET_LABELS = {"uci": "UCI", "wikipedia": "Wikipedia"}
MODEL_LABELS = {"tgn": "TGN", "dyrep": "DyRep", "graphmixer": "GraphMixer"}
#: the load average when this process started, and every table :func:`print_table` printed since
_LOAD_START = os.getloadavg()
_TABLES: list[dict] = []


def add_results_arg(parser) -> None:
    """Add ``--out FILE``: where :func:`save_results` writes the printed tables as JSON."""
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the printed tables, the command, versions and machine load as JSON here "
                             "(atomically; benchmarks/tables.py renders benchmarks/results/<script>.json)")


def add_run_args(parser) -> None:
    """``--out`` (:func:`add_results_arg`), ``--data-dir`` and ``--threads`` (:func:`apply_common_args`)."""
    add_results_arg(parser)
    parser.add_argument("--data-dir", default=None,
                        help="the datasets folder, which holds wikipedia/ml_wikipedia.txt (default: $TGEVAL_DATA_DIR, "
                             "else ../shared/datasets)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads, and OMP_NUM_THREADS of the commands a script runs (default 1: "
                             "the baselines are single-threaded Python, and on a small shared machine extra OpenMP "
                             "threads make per-batch timings erratic)")


def add_common_args(parser) -> None:
    """:func:`add_run_args` and ``--repeat`` (timed repetitions)."""
    add_run_args(parser)
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions; the best is reported")


def apply_common_args(args) -> None:
    """Use ``--data-dir`` (as ``$TGEVAL_DATA_DIR``, which ``tgeval.data.datasets.load_dataset`` reads) and
    ``--threads``."""
    if getattr(args, "data_dir", None) is not None:
        os.environ["TGEVAL_DATA_DIR"] = str(Path(args.data_dir).resolve())
    torch.set_num_threads(args.threads)


def have_dataset(name: str) -> bool:
    """Whether the shared dataset ``name`` is where :func:`tgeval.data.datasets.dataset_path` looks."""
    from tgeval.data.datasets import dataset_path
    from tgeval.errors import InputPathError

    try:
        dataset_path(name)
    except InputPathError:
        return False
    return True


def required_dataset(name: str) -> Path:
    """The file of the shared dataset ``name`` (:func:`tgeval.data.datasets.dataset_path`).

    Raises:
        SystemExit: it is not there (the message names the file and how to give the folder).
    """
    from tgeval.data.datasets import dataset_path
    from tgeval.errors import InputPathError

    try:
        return dataset_path(name)
    except InputPathError as error:
        raise SystemExit(f"{error} (benchmarks: --data-dir DIR)") from None


def command_env(threads: int) -> dict[str, str]:
    """The environment of a measured command: ``OMP_NUM_THREADS`` set to ``threads`` and no
    ``TGEVAL_CACHE_DIR`` (every command reads the text file)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    env.pop("TGEVAL_CACHE_DIR", None)
    return env


def command_line() -> str:
    """The exact command line that ran this script."""
    return " ".join(shlex.quote(a) for a in [Path(sys.executable).name] + sys.argv)


def print_header(title: str) -> None:
    print(f"== {title}")
    print(f"command : {command_line()}")
    print(f"versions: tgeval {tgeval.__version__}, torch {torch.__version__}, numpy {np.__version__}, "
          f"python {platform.python_version()}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine : {platform.machine()}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}, "
          f"load average {load} (other processes on the machine perturb timings)")


def load_wikipedia(data_dir: Optional[str]) -> tuple[TemporalData, str]:
    """Wikipedia as a validated, time-sorted ``TemporalData`` and a note on how it was read (``data_dir``, else
    ``$TGEVAL_DATA_DIR``, which defaults to ``../shared/datasets`` here).

    Raises:
        InputPathError: the file is not there.
    """
    from tgeval.data.datasets import load_dataset

    data, _ = load_dataset("wikipedia", data_dir=data_dir)
    return tgeval.validate(data), "tgeval.data.datasets.load_dataset('wikipedia')"


def load_setting(dataset: str, data_dir: Optional[str]) -> tuple[TemporalData, str, Split, Catalog, int]:
    """The model benchmarks' setting: ``dataset`` (``"wikipedia"`` through :func:`load_wikipedia`,
    else ``tgeval.data.datasets.load_dataset``) validated and time-sorted, a note on how it was
    read, its 70/15/15 chronological split, the 'train' catalog and the number of nodes."""
    if dataset == "wikipedia":
        data, how = load_wikipedia(data_dir)
    else:
        from tgeval.data.datasets import load_dataset
        data, how = tgeval.validate(load_dataset(dataset)[0]), f"load_dataset({dataset!r})"
    split = tgeval.chronological_split(data, (0.70, 0.15, 0.15))
    catalog = tgeval.build_catalog(data, "train", train_end=split.train.end)
    return data, how, split, catalog, int(max(data.src.max(), data.dst.max())) + 1


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds taken by ``fn()`` (``time.perf_counter``) and its result."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def best(values: Sequence[float]) -> float:
    return max(values)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: Optional[str] = None) -> None:
    """Print a compact, aligned plain-text table (also valid Markdown), after ``title`` if given, and keep it
    for :func:`save_results`."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    _TABLES.append({"title": title, "header": cells[0], "rows": cells[1:]})
    if title:
        print(title)
    widths = [max(len(r[j]) for r in cells) for j in range(len(headers))]

    def line(r):
        return "| " + " | ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths))) + " |"

    print(line(cells[0]))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells[1:]:
        print(line(r))


def save_results(args, **extra) -> None:
    """Write every table printed so far, the command, versions and machine (module docstring) to ``args.out``
    atomically (:func:`tgeval.core.atomic.write_atomic`), with ``extra``'s keys beside them (a long run's raw
    measurements, saved after each step); nothing when ``args.out`` is ``None``."""
    if args.out is None:
        return
    out = Path(args.out)
    report = {
        "script": Path(sys.argv[0]).name,
        "command": command_line(),
        "versions": {"tgeval": tgeval.__version__, "torch": torch.__version__,
                     "torch_geometric": torch_geometric.__version__, "numpy": np.__version__,
                     "python": platform.python_version()},
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                    "load_start": [round(x, 2) for x in _LOAD_START],
                    "load_end": [round(x, 2) for x in os.getloadavg()]},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tables": _TABLES,
        **extra,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"results : {out}")


def bytes_per_event(peak: float, tiny_peak: float, events: int, tiny_events: int) -> float:
    """What one more event costs: ``(peak - tiny_peak) / (events - tiny_events)``, the slope between a run on
    ``events`` and the same run on ``tiny_events`` (whose peak holds the fixed costs and its own events)."""
    return (peak - tiny_peak) / (events - tiny_events)


def group_end(t: torch.Tensor, start: int, num_events: int, limit: int) -> int:
    """End of the first ``num_events`` events from ``start``, extended to a whole timestamp group
    (``limit`` when ``num_events <= 0`` or the events reach it)."""
    if num_events <= 0 or start + num_events >= limit:
        return limit
    tn = t.numpy()
    return min(int(np.searchsorted(tn, tn[start + num_events - 1], side="right")), limit)


def head_segment(data: TemporalData, segment: Segment, num_events: int) -> Segment:
    """The first ``num_events`` events of ``segment``, extended to the end of the last timestamp group."""
    end = group_end(data.t, segment.start, num_events, segment.end)
    if end == segment.end:
        return segment
    return Segment(f"{segment.name}[:{end - segment.start}]", segment.start, end, data.t[segment.start].item(),
                   data.t[end - 1].item())


def inside_range(event, name: str) -> bool:
    """Whether a ``torch.profiler`` event ran inside a range (``record_function``) called ``name``."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == name:
            return True
        parent = parent.cpu_parent
    return False
