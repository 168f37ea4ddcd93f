"""EdgeBank end to end on a synthetic stream shaped like tgbl-flight: time, peak memory and bytes per event.

The stream is built in memory (vectorised numpy, no text reading): 18,143 nodes (tgbl-flight's
airports), ``--events`` events over 1,385 daily timestamps (about ``E / 1385`` events share each),
95% of them on a fixed set of ``E / 40`` routes drawn by a heavy-tailed (Zipf 1.1) route
popularity and 5% on fresh pairs drawn by node popularity (log-normal), so most test pairs
repeat, as in flight data. Inside a day the events lie in draw order, as in a file; ``--order canonical``
also measures the stream reordered (in place, before the evaluation) to the engine's canonical
order ``(t, src, dst)``, which the engine replays as it is, without a permuted copy.

Each run is a fresh process (its peak resident memory ``VmHWM`` is its own) that builds the
stream, then runs what ``tgeval evaluate --model edgebank`` runs (split 0.70 / 0.15 / 0.15,
online replay, batches of 200, test segment) in one of two settings:

* ``sampled``: K = 20 uniform negatives over the training catalog, no all-entity pass;
* ``all-entity``: exact ranking against every item of the training catalog, no sampler;

with ``records="none"`` (no per-event records kept; the command line's choice without
``--save-events``). Reported per run: the evaluation's seconds, the peak of the process, the
peak of the same run on a tiny stream (``--tiny`` events: imports and fixed costs), and bytes per
event ``(peak - tiny peak) / (E - tiny E)`` (the stream itself, 24 B/event of int64 ``src / dst / t``,
included). ``--threads`` gives the torch threads of each run (default: 1 and 2).

Run: python benchmarks/bench_scale.py [--events 50000000] [--tiny 20000] [--threads 1 2] [--order file canonical]
[--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository root on sys.path)
import numpy as np
import torch
from _common import bytes_per_event, command_line, print_header, print_table
from torch_geometric.data import TemporalData

from tgeval.eval.tuning import Tuning
from tgeval.core.atomic import write_atomic
from tgeval.data.groups import canonical_order

NODES, DAYS = 18_143, 1_385
SETTINGS = ("sampled", "all-entity")
ORDERS = ("file", "canonical")


def flight_like(num_events: int, seed: int = 0, chunk: int = 2**20, canonical: bool = False) -> TemporalData:
    """The synthetic stream of the module docstring, time-sorted, int64 ``src``, ``dst``, ``t``, drawn in
    chunks of ``chunk`` events straight into the stream's tensors (24 bytes per event, small temporaries);
    under ``canonical``, reordered in place to ``(t, src, dst)`` (the permutation, 8 bytes per event, freed)."""
    rng = np.random.default_rng(seed)
    popularity = rng.lognormal(0.0, 1.5, NODES)
    popularity /= popularity.sum()
    num_routes = max(16, num_events // 40)
    route_src = rng.choice(NODES, num_routes, p=popularity)
    others = np.delete(popularity, 0) / (1 - popularity[0])
    route_dst = (route_src + 1 + rng.choice(NODES - 1, num_routes, p=others)) % NODES  # never the source itself
    src, dst = torch.empty(num_events, dtype=torch.long), torch.empty(num_events, dtype=torch.long)
    for a in range(0, num_events, chunk):
        n = min(chunk, num_events - a)
        route = rng.zipf(1.1, n) % num_routes  # heavy-tailed route popularity
        fresh = rng.random(n) < 0.05
        src[a:a + n] = torch.from_numpy(np.where(fresh, rng.choice(NODES, n, p=popularity), route_src[route]))
        dst[a:a + n] = torch.from_numpy(np.where(fresh, rng.choice(NODES, n, p=popularity), route_dst[route]))
    t = torch.arange(num_events, dtype=torch.long).mul_(DAYS).div_(num_events, rounding_mode="floor").mul_(86_400)
    if canonical:  # the order moves events inside their day only: permute chunks of whole days in place
        order, a = canonical_order(src, dst, t), 0
        while a < num_events:
            b = int(torch.searchsorted(t, t[min(a + chunk, num_events) - 1:][:1], right=True))
            src[a:b], dst[a:b] = src[order[a:b]], dst[order[a:b]]
            a = b
    return TemporalData(src=src, dst=dst, t=t)


def peak_mib() -> float:
    """This process's peak resident memory (``VmHWM``), MiB."""
    with open("/proc/self/status") as handle:
        return int(re.search(r"VmHWM:\s+(\d+) kB", handle.read()).group(1)) / 1024


