"""Why TGN's rebuilt-state numbers are noisy: the memory training writes vs the one the final weights rebuild.

UCI with DyGLib's TGN settings (``reproduce_dyglib.build("tgn")``: zero features of width 172,
memory 172, 10 neighbours; Adam, batches of 200, one uniform training-destination negative,
seed 0). After each epoch of ``train_epoch``:

* the **training state** (the memory training left, written with each step's weights) is
  compared with the **rebuilt state** (``warm_up`` over the training events with the final
  weights): the mean L2 distance between a node's two memories, against the mean memory norm,
  over the nodes with an event;
* validation AP (DyGLib's negatives: uniform over every destination, one per positive, mean of
  per-batch AP) from each state: ``evaluate(..., warm=False)`` from the training state and
  ``evaluate(..., warm=True)``, which rebuilds it;
* the training loss.

A control with learning rate 0 (``--control``) must give distance 0: training and ``update``
apply the same transition, so any distance comes from the weights changing along the way.

Run: python benchmarks/diagnose_rebuilt_state.py [--epochs 8] [--lr 1e-4] [--control] [--threads 1]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_results_arg, print_header, print_table, save_results
from reproduce_dyglib import build, dyglib_setting

from tgeval import evaluate
from tgeval.eval.engine import warm_up
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch


def run(lr: float, epochs: int) -> list[list]:
    data, split, num_nodes, everything, train_dst = dyglib_setting()
    torch.manual_seed(0)
    model = build("tgn", num_nodes)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    rows = []
    for epoch in range(epochs):
        stats = train_epoch(model, data, split.train,
                            recipe=Recipe(UniformSampler(train_dst), "bce", num_negatives=1, batch_size=200, seed=0),
                            optimizer=optimizer, epoch=epoch)
        model.eval()
        trained = model.snapshot()
        memory, active = model.memory.memory.clone(), model.memory.last_update > 0
        ap = {}
        for warm in (False, True):  # from the training state, then rebuilt
            model.restore(trained)
            result = evaluate(model, data, split.val, Protocol(num_negatives=1, batch_size=200, seed=0, warm=warm),
                              sampler=UniformSampler(everything))
            ap[warm] = result.metrics["sampled"]["ap"]["per_batch_mean"]
        model.reset_state()
        with torch.no_grad():
            warm_up(model, data[: split.train.end], batch_size=200)
        distance = (model.memory.memory - memory).norm(dim=1)[active].mean()
        rows.append([lr, epoch + 1, f"{stats['loss']:.4f}", f"{float(distance):.3f}",
                     f"{float(memory[active].norm(dim=1).mean()):.3f}", f"{ap[False]:.4f}", f"{ap[True]:.4f}"])
        print(f"  lr {lr}, epoch {epoch + 1}: {rows[-1][2:]}", flush=True)
        model.restore(trained)  # the next epoch resets the state anyway
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--control", action="store_true", help="also one epoch at learning rate 0")
    parser.add_argument("--threads", type=int, default=1)
    add_results_arg(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("TGN on UCI: the training state against the state rebuilt with the final weights")
    rows = run(0.0, 1) if args.control else []
    rows += run(args.lr, args.epochs)
    print(f"memory distance: mean over nodes with an event of the L2 distance between the training state's and the "
          f"rebuilt state's memory; validation AP: DyGLib's negatives, mean of per-batch AP; torch threads "
          f"{torch.get_num_threads()}")
    print_table(["lr", "epoch", "training loss", "memory distance", "memory norm", "val AP, training state",
                 "val AP, rebuilt"], rows)
    save_results(args)


if __name__ == "__main__":
    main()
