"""Memory per rank of ``torchrun ... -m tgeval evaluate``: bytes per event, bytes per catalog item, time.

Every rank of a sharded evaluation replays every event (the state is replicated) and scores only its
share of the catalog's columns in the chunked all-entity path (``docs/guide/distributed.md``). This
benchmark runs the real command, ``torchrun --standalone --nproc-per-node W -m tgeval evaluate FILE
--format snap ... --threads 1``, for each ``W`` of ``--worlds``, on SNAP files of the tgbl-flight-shaped
stream of :mod:`bench_scale` (18,143 nodes), written by :func:`bench_scale_cli.write_snap`. Each rank
runs under :data:`bench_scale_cli.MEASURE` (``torchrun --no-python python -c MEASURE python -m tgeval
...``), so the peak resident memory of each rank is its own, not the ``torchrun`` agent's carried across
``exec``; each rank's stderr goes to its own file (``--log-dir``, ``--redirects 3``).

* **events** (``--events``): EdgeBank, all-entity against the training catalog (its exact counting
  shortcut: every rank counts the whole catalog, nothing is sharded), and sampled K = 20 at
  ``--sampled-events``; default split 0.70 / 0.15 / 0.15. Per rank, bytes per event
  ``(peak - the same command's peak on a --tiny file) / (E - the tiny file's events)``.
* **catalog** (``--catalog-events``): the same stream with one event ``0 -> C - 1`` added at the first
  timestamp, so that ``--catalog range`` (every id from 0 to the largest destination) holds ``C`` =
  ``--large-catalog`` items and the model ``C`` node ids, against the stream as it is (its own range
  catalog, ``C0`` items: 18,140);
  EdgeBank (shortcut, not sharded) and Popularity (no shortcut: the chunked path, sharded), split
  ``--catalog-split`` (a test segment of a few hundred events: Popularity scores every item for each).
  Per rank, bytes per catalog item ``(peak at C - peak at C0) / (C - C0)``.

The metrics of every setting are asserted identical (every field) across world sizes. "wall s" is the
whole command (start-up, reading the file, writing); "eval s" is rank 0's evaluation (the manifest's
``performance.seconds``). The last table gives the fixed costs: each rank's peak on the tiny file and
the ``torchrun`` agent's own peak (one per machine).

Run: python benchmarks/bench_distributed_memory.py [--events 500000 2000000 8000000] [--worlds 1 2] [--threads 1]
[--out benchmarks/results/bench_distributed_memory.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common
import torch
from _common import add_results_arg, bytes_per_event, command_env, print_header, print_table, save_results
from bench_scale import NODES
from bench_scale_cli import MEASURE, peak_bytes, write_snap

SETTINGS = {
    "EdgeBank, all-entity": ["--model", "edgebank", "--negatives", "0", "--all-entity"],
    "EdgeBank, sampled K = 20": ["--model", "edgebank", "--negatives", "20", "--no-all-entity"],
    "Popularity, all-entity": ["--model", "popularity", "--negatives", "0", "--all-entity"],
}


def torchrun(world: int, tail: list[str], folder: Path, threads: int) -> tuple[float, list[int]]:
    """Run ``torchrun --nproc-per-node world`` with each rank under :data:`MEASURE` running ``tail``.

    Returns:
        The command's wall seconds and each rank's peak resident memory in bytes, in rank order.

    Raises:
        SystemExit: the command failed (with the end of every rank's stderr).
    """
    logs = folder / "logs"
    args = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world),
            "--log-dir", str(logs), "--redirects", "3", "--no-python", sys.executable, "-c", MEASURE, *tail]
    start = time.perf_counter()
    with open(folder / "torchrun.log", "w") as log:
        done = subprocess.run(args, cwd=_common.REPO_ROOT, env=command_env(threads), stdout=log,
                              stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    stderr = sorted(logs.glob("*/attempt_0/*/stderr.log"), key=lambda path: int(path.parent.name))
    if done.returncode or len(stderr) != world:
        ends = "\n".join(f"{path}:\n{path.read_text()[-2000:]}" for path in stderr)
        raise SystemExit(f"{' '.join(args)} failed:\n{(folder / 'torchrun.log').read_text()[-2000:]}\n{ends}")
    return seconds, [peak_bytes(path.read_text()) for path in stderr]


def evaluate(world: int, data: Path, options: list[str], folder: Path, threads: int) -> dict:
    """``tgeval evaluate data --format snap *options`` on ``world`` ranks: seconds, each rank's peak, the result."""
    folder.mkdir(parents=True)
    out = folder / "result.json"
    tail = [sys.executable, "-m", "tgeval", "evaluate", str(data), "--format", "snap", *options,
            "--threads", str(threads), "--out", str(out)]
    seconds, peaks = torchrun(world, tail, folder, threads)
    result = json.loads(out.read_text())
    metrics = result["metrics"]
    mrr = (metrics.get("all_entity") or metrics["sampled"])["mrr"]["micro"]
    catalog = result["manifest"]["catalog"]
    return {"world": world, "seconds": seconds, "eval_seconds": result["performance"]["seconds"],
            "peaks": peaks, "mrr": mrr, "metrics": metrics, "catalog_items": catalog and catalog["size"],
            "test_events": result["manifest"]["segment"]["num_events"]}


def same_across_worlds(runs: list[dict], what: str) -> None:
    """Check that every run of one setting has the metrics of the first (``W`` ranks equal one process).

    Raises:
        SystemExit: a run's metrics differ.
    """
    for run in runs[1:]:
        if run["metrics"] != runs[0]["metrics"]:
            raise SystemExit(f"{what}: the metrics of {run['world']} ranks differ from {runs[0]['world']}'s")


def gib(values: list[int]) -> str:
    return " / ".join(f"{v / 2**30:.2f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[500_000, 2_000_000, 8_000_000])
    parser.add_argument("--sampled-events", type=int, default=2_000_000, help="events of the sampled setting (0: skip)")
    parser.add_argument("--catalog-events", type=int, default=500_000)
    parser.add_argument("--large-catalog", type=int, default=1_000_000, help="catalog items of the large catalog")
    parser.add_argument("--catalog-split", default="0.7,0.299,0.001", help="--split of the catalog runs")
    parser.add_argument("--tiny", type=int, default=20_000, help="events of the fixed-cost file")
    parser.add_argument("--worlds", type=int, nargs="+", default=[1, 2], help="processes (ranks) per run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    add_results_arg(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # as each rank's --threads, so that the saved header says the ranks' threads
    print_header(f"torchrun ... -m tgeval evaluate on tgbl-flight-shaped SNAP files ({NODES:,} nodes), "
                 f"ranks {args.worlds}, {args.threads} thread(s) per rank")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def snap(events: int) -> Path:
            path = tmp / f"flight-{events}.txt"
            if not path.exists():
                start = time.perf_counter()
                megabytes = write_snap(path, events)
                print(f"wrote {events:,} events ({megabytes:,.0f} MB) in {time.perf_counter() - start:.0f} s",
                      flush=True)
            return path

        def measure(name: str, world: int, data: Path, options: list[str]) -> dict:
            run = evaluate(world, data, options, tmp / name / str(world), args.threads)
            print(json.dumps({"name": name, **{k: v for k, v in run.items() if k != "metrics"}}), flush=True)
            return run

        # events: bytes per event per rank
        tiny, rows, fixed = {}, [], []
        plan = [("EdgeBank, all-entity", events) for events in args.events]
        plan += [("EdgeBank, sampled K = 20", args.sampled_events)] if args.sampled_events else []
        for setting, events in plan:
            for world in args.worlds:
                if (setting, world) not in tiny:
                    tiny[setting, world] = measure(f"tiny {setting}", world, snap(args.tiny), SETTINGS[setting])
                    fixed.append([setting, world, gib(tiny[setting, world]["peaks"])])
            runs = [measure(f"{setting} {events}", world, snap(events), SETTINGS[setting]) for world in args.worlds]
            same_across_worlds(runs, f"{setting}, {events:,} events")
            for run in runs:
                bases = tiny[setting, run["world"]]["peaks"]
                per_event = [bytes_per_event(peak, base, events, args.tiny) for peak, base in zip(run["peaks"], bases)]
                items = "-" if run["catalog_items"] is None else f"{run['catalog_items']:,}"
                rows.append([setting, run["world"], f"{events:,}", items, f"{run['seconds']:.0f}",
                             f"{run['eval_seconds']:.1f}", gib(run["peaks"]), " / ".join(f"{b:.0f}" for b in per_event),
                             f"{run['mrr']:.4f}"])
        print_table(["setting", "ranks", "events", "catalog items", "wall s", "eval s", "peak GiB per rank",
                     "B/event per rank", "MRR"], rows,
                    title="Events: EdgeBank on the tgbl-flight-shaped stream, split 0.70 / 0.15 / 0.15")
        save_results(args)

        # catalog: bytes per catalog item per rank
        small = snap(args.catalog_events)
        large = tmp / f"catalog-{args.large_catalog}.txt"
        with open(large, "w") as handle, open(small) as source:
            handle.write(f"0 {args.large_catalog - 1} 0\n")  # one event at the first timestamp widens the range
            shutil.copyfileobj(source, handle)
        rows = []
        for setting in ("EdgeBank, all-entity", "Popularity, all-entity"):
            options = [*SETTINGS[setting], "--catalog", "range", "--split", args.catalog_split]
            base = [measure(f"{setting} catalog {NODES}", world, small, options) for world in args.worlds]
            wide = [measure(f"{setting} catalog {args.large_catalog}", world, large, options) for world in args.worlds]
            same_across_worlds(base, f"{setting}, catalog {NODES:,}")
            same_across_worlds(wide, f"{setting}, catalog {args.large_catalog:,}")
            for before, run in zip(base, wide):
                items = run["catalog_items"] - before["catalog_items"]
                per_item = [(peak - low) / items for peak, low in zip(run["peaks"], before["peaks"])]
                for one, per in ((before, None), (run, per_item)):
                    rows.append([setting, one["world"], f"{one['catalog_items']:,}", f"{one['test_events']:,}",
                                 f"{one['seconds']:.0f}", f"{one['eval_seconds']:.1f}", gib(one["peaks"]),
                                 "" if per is None else " / ".join(f"{b:.0f}" for b in per), f"{one['mrr']:.4f}"])
        print_table(["setting", "ranks", "catalog items", "test events", "wall s", "eval s", "peak GiB per rank",
                     "B/item per rank", "MRR"], rows,
                    title=f"Catalog: {args.catalog_events:,} events, --catalog range, --split {args.catalog_split}")
        save_results(args)

        # fixed costs: the tiny runs and the torchrun agent
        (tmp / "agent").mkdir()
        agent = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "torch.distributed.run",
                                "--standalone", "--nproc-per-node", "1", "--no-python", "true"],
                               cwd=tmp / "agent", capture_output=True, text=True, check=True)
        agent_bytes = peak_bytes(agent.stderr)
        fixed.append(["the torchrun agent itself (one per machine; measured on the job `true`: a lower bound)", "",
                      gib([agent_bytes])])
        print_table(["fixed cost", "ranks", "peak GiB (each process)"], fixed,
                    title=f"Fixed costs: each rank's peak on a {args.tiny:,}-event file (start-up, torch)")
    print("B/event: (rank's peak - the same rank's peak on the tiny file) / (events - the tiny file's events); "
          "B/item: (rank's peak at the large catalog - at the stream's own) / added items; MRR asserted identical "
          "across ranks")
    save_results(args)


if __name__ == "__main__":
    main()
