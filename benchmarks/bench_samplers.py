"""Sampling throughput (negatives/s) of every registered sampler on the Wikipedia test segment.

Setting: 70/15/15 chronological split, 'train' catalog, K = 20, batches of whole timestamp
groups of <= 200 events in canonical replay order. Each sampler is reset and warmed on the
events before the test segment (not timed); the timed loop replays the test segment:
``sample(batch, K)`` then ``observe(batch)`` (online), exactly as ``tgeval.evaluate``.
History-based samplers get ``replace=true`` (their per-source pools can be smaller than K).
Ratios are per negative, against tgeval's uniform sampler (``x uniform`` < 1: slower) and
against a straightforward Python reference for uniform sampling: per event,
``random.sample`` over the catalog minus its exclusions (the source and the destinations of
the same source at the same timestamp).

Run: python benchmarks/bench_samplers.py [--data-dir DIR] [--repeat 1] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_common_args, load_wikipedia, print_header, print_table, save_results

from tgeval import TimestampBatchLoader, build_catalog, chronological_split
from tgeval.data.groups import canonical_order
from tgeval.data.validation import permute_events
from tgeval.errors import InputPathError
from tgeval.samplers import MixtureSampler, names
from tgeval.samplers.registry import from_spec

K = 20
BATCH_SIZE = 200
REPLACE = {"historical", "source_history", "inductive", "popularity", "degree", "degree_time"}
FROM_FILE = ("fixed", "tgb")  # samplers that read stored negatives instead of drawing
MIXTURE = ("historical:replace=true", "uniform")  # built directly: a mixture spec gives components default options


def spec_of(name: str) -> str:
    if name == "mixture":
        return f"mixture(0.5 {MIXTURE[0]}, 0.5 {MIXTURE[1]})"
    return f"{name}:replace=true" if name in REPLACE else name


def time_sampler(sampler, history, events, seed=0) -> float:
    sampler.reset_state()
    for batch in TimestampBatchLoader(history, BATCH_SIZE):
        sampler.observe(batch)
    generator = torch.Generator().manual_seed(seed)
    batches = list(TimestampBatchLoader(events, BATCH_SIZE))
    start = time.perf_counter()
    with torch.no_grad():
        for batch in batches:
            sampler.sample(batch, K, generator)
            sampler.observe(batch)
    return time.perf_counter() - start


def python_uniform(catalog_items: list[int], events, seed=0) -> float:
    """random.sample per event over the catalog minus the source and its simultaneous positives."""
    rng = random.Random(seed)
    src, dst, t = events.src.tolist(), events.dst.tolist(), events.t.tolist()
    start = time.perf_counter()
    group: dict[tuple[int, int], set[int]] = {}
    for u, v, s in zip(src, dst, t):
        group.setdefault((u, s), set()).add(v)
    catalog = set(catalog_items)
    for u, s in zip(src, t):
        pool = list(catalog - group[(u, s)] - {u})
        rng.sample(pool, K)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.set_defaults(repeat=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("negative-sampler throughput, Wikipedia test segment, K=20, online observe")
    try:
        data, how = load_wikipedia(args.data_dir)
    except InputPathError as exc:
        print(f"skipped: Wikipedia is not available ({exc})")
        return
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end)
    order = canonical_order(data.src, data.dst, data.t)  # replay order, as tgeval.evaluate
    replay = permute_events(data, order)
    replay.e_id = order
    replay.position = torch.arange(replay.num_events)
    history, events = replay[: split.test.start], replay[split.test.start : split.test.end]
    total = events.num_events * K
    print(f"data    : {how}; {data.num_events} events, test segment {events.num_events} events, "
          f"catalog 'train' {catalog.size} items, {total} negatives per replay, repeat {args.repeat} (best)")
    results = {}
    for name in names():
        if name in FROM_FILE:
            print(f"skip    : {name!r} replays negatives read from a file (timed by its tests, not here)")
            continue
        spec = spec_of(name)
        try:
            build = dict(data=data, split=split, catalog=catalog, segment="test")
            sampler = (MixtureSampler([from_spec(part, **build) for part in MIXTURE], [0.5, 0.5])
                       if name == "mixture" else from_spec(spec, **build))
            seconds = min(time_sampler(sampler, history, events) for _ in range(args.repeat))
            results[name] = (spec, seconds, None)
        except Exception as exc:  # report, keep going
            results[name] = (spec, None, f"{type(exc).__name__}: {str(exc)[:60]}")
    reference = min(python_uniform(catalog.items.tolist(), events) for _ in range(args.repeat))
    uniform = results["uniform"][1]
    rows = [["python random.sample (reference)", f"{total / reference:,.0f}", f"{reference:.2f}",
             f"{uniform / reference:.2f}" if uniform else "-", "1.00"]]
    for name, (spec, seconds, error) in results.items():
        if seconds is None:
            rows.append([spec, "error", error, "-", "-"])
            continue
        rows.append([spec, f"{total / seconds:,.0f}", f"{seconds:.2f}",
                     f"{uniform / seconds:.2f}" if uniform else "-", f"{reference / seconds:.2f}"])
    print_table(["sampler (spec)", "negatives/s", "seconds", "x tgeval uniform", "x python reference"], rows)
    save_results(args)


if __name__ == "__main__":
    main()
