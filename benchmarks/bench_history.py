"""Exact per-timestamp history inside merged batches: its price, its effect, and a linear warm-up.

1. **Cost and effect of ``history="exact"``** on UCI and Wikipedia (70/15/15 chronological
   split, test segment, online protocol, batches of whole timestamp groups of <= 200 events):
   EdgeBank with K = 20 uniform negatives (its own ``UniformSampler``, 'train' catalog) and
   all-entity (the ``catalog_counts`` shortcut), under ``history="exact"`` (the default) and
   ``"batch"`` (the history at each batch's start, as TGB and DyGLib). An exact pass with a
   history-free sampler scores consecutive batches in one step (``EXACT_STEP_EVENTS``); it is
   also timed with one step per batch (``EXACT_STEP_EVENTS = 0``), the price of the
   within-batch lookups alone. Repetitions are interleaved; events/s is
   ``result.performance["events_per_second"]`` (the replay loop). The script asserts that
   both exact passes at batch 200 give the same all-entity counts and sampled scores as one
   timestamp group per batch (the per-timestamp reference), and prints the MRRs and the
   share of events with history inside their batch.
2. **Warm-up** of EdgeBank from synthetic histories of 10^5 .. 10^7 events (uniform random
   pairs over 10^5 nodes, 10 events per timestamp): ``warm_up`` (an ``exact_history`` model
   is fed in batches of ``WARM_UP_EVENTS``) against the updates of an online pass over the same
   events (``update`` per timestamp batch of 200, one sorted merge each, as before this change
   for warm-ups too); that replay is run up to ``--max-replay`` events. Per-event times should
   be flat.

Run: python benchmarks/bench_history.py [--data-dir DIR] [--repeat 5] [--threads 1]
         [--warm-sizes 100000,1000000,3000000,10000000] [--max-replay 1000000]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_common_args, apply_common_args, best, median, print_header, print_table, save_results, timed
from torch_geometric.data import TemporalData

from tgeval import Protocol, TimestampBatchLoader, build_catalog, chronological_split, evaluate
from tgeval.data.datasets import load_dataset
from tgeval.eval import engine
from tgeval.eval.engine import warm_up
from tgeval.stream.walk import WARM_UP_EVENTS
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler

K = 20
BATCH_SIZE = 200


def exact_cost(name: str, repeat: int) -> list[list[str]]:
    data, info = load_dataset(name)
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=info.num_nodes)

    def run(kind: str, history: str, batch_size: int = BATCH_SIZE):
        k, options = (K, dict(sampler=UniformSampler(catalog))) if kind == "sampled" else (20, dict(catalog=catalog))
        step_events = engine.EXACT_STEP_EVENTS
        if history == "exact per batch":
            history, engine.EXACT_STEP_EVENTS = "exact", 0
        try:
            return evaluate(EdgeBank(info.num_nodes), data, split.test,
                            Protocol(history=history, num_negatives=k, batch_size=batch_size), **options)
        finally:
            engine.EXACT_STEP_EVENTS = step_events

    rows = []
    for kind in ("sampled", "all-entity"):
        metric = "sampled" if kind == "sampled" else "all_entity"
        reference = run(kind, "batch", batch_size=1)  # one timestamp group per batch: exact by construction
        timings: dict[str, list[float]] = {"exact": [], "exact per batch": [], "batch": []}
        results = {}
        for _ in range(repeat):
            for history in timings:
                results[history] = run(kind, history)
                timings[history].append(results[history].performance["events_per_second"])
        for key in ("score", "neg_score", "above", "equal"):
            for history in ("exact", "exact per batch"):
                if key in reference.records:
                    assert torch.equal(results[history].records[key], reference.records[key]), (name, kind, key)
        mrr = {h: results[h].metrics[metric]["mrr"]["micro"] for h in results}
        share = results["batch"].manifest["history"]["same_batch_fraction"]
        ratio = lambda h: (f"{best(timings[h]) / best(timings['batch']):.2f}x / "  # noqa: E731
                           f"{median(timings[h]) / median(timings['batch']):.2f}x")
        rows.append([name, kind, f"{best(timings['exact']):,.0f}", results["exact"].performance["num_steps"],
                     f"{best(timings['exact per batch']):,.0f}", f"{best(timings['batch']):,.0f}",
                     results["batch"].performance["num_steps"], ratio("exact"), ratio("exact per batch"),
                     f"{mrr['exact']:.4f}", f"{mrr['batch']:.4f}",
                     f"{(mrr['batch'] - mrr['exact']) / mrr['exact']:+.0%}", f"{share:.1%}"])
    return rows


def synthetic_history(num_events: int, num_nodes: int = 100_000, seed: int = 0) -> TemporalData:
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_events,), generator=gen)
    dst = torch.randint(0, num_nodes, (num_events,), generator=gen)
    return TemporalData(src=src, dst=dst, t=torch.arange(num_events) // 10)


def warm_up_rows(sizes: list[int], max_replay: int) -> list[list[str]]:
    rows = []
    for size in sizes:
        data = synthetic_history(size)
        warm_seconds, _ = timed(lambda: warm_up(EdgeBank(100_000), data, batch_size=BATCH_SIZE))
        replay_cell, ratio = "not run", "n/a"
        if size <= max_replay:
            model = EdgeBank(100_000)
            replay_seconds, _ = timed(lambda: [model.update(batch) for batch in TimestampBatchLoader(data, BATCH_SIZE)])
            replay_cell = f"{replay_seconds:.2f} s ({replay_seconds / size * 1e6:.2f} us/event)"
            ratio = f"{warm_seconds / replay_seconds:.3f}x"
        rows.append([f"{size:,}", f"{warm_seconds:.2f} s ({warm_seconds / size * 1e6:.3f} us/event)", replay_cell,
                     ratio])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--datasets", default="uci,wikipedia")
    parser.add_argument("--warm-sizes", default="100000,1000000,3000000,10000000")
    parser.add_argument("--max-replay", type=int, default=1_000_000,
                        help="largest history also replayed in batches of 200 (the replay grows with the bank)")
    args = parser.parse_args()
    apply_common_args(args)
    print_header("history='exact' vs 'batch' (EdgeBank, online, batches <= 200), and warm-up")
    rows = []
    for name in filter(None, args.datasets.split(",")):
        rows += exact_cost(name, args.repeat)
    print(f"check   : exact at batch {BATCH_SIZE} (in steps of <= {engine.EXACT_STEP_EVENTS} events, and one step per "
          f"batch) = one timestamp group per batch (scores and all-entity counts), every test event")
    print(f"timing  : events/s of the replay loop, best of {args.repeat} interleaved runs; ratios to batch as "
          f"best / median; K = {K} uniform negatives for 'sampled'")
    print_table(["data", "metric", "exact ev/s", "steps", "exact, a step per batch", "batch ev/s", "batches",
                 "exact / batch", "exact per batch / batch", "MRR exact", "MRR batch",
                 "batch vs exact", "events with same-batch history"], rows)
    sizes = [int(s) for s in args.warm_sizes.split(",") if s]
    print(f"warm-up : EdgeBank from synthetic history (10^5 nodes, 10 events per timestamp); warm_up feeds "
          f"batches of {WARM_UP_EVENTS:,} events, the replay timestamp batches of {BATCH_SIZE}")
    print_table(["history events", "warm_up", "update per batch of 200", "warm_up / replay"],
                warm_up_rows(sizes, args.max_replay))
    save_results(args)


if __name__ == "__main__":
    main()
