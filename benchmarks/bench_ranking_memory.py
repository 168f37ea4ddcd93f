"""Peak memory of exact all-entity ranking as the catalog grows (1k ... 1M items).

Synthetic stream: a training prefix of C events whose destinations are C distinct ids
(sources 0..999, one event per timestamp), then an evaluated segment of ``--events`` events
(one per timestamp) from random sources to random catalog items. The 'train' catalog thus
holds exactly C items. An unlimited EdgeBank learns the prefix; the segment is ranked
against the whole catalog with the generic chunked path (``use_shortcut=False``) and a fixed
``candidate_budget`` (default 2**20 (event, candidate) scores per chunk).

Each (catalog size, mode) runs in a fresh subprocess: after setup (stream, catalog, bank, one
untimed call on a few events) the process's peak-RSS mark is reset (``/proc/self/clear_refs``,
Linux) and its current RSS taken as the baseline; the reported delta is
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after the ranking minus that baseline.

Modes:
* ``ranking``: ``tgeval.eval.ranking.all_entity_counts`` on each timestamp batch of the
  segment (the ranking itself);
* ``evaluate``: ``tgeval.evaluate(..., Protocol(replay="fixed", warm=False), tuning=Tuning(check_state=False))``
  end to end, which also holds O(stream length) arrays (canonical order, strata, records);
  here the stream length equals C, so this part grows linearly with C as well.

"Full matrix" is what a dense [events x catalog] float64 score matrix would take.

Run: python benchmarks/bench_ranking_memory.py [--sizes 1000 10000 100000 1000000] [--events 200] [--budget 1048576]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_results_arg, command_line, print_header, print_table, save_results

NUM_SOURCES = 1000
MODES = ("ranking", "evaluate")


def current_rss() -> int:
    """Resident set size now, in bytes (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def reset_peak() -> bool:
    """Reset the peak-RSS mark (ru_maxrss / VmHWM) to the current RSS; False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def child(size: int, num_events: int, budget: int, mode: str) -> dict:
    from torch_geometric.data import TemporalData

    from tgeval import Protocol, Segment, TimestampBatchLoader, Tuning, build_catalog, evaluate, validate
    from tgeval.eval.ranking import all_entity_counts
    from tgeval.models.heuristics import EdgeBank

    gen = torch.Generator().manual_seed(0)
    hist_src = torch.arange(size) % NUM_SOURCES
    hist_dst = NUM_SOURCES + torch.arange(size)
    ev_src = torch.randint(0, NUM_SOURCES, (num_events,), generator=gen)
    ev_dst = NUM_SOURCES + torch.randint(0, size, (num_events,), generator=gen)
    data = validate(TemporalData(src=torch.cat([hist_src, ev_src]), dst=torch.cat([hist_dst, ev_dst]),
                                 t=torch.arange(size + num_events)))
    num_nodes = NUM_SOURCES + size
    catalog = build_catalog(data, "train", train_end=size)
    assert catalog.size == size
    model = EdgeBank(num_nodes)
    model.update(data[:size])
    t = data.t

    def segment(start, end):
        return Segment("eval", start, end, int(t[start]), int(t[end - 1]))

    def run(seg):
        if mode == "evaluate":
            evaluate(model, data, seg, Protocol(replay="fixed", warm=False), catalog=catalog, sampler=None,
                     tuning=Tuning(check_state=False, use_shortcut=False, candidate_budget=budget))
            return
        events = seg.select(data)
        with torch.no_grad():
            for batch in TimestampBatchLoader(events, 200):
                pos = model.score(batch.src, batch.dst, batch.t)
                all_entity_counts(model, batch.src, batch.dst, batch.t, pos, catalog,
                                  candidate_budget=budget, use_shortcut=False)

    run(segment(size, size + 2))  # untimed warm-up: first-call allocations are part of setup
    gc.collect()
    resettable = reset_peak()
    baseline = current_rss() if resettable else peak_rss()
    start = time.perf_counter()
    run(segment(size, size + num_events))
    seconds = time.perf_counter() - start
    peak = peak_rss()
    return {"size": size, "mode": mode, "events": num_events, "budget": budget, "baseline": baseline,
            "peak": peak, "delta": max(peak - baseline, 0), "seconds": seconds, "reset": resettable}


def mib(x: float) -> str:
    return f"{x / 2**20:,.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--events", type=int, default=200, help="evaluated events")
    parser.add_argument("--budget", type=int, default=2**20, help="candidate_budget ((event, item) scores per chunk)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--child", nargs=2, metavar=("SIZE", "MODE"), help=argparse.SUPPRESS)
    add_results_arg(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.events, args.budget, args.child[1])))
        return

    print_header("Peak memory of all-entity ranking (chunked scoring, use_shortcut=False) vs catalog size")
    print(f"setting : {args.events} evaluated events, candidate_budget = {args.budget:,} scores per chunk, "
          f"EdgeBank; each row is a fresh subprocess")
    results = []
    for size in args.sizes:
        for mode in args.modes:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", str(size), mode, "--events", str(args.events),
                   "--budget", str(args.budget), "--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = []
    for r in results:
        full = r["events"] * r["size"] * 8
        rows.append([f"{r['size']:,}", r["mode"], mib(full), mib(r["delta"]), f"{r['delta'] / full:.3f}",
                     mib(r["baseline"]), f"{r['seconds']:.2f}"])
    print_table(["catalog", "mode", "full matrix (events x catalog x 8 B)", "peak delta", "delta / full",
                 "baseline RSS", "seconds"], rows)
    if not all(r["reset"] for r in results):
        print("note    : /proc/self/clear_refs unavailable: the baseline is the peak RSS after setup, so setup "
              "peaks may hide part of the ranking's peak")
    worst = max(r["delta"] for r in results)
    print(f"bound   : a chunk holds <= {args.budget:,} (event, item) scores ({mib(args.budget * 8)} as float64); the "
          f"largest peak delta, {mib(worst)} = {worst / args.budget:.0f} B per budget slot (score, key and mask "
          f"temporaries of one chunk, plus allocator caching), stays flat once the catalog fills a chunk, while "
          f"the full matrix grows as events x catalog")
    print(f"command : {command_line()}")
    save_results(args)


if __name__ == "__main__":
    main()
