"""What the state guards cost in training and evaluation, as a share of a batch step.

Setting: UCI (or ``--dataset wikipedia``), 70/15/15 chronological split, 'train' catalog,
batches of at most 200 events, tgeval's ``TGN`` and the guide's ``PygTGN`` (docs/guide/pyg-models.md) (PyG's recipe
widths: 100, 10 neighbours), freshly initialised with a fixed seed.

* **training**: one epoch over the first ``--num-events`` training events, K = 1, BCE, Adam,
  ``check_state=True`` (each batch's scoring under ``no_state_change(deep=False)``, each update
  through ``checked_update``) against ``check_state=False``, interleaved, best of ``--repeat``.
* **the checks alone**, median of 50: one scoring check (before + after) and the two walks
  over the model's attributes that ``checked_update`` adds to an update, each as a share of
  the guarded training batch step; and the evaluation guard (its default depth) as a share of
  an online all-entity evaluation step (``--eval-events`` test events).

Run: python benchmarks/bench_guard.py [--dataset uci|wikipedia] [--num-events 4000] [--eval-events 1000]
     [--data-dir DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (add_common_args, apply_common_args, head_segment, load_setting, median, print_header, print_table,
                     save_results)

from tgeval import Protocol, Segment, evaluate, no_state_change, replay
from tgeval.models import TGN, TGNConfig
from tgeval.samplers import UniformSampler
from tgeval.stream.state import _hidden
from tgeval.training.train import Recipe, train_epoch
from tests.helpers import readme_pyg_tgn

BATCH_SIZE = 200
PygTGN, PygTGNConfig = readme_pyg_tgn()


def timed_median(fn, times: int = 50) -> float:
    seconds = []
    for _ in range(times):
        began = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - began)
    return median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("uci", "wikipedia"), default="uci")
    parser.add_argument("--num-events", type=int, default=4000, help="training events of the timed epoch")
    parser.add_argument("--eval-events", type=int, default=1000, help="test events of the evaluation step")
    add_common_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("the state guards: training and evaluation, as a share of a batch step")
    data, how, split, catalog, num_nodes = load_setting(args.dataset, args.data_dir)
    sampler = UniformSampler(catalog)
    train = head_segment(data, split.train, args.num_events)
    test = head_segment(data, split.test, args.eval_events)
    print(f"data    : {how}: {data.num_events:,} events, {num_nodes:,} nodes; trained: the first {train.num_events:,} "
          f"training events; evaluated: the first {test.num_events:,} test events, all-entity, online; batches <= "
          f"{BATCH_SIZE}")

    builds = {"tgeval TGN": lambda: TGN(TGNConfig(num_nodes, msg_dim=1)),
              "PygTGN (guide)": lambda: PygTGN(PygTGNConfig(num_nodes, msg_dim=1))}
    rows, shares = [], []
    for name, build in builds.items():
        torch.manual_seed(0)
        model = build()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        epochs = {True: [], False: []}
        for repeat in range(args.repeat + 1):  # the first round warms up, untimed
            for check in (True, False):
                stats = train_epoch(model, data, train, recipe=Recipe(sampler, "bce", batch_size=BATCH_SIZE),
                                    optimizer=optimizer, epoch=repeat, check_state=check)
                if repeat:
                    epochs[check].append(stats["seconds"])
        num_batches = stats["num_batches"]
        step = min(epochs[True]) / num_batches
        model.train()
        scoring = timed_median(lambda: _enter_exit(model, False))
        walks = 2 * timed_median(lambda: _hidden(model))
        rows.append([name, f"{step * 1e3:.2f}", f"{min(epochs[False]) * 1e3 / num_batches:.2f}",
                     f"{min(epochs[False]) / min(epochs[True]):.2f}", f"{scoring * 1e3:.3f} ({scoring / step:.1%})",
                     f"{walks * 1e3:.3f} ({walks / step:.1%})"])
        model.eval()
        replay(model, data, Segment("history", 0, test.start, None, None), batch_size=BATCH_SIZE)
        state = model.snapshot()
        result = evaluate(model, data, test, Protocol(batch_size=BATCH_SIZE, warm=False), catalog=catalog)
        model.restore(state)
        eval_step = result.performance["seconds"] / result.performance["num_steps"]
        guard = timed_median(lambda: _enter_exit(model, None))
        shares.append([name, f"{eval_step * 1e3:.2f}", f"{guard * 1e3:.3f} ({guard / eval_step:.1%})"])
    print(f"training: one epoch, ms per batch step (best of {args.repeat}), and the checks alone (median of 50, "
          f"ms and share of a guarded training step)")
    print_table(["model", "guarded", "unguarded", "speed guarded / unguarded", "scoring check",
                 "checked_update's walks"], rows)
    print("evaluation: ms per online all-entity step, and the evaluation guard alone (default depth)")
    print_table(["model", "step", "guard check"], shares)
    save_results(args)


def _enter_exit(model, deep) -> None:
    with no_state_change(model, deep=deep):
        pass


if __name__ == "__main__":
    main()
