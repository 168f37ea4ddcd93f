"""CPU proxy of GPU launch and sync counts: aten operators per replay batch (issue 10).

A GPU step pays a launch for every operator and stalls on every operator whose output
shape depends on the data (the host must read a size back). On any machine the same code
can be counted: this script profiles ``tgeval.evaluate`` with ``torch.profiler`` on the CPU
and counts, per batch,

* every aten event the profiler records (nested ones included), and
* the sync-forcing ones: ``aten::nonzero``, ``aten::_unique2``, ``aten::masked_select`` and
  ``aten::_local_scalar_dense`` (``.item()``, ``int(tensor)``, ``bool(tensor)``), plus tgeval's
  own explicit device-to-host reads (``tgeval.core.device.host_ints``, profiler range
  ``tgeval.host_read``: one read of several sizes, e.g. the nodes of a batch and their pending
  messages), which on a CPU cost no aten event but on a GPU wait for the device like the others.

Setting (as the issue states): 1 torch thread, Wikipedia, 70/15/15 split, the first 10
timestamp batches (<= 200 events) of the test segment, exact all-entity ranking over the
'train' catalog, online protocol, with and without K = 20 uniform negatives; EdgeBank and
an untrained TGN (PyG recipe widths), the state warmed on the history first (not counted).

Two figures per run:

* **per batch**: events inside the engine's ``tgeval.replay.step`` profiler ranges (score,
  rank, record, update of one step), divided by the number of batches. A step is one batch,
  except in EdgeBank's exact-history passes, which score consecutive batches in one step
  (``EXACT_STEP_EVENTS``; the steps are printed): their per-batch figure is the step's
  operators spread over its batches;
* **per pass**: everything else ``evaluate`` does once (validation, canonical order, strata,
  the candidate plan and the negatives of each window of batches, metric summary), total.

``evaluate total / 10`` is also printed: it is how the issue's "now" figures were counted
(per-pass work spread over the 10 batches).

The proxy counts the GPU code path: TGN's attention keeps the padding edges of empty neighbour
slots (``GraphAttentionEmbedding.compact = False``; on a CPU tgeval drops them by default,
one ``nonzero`` per attention call, because there no device waits for it).

Run: python benchmarks/bench_ops.py [--data-dir DIR] [--batches 10] [--models edgebank tgn] [--breakdown]
         [--history exact|batch]
"""

from __future__ import annotations

import argparse
import collections
import logging

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_common_args, head_segment, inside_range, load_wikipedia, print_header, print_table, save_results
from torch.profiler import ProfilerActivity, profile

from tgeval import Protocol, build_catalog, chronological_split, evaluate, warm_up
from tgeval.core.device import HOST_READ
from tgeval.stream.loader import timestamp_batch_boundaries
from tgeval.models import TGN, EdgeBank, TGNConfig
from tgeval.models.layers import GraphAttentionEmbedding
from tgeval.samplers import UniformSampler

SYNC_OPS = ("aten::nonzero", "aten::_unique2", "aten::masked_select", "aten::_local_scalar_dense")
STEP_RANGE = "tgeval.replay.step"
TARGETS = {("edgebank", 20): (150, 2), ("tgn", 20): (2500, 4)}  # (aten ops, sync ops) per batch


def count(model, data, segment, catalog, k: int, breakdown: bool, history: str) -> dict:
    """Profile one ``evaluate`` of ``segment`` from the model's current state."""
    sampler = UniformSampler(catalog) if k else None
    state = model.snapshot()
    history = history if model.capabilities.exact_history else "batch"
    run = lambda: evaluate(model, data, segment,  # noqa: E731
                           Protocol(num_negatives=max(k, 1), warm=False, history=history),
                           sampler=sampler, catalog=catalog)
    run()  # warm-up: first-call allocations and lazy initialisation are not counted
    model.restore(state)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        result = run()
    model.restore(state)
    batches = result.performance["num_batches"]
    per_batch, per_pass = collections.Counter(), collections.Counter()
    for event in prof.events():
        if event.name.startswith("aten::") or event.name == HOST_READ:
            (per_batch if inside_range(event, STEP_RANGE) else per_pass)[event.name] += 1
    aten = lambda counter: sum(n for name, n in counter.items() if name.startswith("aten::"))  # noqa: E731
    syncs = lambda counter: sum(counter[name] for name in SYNC_OPS + (HOST_READ,))  # noqa: E731
    out = {"batches": batches, "steps": result.performance["num_steps"], "batch_ops": aten(per_batch) / batches, "batch_sync": syncs(per_batch) / batches,
           "pass_ops": aten(per_pass), "pass_sync": syncs(per_pass)}
    if breakdown:
        out["top"] = [(name, n / batches) for name, n in per_batch.most_common(25) if name.startswith("aten::")]
        out["sync_names"] = {name: per_batch[name] / batches for name in SYNC_OPS + (HOST_READ,) if per_batch[name]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(parser)
    parser.add_argument("--batches", type=int, default=10, help="test batches profiled (default 10)")
    parser.add_argument("--models", nargs="+", default=["edgebank", "tgn"], choices=["edgebank", "tgn"])
    parser.add_argument("--breakdown", action="store_true", help="print the most frequent operators per batch")
    parser.add_argument("--history", default="exact", choices=["exact", "batch"],
                        help="EdgeBank's history inside merged batches (TGN: always 'batch')")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    GraphAttentionEmbedding.compact = False  # the GPU path (see the module docstring)
    logging.getLogger("torch.profiler").setLevel(logging.ERROR)
    print_header("aten operators and sync-forcing operators per replay batch (CPU proxy)")
    data, how = load_wikipedia(args.data_dir)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=int(data.dst.max()) + 1)
    bounds = timestamp_batch_boundaries(data.t[split.test.start:split.test.end], 200)
    segment = head_segment(data, split.test, int(bounds[min(args.batches, bounds.numel() - 1)]))
    num_nodes = int(max(int(data.src.max()), int(data.dst.max()))) + 1
    print(f"data    : {how}; {segment.num_events} events of the test segment, 'train' catalog of "
          f"{catalog.size} items, online, batches <= 200, EdgeBank's history {args.history!r}")
    rows = []
    for name in args.models:
        model = EdgeBank(num_nodes) if name == "edgebank" else TGN(TGNConfig(num_nodes))
        warm_up(model, data[: segment.start], batch_size=200)
        for k in (0, 20):
            got = count(model, data, segment, catalog, k, args.breakdown, args.history)
            target = TARGETS.get((name, k))
            rows.append([name, k, got["batches"], got["steps"], f"{got['batch_ops']:.1f}", f"{got['batch_sync']:.1f}",
                         got["pass_ops"], got["pass_sync"],
                         f"{(got['batch_ops'] * got['batches'] + got['pass_ops']) / got['batches']:.0f}",
                         "-" if target is None else f"<= {target[0]} / <= {target[1]}"])
            if args.breakdown:
                print(f"{name}, K={k}: sync ops per batch {got['sync_names']}")
                print("  " + ", ".join(f"{op.replace('aten::', '')} {n:.1f}" for op, n in got["top"]))
    print_table(["model", "K", "batches", "steps", "aten ops / batch", "sync ops / batch", "per-pass aten ops",
                 "per-pass sync ops", "evaluate total / batches", "target (ops / sync per batch)"], rows)
    save_results(args)


if __name__ == "__main__":
    main()
