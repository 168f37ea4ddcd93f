"""Exact all-entity ranking of TGN over synthetic catalogs of 10^5 to 10^7 items on a CPU, and the
sharded path on 1 vs 2 gloo processes (issue 18).

Setting: a synthetic stream (``generate_events``, 600 events among 400 nodes, 70/30 split by
event index at a timestamp boundary) inside an id space of ``N`` nodes; the catalog is every
id, ``Catalog("custom", arange(N))``; TGN with the test widths (memory 8, time 4, embedding
8 = decoder hidden H, 3 neighbours), freshly initialised with seed 0; ``evaluate`` online,
all-entity only (no sampler), ``batch_size`` 20 (scaling) or 200 (speed-up), default ``candidate_budget`` 2^22, one
torch thread per process (``torch.set_num_threads(1)``).

* **scaling** (``--sizes``): each size in a fresh subprocess; ms/event of the steady state
  (every batch after the first, timed by the progress callback; the first batch also embeds
  every catalog node once and fills its decoder terms) and the whole pass; peak RSS
  (``resource.getrusage``) minus the RSS before the stream, the model and the catalog were
  built, per item.
* **speed-up** (``--speedup-items``): the same evaluation in one process and in two gloo
  processes (``evaluate(distributed=True)``, spawned with ``torch.multiprocessing``, TCP
  rendezvous on 127.0.0.1), each with one thread; the metrics are asserted equal; the
  speed-up of the steady state and of the pass, and the communication share: seconds inside
  ``torch.distributed.all_reduce`` (including waiting for the other rank) over the pass.

Every figure is the best of ``--repeat`` runs (the median is printed too): the machine has 2
cores shared with other work, so the 2-process figures depend on what else runs.

Run: python benchmarks/bench_large_catalog.py [--sizes 100000 1000000 10000000] [--events 100] [--batch-size 20]
     [--speedup-items 1000000] [--speedup-events 600] [--speedup-batch-size 200] [--repeat 3]
     [--parts scaling speedup] [--prefilter L]

With ``--prefilter L`` the scaling part also times ``Protocol(prefilter=L)``, the approximate
all-entity pass that scores only the ``L`` items with the highest candidate prior per step.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# _common puts the repository root on sys.path
from _common import add_results_arg, command_line, median, print_header, print_table, save_results
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tgeval import Protocol, evaluate
from tgeval.core import progress
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.data.synthetic import generate_events
from tgeval.models import TGN, TGNConfig

WIDTHS = dict(memory_dim=8, time_dim=4, embedding_dim=8, num_neighbors=3)


def _rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _setting(items: int, events: int):
    """The stream, its evaluated segment (the last ``events`` events, whole groups), TGN, the catalog."""
    data = generate_events(600, 400, seed=1)
    start = data.num_events - events
    while start > 0 and data.t[start - 1] == data.t[start]:
        start -= 1
    torch.manual_seed(0)
    model = TGN(TGNConfig(items, 1, **WIDTHS)).eval()
    catalog = Catalog("custom", torch.arange(items), None, items)
    segment = Segment("test", start, data.num_events, int(data.t[start]), int(data.t[-1]))
    return data, segment, model, catalog


def _timed_pass(items: int, events: int, batch_size: int, distributed: bool = False,
                prefilter: int | None = None) -> dict:
    """One evaluation; per-batch marks from the progress callback."""
    data, segment, model, catalog = _setting(items, events)
    marks: list[float] = []
    begin = time.perf_counter()
    with progress.reporting(lambda done, total: marks.append(time.perf_counter())):
        result = evaluate(model, data, segment, Protocol(batch_size=batch_size, prefilter=prefilter), catalog=catalog,
                          distributed=distributed)
    batch = result.records["batch"]
    sizes = torch.bincount(batch).tolist()
    loop = result.performance["seconds"]
    first = marks[0] - (marks[-1] - loop)  # the first batch: from the loop's start to its mark
    steady = (marks[-1] - marks[0]) / max(1, sum(sizes[1:]))
    return {"steady_ms_per_event": steady * 1e3, "pass_s": loop, "first_batch_s": first,
            "wall_s": time.perf_counter() - begin, "events": len(batch), "batches": len(sizes),
            "metrics": json.dumps(result.metrics, sort_keys=True)}


def _child(items: int, events: int, batch_size: int, prefilter: int | None) -> None:
    torch.set_num_threads(1)
    before = _rss_bytes()
    out = _timed_pass(items, events, batch_size, prefilter=prefilter)
    out.update(rss_before=before, rss_peak=_rss_bytes())
    out.pop("metrics")
    print(json.dumps(out))


def plot_scaling(sizes: list[int], ms_per_event: list[float], path: str) -> None:
    """Log-log plot of ms/event against catalog size, with the line of slope 1 through the first point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.loglog(sizes, ms_per_event, "o-", label="measured (best)")
    ax.loglog(sizes, [ms_per_event[0] * n / sizes[0] for n in sizes], "--", color="grey", label="linear in N")
    ax.set_xlabel("catalog items N")
    ax.set_ylabel("ms per event (steady state)")
    ax.set_title("TGN all-entity ranking, 1 thread")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def _child_runs(items: int, events: int, batch_size: int, repeat: int, prefilter: int | None) -> list[dict]:
    """``repeat`` passes, each in a fresh subprocess (its peak RSS is its own)."""
    extra = [] if prefilter is None else ["--prefilter", str(prefilter)]
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, __file__, "--child", str(items), "--events", str(events),
                               "--batch-size", str(batch_size), *extra], capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return runs


