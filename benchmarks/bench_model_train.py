"""Training throughput of the three neural reference models, and what bounds GraphMixer's.

All models train through ``tgeval.training.train.train_epoch`` on the same events (the head of
Wikipedia's training segment, 70/15/15 split, a message of one zero column), with the same
recipe: batches of whole timestamp groups of at most 200 events, one negative per positive
drawn uniformly over the training segment's destination range, Adam with learning rate 1e-4,
binary cross-entropy; each model with its default widths (TGN and DyRep: memory, time and
embedding width 100, 10 neighbours; GraphMixer: K = 20 tokens, two mixer blocks of width 100).

Rows:

* ``TGN``, ``DyRep``, ``GraphMixer``: the models as shipped;
* ``GraphMixer, nn.Dropout masks``: the same GraphMixer with every ``BitDropout`` replaced by
  ``nn.Dropout`` (the layer it replaced; the same distribution, a different random stream):
  the baseline of the dropout change, in the same run.

Runs are interleaved (every model once, then again, ...) after one untimed warm-up run of
each; each timed run builds a fresh model (untimed) and trains one epoch; the whole
``train_epoch`` call is timed.

**GraphMixer's floor.** ``torch.utils.flop_counter.FlopCounterMode`` counts the matrix-product
FLOPs of one GraphMixer epoch (forward and backward); a ``[n K, H] x [H, 4H]`` product, the
shape of its channel MLP, measured in the same process, gives this machine's matrix-product
rate. Their quotient is the time the products alone need: an upper bound on the events/s of
any implementation that computes the same model in float32 on this many threads.

Run: python benchmarks/bench_model_train.py [--num-events 20000] [--data-dir DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import time
from typing import Callable

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import best, group_end, median, print_header, print_table, save_results
from bench_tgn_train import num_nodes_of, range_catalog, training_args, training_head
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from tgeval.models import DyRep, GraphMixer, TGN, DyRepConfig, GraphMixerConfig, TGNConfig
from tgeval.models.layers import BitDropout
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch

BATCH_SIZE = 200
LR = 1e-4


def with_torch_dropout(model: GraphMixer) -> GraphMixer:
    """``model`` with every :class:`BitDropout` swapped for ``nn.Dropout`` of the same rate."""
    for module in model.modules():
        for name, child in module.named_children():
            if isinstance(child, BitDropout):
                setattr(module, name, nn.Dropout(child.p))
    return model


def matmul_rate(rows: int, dim: int) -> float:
    """FLOP/s of ``[rows, dim] x [dim, 4 dim]`` plus bias (best of 20), the channel MLP's shape."""
    a, w, b = torch.randn(rows, dim), torch.randn(4 * dim, dim), torch.randn(4 * dim)
    torch.addmm(b, a, w.t())
    times = []
    for _ in range(20):
        began = time.perf_counter()
        torch.addmm(b, a, w.t())
        times.append(time.perf_counter() - began)
    return 2 * rows * dim * 4 * dim / min(times)


def main() -> None:
    args = training_args(__doc__.split("\n\n")[0], 20_000)
    print_header("Training throughput of TGN, DyRep and GraphMixer (train_epoch), Wikipedia, 1 epoch")
    data, how, split, end = training_head(args)
    num_nodes = num_nodes_of(data)
    catalog = range_catalog(data.dst[:end], num_nodes)
    print(f"data    : {how}; msg = one zero column; training on events [0, {end}); negatives uniform over "
          f"{catalog.size} destination ids; batch {BATCH_SIZE}, Adam lr {LR}, BCE")

    builders: dict[str, Callable[[], nn.Module]] = {
        "TGN": lambda: TGN(TGNConfig(num_nodes, msg_dim=1)),
        "DyRep": lambda: DyRep(DyRepConfig(num_nodes, msg_dim=1)),
        "GraphMixer": lambda: GraphMixer(GraphMixerConfig(num_nodes, msg_dim=1)),
        "GraphMixer, nn.Dropout masks":
            lambda: with_torch_dropout(GraphMixer(GraphMixerConfig(num_nodes, msg_dim=1))),
    }

    def run(name: str, stop: int) -> dict:
        torch.manual_seed(args.seed)
        model = builders[name]()
        optimizer = torch.optim.Adam(model.parameters(), lr=LR)
        began = time.perf_counter()
        out = train_epoch(model, data, (0, stop),
                          recipe=Recipe(UniformSampler(catalog), "bce", num_negatives=1, batch_size=BATCH_SIZE),
                          optimizer=optimizer, epoch=0)
        return {**out, "events_per_second": out["num_events"] / (time.perf_counter() - began)}

    warm_end = group_end(data.t, 0, 1_000, end)
    for name in builders:  # untimed: first-call costs (allocator, kernel selection)
        run(name, warm_end)
    rows: dict[str, list[dict]] = {name: [] for name in builders}
    for _ in range(args.repeat):
        for name in builders:
            rows[name].append(run(name, end))

    table = []
    for name, runs in rows.items():
        eps = [r["events_per_second"] for r in runs]
        table.append([name, f"{best(eps):,.0f}", f"{median(eps):,.0f}", runs[0]["num_batches"],
                      f"{median([r['loss'] for r in runs]):.4f}"])
    print(f"timing  : events/s over {end} events, best and median of {args.repeat} interleaved runs "
          f"(torch threads {torch.get_num_threads()})")
    print_table(["model", "events/s (best)", "events/s (median)", "batches", "mean loss"], table)
    mixer = best([r["events_per_second"] for r in rows["GraphMixer"]])
    baseline = best([r["events_per_second"] for r in rows["GraphMixer, nn.Dropout masks"]])
    tgn = best([r["events_per_second"] for r in rows["TGN"]])
    print(f"ratios  : GraphMixer / its nn.Dropout baseline {mixer / baseline:.2f}; TGN / GraphMixer {tgn / mixer:.1f}; "
          f"DyRep / TGN {best([r['events_per_second'] for r in rows['DyRep']]) / tgn:.2f}")

    torch.manual_seed(args.seed)
    model = GraphMixer(GraphMixerConfig(num_nodes, msg_dim=1))
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    with FlopCounterMode(display=False) as counter:
        train_epoch(model, data, (0, end),
                    recipe=Recipe(UniformSampler(catalog), "bce", num_negatives=1, batch_size=BATCH_SIZE),
                    optimizer=optimizer, epoch=0)
    flops = counter.get_total_flops()
    rate = matmul_rate(265 * model.config.num_neighbors, model.config.hidden_dim)
    floor = end / (flops / rate)
    print(f"floor   : GraphMixer's matrix products (forward and backward) at this machine's rate for the "
          f"[n K, H] x [H, 4H] product bound its events/s (the target 5,000 events/s "
          f"{'is' if floor >= 5000 else 'is not'} reachable without fewer FLOPs)")
    print_table(["model", "MFLOP per event", "GFLOP/s", "events/s bound", "reached (best)"],
                [["GraphMixer", f"{flops / end / 1e6:.1f}", f"{rate / 1e9:.1f}", f"{floor:,.0f}",
                  f"{mixer / floor:.0%}"]])
    save_results(args)


if __name__ == "__main__":
    main()