def one_run(events: int, setting: str, threads: int, order: str = "file") -> dict:
    """Build the stream and evaluate EdgeBank in this process (see the module docstring)."""
    from tgeval import Protocol, build_catalog, chronological_split, evaluate
    from tgeval.models.heuristics import EdgeBank
    from tgeval.samplers import UniformSampler

    torch.set_num_threads(threads)
    start = time.perf_counter()
    data = flight_like(events, canonical=order == "canonical")
    built = time.perf_counter() - start
    split = chronological_split(data, (0.70, 0.15, 0.15))
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=NODES)
    start = time.perf_counter()
    if setting == "sampled":
        result = evaluate(EdgeBank(NODES), data, split.test, Protocol(num_negatives=20),
                          sampler=UniformSampler(catalog), tuning=Tuning(records="none"))
        mrr = result.metrics["sampled"]["mrr"]["micro"]
    else:
        result = evaluate(EdgeBank(NODES), data, split.test, Protocol(num_negatives=0), catalog=catalog,
                          tuning=Tuning(records="none"))
        mrr = result.metrics["all_entity"]["mrr"]["micro"]
    seconds = time.perf_counter() - start
    return {"events": events, "test_events": split.test.num_events, "setting": setting, "threads": threads,
            "order": order,
            "build_seconds": built, "seconds": seconds, "peak_mib": peak_mib(), "mrr": mrr,
            "phases": {k: round(v, 2) for k, v in result.performance["phases"].items()}}


def fresh_process(events: int, setting: str, threads: int, order: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", str(events), setting, str(threads), order],
                          capture_output=True, text=True, cwd=_common.REPO_ROOT)
    if done.returncode:
        raise SystemExit(f"run {events} {setting} {threads} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        print(json.dumps(one_run(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000_000)
    parser.add_argument("--tiny", type=int, default=20_000, help="events of the fixed-cost run")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--out", type=Path, help="JSON of every run (written atomically)")
    parser.add_argument("--order", nargs="+", choices=ORDERS, default=["file"],
                        help="the stream's order inside a day: as drawn, or canonical (t, src, dst)")
    args = parser.parse_args()
    print_header(f"EdgeBank at scale: a tgbl-flight-shaped stream of {args.events:,} events, {NODES:,} nodes")
    rows, runs = [], []
    for order, setting, threads in ((o, s, n) for o in args.order for s in args.settings for n in args.threads):
        tiny = fresh_process(args.tiny, setting, threads, order)
        run = fresh_process(args.events, setting, threads, order)
        per_event = bytes_per_event(run["peak_mib"] * 2**20, tiny["peak_mib"] * 2**20, run["events"], tiny["events"])
        rows.append([order, setting, threads, f"{run['events']:,}", f"{run['test_events']:,}",
                     f"{run['seconds']:.1f}", f"{run['test_events'] / run['seconds']:,.0f}",
                     f"{run['peak_mib'] / 1024:.2f}", f"{tiny['peak_mib'] / 1024:.2f}", f"{per_event:.0f}",
                     f"{run['mrr']:.4f}"])
        runs.append({"tiny": tiny, "run": run, "bytes_per_event": per_event})
        print(json.dumps(runs[-1]), flush=True)
    print_table(["order", "setting", "threads", "events", "test events", "eval s", "test events/s", "peak GiB",
                 "tiny peak GiB", "B/event", "test MRR"], rows)
    print("test MRR: EdgeBank (unlimited), micro (mean over events), average ties, online, batches of 200, history "
          "exact; sampled: K = 20 uniform over the train catalog; all-entity: every item of the train catalog")
    if args.out:
        write_atomic(args.out, json.dumps({"command": command_line(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