def scaling(sizes: list[int], events: int, batch_size: int, repeat: int, plot: str | None = None,
            prefilter: int | None = None) -> None:
    rows, best_ms, approx_rows = [], [], []
    for items in sizes:
        runs = _child_runs(items, events, batch_size, repeat, None)
        steady = [r["steady_ms_per_event"] for r in runs]
        best_ms.append(min(steady))
        best = min(runs, key=lambda r: r["steady_ms_per_event"])
        extra = min(r["rss_peak"] - r["rss_before"] for r in runs)
        rows.append([f"{items:,}", f"{min(steady):.2f}", f"{median(steady):.2f}",
                     f"{1e6 * min(steady) / items:.3f}", f"{min(r['pass_s'] for r in runs):.2f}",
                     f"{min(r['first_batch_s'] for r in runs):.2f}", f"{extra / 2**20:,.0f}",
                     f"{extra / items:.0f}", f"{best['events']} / {best['batches']}"])
        if prefilter is not None:
            approx = min(r["steady_ms_per_event"] for r in _child_runs(items, events, batch_size, repeat, prefilter))
            approx_rows.append([f"{items:,}", f"{min(steady):.2f}", f"{approx:.3f}", f"{min(steady) / approx:.1f}x"])
    print(f"\nscaling (1 process, 1 thread, batch_size {batch_size}; best of {repeat} runs, median beside it)")
    print_table(["items N", "ms/event (best)", "ms/event (median)", "ns/event/item", "pass s", "first batch s",
                 "peak RSS - base MiB", "bytes/item", "events / batches"], rows)
    if approx_rows:
        print(f"\nAPPROXIMATE pre-filter, Protocol(prefilter={prefilter}) (steady state, best of {repeat}; its error "
              f"is measured on real data by bench_prefilter.py)")
        print_table(["items N", "exact ms/event", "pre-filtered ms/event", "speed-up"], approx_rows)
    if plot is not None:
        plot_scaling(sizes, best_ms, plot)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank(rank: int, world: int, port: int, items: int, events: int, batch_size: int, path: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    spent = [0.0]
    reduce = dist.all_reduce

    def timed_all_reduce(*args, **kwargs):  # instrumentation of the benchmark only
        start = time.perf_counter()
        try:
            return reduce(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    dist.all_reduce = timed_all_reduce
    try:
        out = _timed_pass(items, events, batch_size, distributed=True)
        out["all_reduce_s"] = spent[0]
        if rank == 0:
            Path(path).write_text(json.dumps(out))
    finally:
        dist.all_reduce = reduce
        dist.destroy_process_group()


def _single(rank: int, items: int, events: int, batch_size: int, path: str) -> None:
    torch.set_num_threads(1)
    Path(path).write_text(json.dumps(_timed_pass(items, events, batch_size)))


def _spawned(world: int, items: int, events: int, batch_size: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "out.json")
        if world == 1:
            mp.start_processes(_single, args=(items, events, batch_size, path), nprocs=1, start_method="spawn")
        else:
            mp.start_processes(_rank, args=(world, _free_port(), items, events, batch_size, path), nprocs=world,
                               start_method="spawn")
        return json.loads(Path(path).read_text())


def speedup(items: int, events: int, batch_size: int, repeat: int) -> None:
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(repeat):  # interleaved, so that load changes hit both alike
        for world in (1, 2):
            runs[world].append(_spawned(world, items, events, batch_size))
    assert runs[1][0]["metrics"] == runs[2][0]["metrics"], "2 processes gave other metrics than 1"
    one, two = runs[1], runs[2]
    steady = {w: min(r["steady_ms_per_event"] for r in runs[w]) for w in runs}
    passes = {w: min(r["pass_s"] for r in runs[w]) for w in runs}
    share = [r["all_reduce_s"] / r["pass_s"] for r in two]
    print(f"\nspeed-up on {items:,} items (TGN, {one[0]['events']} events in {one[0]['batches']} batches of "
          f"<= {batch_size}; "
          f"1 thread per process; best of {repeat} interleaved runs, median beside it; metrics equal)")
    print_table(["processes", "ms/event steady (best)", "(median)", "pass s (best)", "(median)", "all_reduce share"],
                [[1, f"{steady[1]:.2f}", f"{median([r['steady_ms_per_event'] for r in one]):.2f}",
                  f"{passes[1]:.2f}", f"{median([r['pass_s'] for r in one]):.2f}", "-"],
                 [2, f"{steady[2]:.2f}", f"{median([r['steady_ms_per_event'] for r in two]):.2f}",
                  f"{passes[2]:.2f}", f"{median([r['pass_s'] for r in two]):.2f}",
                  f"{100 * min(share):.3f}% (median {100 * median(share):.3f}%)"]])
    ratio = steady[1] / steady[2]
    print(f"steady-state speed-up {ratio:.2f}x (target >= 1.7x: {'met' if ratio >= 1.7 else 'NOT met'}); "
          f"whole pass {passes[1] / passes[2]:.2f}x (the first batch embeds every node on every rank)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**5, 10**6, 10**7])
    parser.add_argument("--speedup-items", type=int, default=10**6)
    parser.add_argument("--events", type=int, default=100, help="evaluated events of the scaling part")
    parser.add_argument("--batch-size", type=int, default=20, help="batch size of the scaling part")
    parser.add_argument("--speedup-events", type=int, default=600)
    parser.add_argument("--speedup-batch-size", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts", nargs="+", choices=("scaling", "speedup"), default=["scaling", "speedup"])
    parser.add_argument("--plot", default=None, help="write the scaling part's log-log plot to this PNG file")
    parser.add_argument("--prefilter", type=int, default=None,
                        help="scaling part: also time the approximate pre-filter with this L")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    add_results_arg(parser)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.events, args.batch_size, args.prefilter)
        return
    torch.set_num_threads(1)
    print_header("exact all-entity ranking of TGN over large catalogs, and 1 vs 2 gloo processes")
    print(f"reproduce: {command_line()}")
    if "scaling" in args.parts:
        scaling(args.sizes, args.events, args.batch_size, args.repeat, args.plot, args.prefilter)
    if "speedup" in args.parts:
        speedup(args.speedup_items, args.speedup_events, args.speedup_batch_size, args.repeat)
    save_results(args)


if __name__ == "__main__":
    main()
