"""What tgeval's deterministic CPU training costs, and what it buys.

``tgeval.training.train.train_epoch`` runs its batches under ``tgeval.deterministic()`` on a CPU: with two
or more threads, the backward of indexing (``index_put_`` with ``accumulate=True``) otherwise adds
in thread order, and two runs from the same seed end with different parameters. Here TGN (widths
100, 10 neighbours, Adam 1e-4, batches of 200, one uniform negative; as in
``bench_tgn_train.py``) trains one epoch on the first ``--num-events`` events of Wikipedia's
training segment, ``--repeat`` times each way, interleaved in one process: with the
deterministic kernels (tgeval's choice) and without them (the context replaced by a no-op).
Reported: events/s (median, best) each way, their ratio, and the largest parameter difference
between the repeats of each way (0 means bit-identical runs).

Run: python benchmarks/bench_deterministic_train.py [--num-events 20000] [--repeat 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import contextlib

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (add_common_args, apply_common_args, best, group_end, load_wikipedia, median, print_header,
                     print_table, save_results)
from bench_tgn_train import BATCH_SIZE, LR, NUM_NEIGHBORS, WIDTH, num_nodes_of, range_catalog, with_zero_message

import tgeval.training.train
from tgeval.training.train import Recipe
from tgeval import chronological_split
from tgeval.models.tgn import TGN
from tgeval.models.config import TGNConfig
from tgeval.samplers import UniformSampler


def train_once(data, segment, num_nodes: int, catalog) -> tuple[float, dict]:
    torch.manual_seed(0)
    model = TGN(TGNConfig(num_nodes, 1, memory_dim=WIDTH, time_dim=WIDTH, embedding_dim=WIDTH,
                          num_neighbors=NUM_NEIGHBORS))
    stats = tgeval.training.train.train_epoch(model, data, segment,
                                              recipe=Recipe(UniformSampler(catalog), "bce", batch_size=BATCH_SIZE),
                                              optimizer=torch.optim.Adam(model.parameters(), lr=LR))
    return stats["events_per_second"], {k: v.detach().clone() for k, v in model.named_parameters()}


def largest_difference(runs: list[dict]) -> float:
    return max(float((run[k] - runs[0][k]).abs().max()) for run in runs[1:] for k in run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--num-events", type=int, default=20_000, help="train on the first N training events")
    parser.set_defaults(threads=2)
    args = parser.parse_args()
    apply_common_args(args)
    data, source = load_wikipedia(args.data_dir)
    data = with_zero_message(data)
    split = chronological_split(data)
    end = group_end(data.t, 0, args.num_events, split.train.end)
    segment = (0, end)
    catalog = range_catalog(data.dst[:end], num_nodes_of(data))
    print_header(f"deterministic CPU training: TGN, one epoch on {end} events of {source}")
    kernels = tgeval.training.train.deterministic
    speeds: dict[str, list[float]] = {"deterministic (tgeval)": [], "default kernels": []}
    params: dict[str, list[dict]] = {name: [] for name in speeds}
    train_once(data, (0, group_end(data.t, 0, 2000, end)), num_nodes_of(data), catalog)  # untimed warm-up
    try:
        for _ in range(args.repeat):
            for name in speeds:
                tgeval.training.train.deterministic = kernels if name.startswith("deterministic") else contextlib.nullcontext
                speed, weights = train_once(data, segment, num_nodes_of(data), catalog)
                speeds[name].append(speed)
                params[name].append(weights)
    finally:
        tgeval.training.train.deterministic = kernels
    rows = [(name, f"{median(v):,.0f}", f"{best(v):,.0f}", f"{largest_difference(params[name]):.3g}")
            for name, v in speeds.items()]
    print_table(("kernels", "events/s (median)", "events/s (best)", "max |param diff| between repeats"), rows)
    ratio = median(speeds["deterministic (tgeval)"]) / median(speeds["default kernels"])
    print(f"deterministic / default throughput (medians): {ratio:.2f}x")
    for name, values in speeds.items():
        print(f"{name}: " + ", ".join(f"{v:,.0f}" for v in values) + " events/s")
    save_results(args)


if __name__ == "__main__":
    main()
