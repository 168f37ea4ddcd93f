"""Why tgeval's TGN trails PyG's loop under the rebuilt protocol: an ablation on Wikipedia.

PyG's recipe loop (``bench_tgn_train.PygRecipeTGN``) is moved toward tgeval's TGN one design
decision at a time, and each variant is trained and evaluated the same way:

* ``recipe``: PyG's ``examples/tgn.py`` (``LastAggregator``; memory and neighbours updated
  before the backward pass; PyG's ``TGNMemory``, whose training-mode GRU step also runs on
  nodes without a pending message, with a zero message and a last update of 0);
* ``+ latest-mean``: tgeval's ``LatestMeanAggregator`` (mean of the messages at the node's
  latest timestamp) instead of ``LastAggregator``;
* ``+ update after step``: memory and neighbours updated after ``optimizer.step()`` (tgeval's
  ``train_epoch`` order);
* ``+ no empty step``: a node without a pending message keeps its memory and last update in
  the GRU step (tgeval's ``TensorMemory``);
* ``+ all three``;
* ``tgeval TGN``: ``tgeval.models.TGN`` trained by ``train_epoch`` (timestamp batches, canonical
  order inside them) and evaluated by ``evaluate``.

Training: Wikipedia without features (a message of one zero column), 70/15/15 split, batches of
200, one uniform negative per positive over the segment's destination range, Adam 1e-4, BCE,
``--epochs`` epochs from ``torch.manual_seed(seed)``. After the last epoch, test AP (mean over
batches, as the recipe reports it) under both protocols: *continued* (validation, then test,
replayed from the state left by training) and *rebuilt* (the state reset and rebuilt from the
training events with the final weights, then validation, then test: ``evaluate``'s default).

The table gives each variant's test AP per seed and the mean over the seeds; with ``--out`` it and
every run are saved as JSON after each run (``benchmarks/results/ablate_tgn_protocol.json`` is
rendered in docs/quality.md).

Run: python benchmarks/ablate_tgn_protocol.py [--epochs 3] [--seeds 0,1,2] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_run_args, apply_common_args, load_wikipedia, print_header, print_table, save_results
from bench_tgn_train import BATCH_SIZE, LR, NUM_NEIGHBORS, WIDTH, PygRecipeTGN, num_nodes_of, range_catalog, \
    with_zero_message
from torch import Tensor
from torch_geometric.nn.models.tgn import TGNMemory

from tgeval import chronological_split, evaluate
from tgeval.models.config import TGNConfig
from tgeval.models.memory import LatestMeanAggregator
from tgeval.models.tgn import TGN
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch


class NoEmptyStepMemory(TGNMemory):
    """PyG's ``TGNMemory`` in which a node without a pending message keeps its memory and last
    update when the GRU step runs over a set of nodes (PyG steps it with a zero message and
    reports a last update of 0)."""

    def _get_updated_memory(self, n_id: Tensor) -> tuple[Tensor, Tensor]:
        memory, last_update = super()._get_updated_memory(n_id)
        pending = torch.tensor([self.msg_s_store[i][0].numel() + self.msg_d_store[i][0].numel() > 0
                                for i in n_id.tolist()], dtype=torch.bool, device=n_id.device)
        return (torch.where(pending[:, None], memory, self.memory[n_id]),
                torch.where(pending, last_update, self.last_update[n_id]))


def recipe_variant(latest_mean: bool, after_step: bool, no_empty_step: bool) -> Callable[[int], PygRecipeTGN]:
    def build(num_nodes: int) -> PygRecipeTGN:
        recipe = PygRecipeTGN(num_nodes, aggregator=LatestMeanAggregator() if latest_mean else None,
                              memory_cls=NoEmptyStepMemory if no_empty_step else TGNMemory)
        recipe.update_after_step = after_step
        return recipe
    return build


VARIANTS = {
    "recipe": recipe_variant(False, False, False),
    "+ latest-mean": recipe_variant(True, False, False),
    "+ update after step": recipe_variant(False, True, False),
    "+ no empty step": recipe_variant(False, False, True),
    "+ all three": recipe_variant(True, True, True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--variants", default=",".join([*VARIANTS, "tgeval TGN"]))
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("TGN rebuilt-protocol ablation on Wikipedia")
    raw, how = load_wikipedia(args.data_dir)
    data = with_zero_message(raw)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    num_nodes = num_nodes_of(data)
    train, val, test = (data[s.start:s.end] for s in (split.train, split.val, split.test))
    pools = {name: range_catalog(data.dst[s.start:s.end], num_nodes) for name, s in
             (("train", split.train), ("val", split.val), ("test", split.test))}
    seeds = [int(s) for s in args.seeds.split(",")]
    variants = args.variants.split(",")
    runs: dict[str, dict[str, float]] = {}
    for seed in seeds:
        for name in variants:
            began = time.perf_counter()
            torch.manual_seed(seed)
            aps: dict[str, float] = {}
            if name == "tgeval TGN":
                model = TGN(TGNConfig(num_nodes, msg_dim=1, memory_dim=WIDTH, time_dim=WIDTH, embedding_dim=WIDTH,
                                      num_neighbors=NUM_NEIGHBORS))
                optimizer = torch.optim.Adam(model.parameters(), lr=LR)
                for epoch in range(args.epochs):
                    train_epoch(model, data, split.train,
                                recipe=Recipe(UniformSampler(pools["train"]), "bce", num_negatives=1,
                                              batch_size=BATCH_SIZE, seed=seed),
                                optimizer=optimizer, epoch=epoch)
                for protocol, warm in (("continued", False), ("rebuilt", True)):
                    evaluate(model, data, split.val, Protocol(num_negatives=1, batch_size=BATCH_SIZE, warm=warm),
                             sampler=UniformSampler(pools["val"]))
                    r = evaluate(model, data, split.test, Protocol(num_negatives=1, batch_size=BATCH_SIZE, warm=False),
                                 sampler=UniformSampler(pools["test"]))
                    aps[protocol] = r.metrics["sampled"]["ap"]["per_batch_mean"]
            else:
                recipe = VARIANTS[name](num_nodes)
                for _ in range(args.epochs):
                    recipe.train_epoch(data, train)
                for protocol in ("continued", "rebuilt"):
                    if protocol == "rebuilt":
                        recipe.replay(train)
                    recipe.evaluate(data, val)
                    aps[protocol] = recipe.evaluate(data, test)["ap"]["per_batch_mean"]
            seconds = time.perf_counter() - began
            runs[f"{name}/seed {seed}"] = {**aps, "seconds": seconds}
            print(f"  {name}, seed {seed}: test AP continued {aps['continued']:.4f}, rebuilt {aps['rebuilt']:.4f} "
                  f"({seconds:.0f} s)", flush=True)
            save_results(args, data=how, epochs=args.epochs, runs=runs)
    rows = []
    for name in variants:
        row = [name]
        for protocol in ("continued", "rebuilt"):
            aps = [runs[f"{name}/seed {seed}"][protocol] for seed in seeds]
            row += [" / ".join(f"{ap:.3f}" for ap in aps), f"{statistics.mean(aps):.3f}"]
        rows.append(row)
    seed_list = " / ".join(map(str, seeds))
    print_table(["variant", f"continued (seed {seed_list})", "continued, mean", f"rebuilt (seed {seed_list})",
                 "rebuilt, mean"], rows,
                title=f"Test AP after {args.epochs} epochs (mean over batches; 1 uniform negative per positive over "
                      f"the segment's page range; torch threads {torch.get_num_threads()}).")
    save_results(args, data=how, epochs=args.epochs, runs=runs)


if __name__ == "__main__":
    main()
