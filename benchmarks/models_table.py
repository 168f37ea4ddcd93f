"""The models table of docs/quality.md: TGN, DyRep and GraphMixer on UCI and Wikipedia, over seeds.

Per dataset, model and seed (70/15/15 chronological split, no features: a message of one zero
column; each model's registry defaults, width 100):

* training: ``--epochs`` epochs of ``train_epoch`` (BCE, Adam 1e-4, batches of 200, one uniform
  'train'-catalog negative per positive, seeded); **training events/s** is training events x
  epochs over the training seconds (``train_epoch``'s own timing, 1 torch thread by default);
* **reference protocol** (PyG's and DyGLib's): validation replayed from the state training
  left, then test AP with one uniform 'train'-catalog negative per positive, the mean of
  per-batch AP (``Protocol(warm=False, num_negatives=1)``);
* **tgeval's protocol**: ``evaluate``'s default (state rebuilt from the history with the final
  weights, exact history where the model has it): AP with the reference's one negative (mean
  of per-batch AP, so the two AP columns differ by the protocol only) and the all-entity MRR
  over the 'train' catalog (average ties, micro); then, in a second pass, the sampled MRR
  against ``--negatives`` (default 20) uniform 'train'-catalog negatives per positive.

The table gives the mean and the sample standard deviation over the seeds; with ``--out`` every run
is in the JSON too, written atomically after each run (``benchmarks/results/models_table.json``
is rendered in docs/quality.md).

Run: python benchmarks/models_table.py [--datasets uci,wikipedia] [--models tgn,dyrep,graphmixer]
     [--seeds 0,1,2] [--epochs 3] [--negatives 20] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (DATASET_LABELS, MODEL_LABELS, add_run_args, apply_common_args, print_header, print_table,
                     save_results)
from bench_tgn_train import BATCH_SIZE, LR, num_nodes_of

from tgeval import build_catalog, chronological_split, evaluate, replay
from tgeval.data.datasets import load_dataset
from tgeval.models import registry
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch


def prepared(dataset: str):
    """``(data, split, catalog)``: a shared dataset without features (one zero message column), its
    70/15/15 chronological split and 'train' catalog."""
    data, _ = load_dataset(dataset)
    data.msg = torch.zeros(data.num_events, 1)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    return data, split, build_catalog(data, "train", train_end=split.train.end)


def trained(name: str, data, split, catalog, seed: int, epochs: int):
    """``(model, training seconds, losses)``: the registered model ``name`` at its defaults after
    ``epochs`` epochs of ``train_epoch`` (module docstring)."""
    torch.manual_seed(seed)
    model = registry.build(name, num_nodes=num_nodes_of(data))
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    seconds, losses = 0.0, []
    for epoch in range(epochs):
        fit = train_epoch(model, data, split.train,
                          recipe=Recipe(UniformSampler(catalog), "bce", num_negatives=1, batch_size=BATCH_SIZE,
                                        seed=seed),
                          optimizer=optimizer, epoch=epoch)
        seconds += fit["seconds"]
        losses.append(fit["loss"])
    return model, seconds, losses


def run_one(name: str, data, split, catalog, seed: int, epochs: int, negatives: int) -> dict:
    """Train one model and measure it under both protocols (module docstring)."""
    model, seconds, losses = trained(name, data, split, catalog, seed, epochs)
    sampler = UniformSampler(catalog)
    replay(model, data, split.val)  # the reference protocol continues training's state through validation
    reference = evaluate(model, data, split.test, Protocol(warm=False, num_negatives=1, batch_size=BATCH_SIZE,
                                                           seed=seed), sampler=sampler)
    ours = evaluate(model, data, split.test, Protocol(num_negatives=1, batch_size=BATCH_SIZE, seed=seed),
                    sampler=sampler, catalog=catalog if model.capabilities.ranks_all_entities else None)
    # a second rebuilt pass for K negatives: AP stays the library's own at K = 1, as in the reference column
    ranked = evaluate(model, data, split.test, Protocol(num_negatives=negatives, batch_size=BATCH_SIZE, seed=seed),
                      sampler=sampler)
    return {"losses": losses, "train_seconds": seconds,
            "train_events_per_second": split.train.num_events * epochs / seconds,
            "reference_ap": reference.metrics["sampled"]["ap"]["per_batch_mean"],
            "tgeval_ap": ours.metrics["sampled"]["ap"]["per_batch_mean"],
            "tgeval_sampled_mrr": ranked.metrics["sampled"]["mrr"]["micro"],
            "tgeval_all_entity_mrr": ours.metrics["all_entity"]["mrr"]["micro"] if "all_entity" in ours.metrics
            else None}


def spread(values: list) -> str:
    """``mean ± std`` (sample standard deviation; the value alone for one seed)."""
    if any(v is None for v in values):
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="uci,wikipedia")
    parser.add_argument("--models", default="tgn,dyrep,graphmixer")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--negatives", type=int, default=20, help="K of tgeval's sampled metrics")
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("Reference models: the reference protocol beside tgeval's, over seeds")
    seeds = [int(s) for s in args.seeds.split(",")]
    runs_by_name: dict = {}
    rows = []
    for dataset in args.datasets.split(","):
        data, split, catalog = prepared(dataset)
        for name in args.models.split(","):
            runs = []
            for seed in seeds:
                began = time.perf_counter()
                runs.append(run_one(name, data, split, catalog, seed, args.epochs, args.negatives))
                runs_by_name[f"{dataset}/{name}/seed {seed}"] = runs[-1]
                save_results(args, epochs=args.epochs, negatives=args.negatives, runs=runs_by_name)
                print(f"  {dataset} {name} seed {seed}: {time.perf_counter() - began:.0f} s, "
                      f"{ {k: v for k, v in runs[-1].items() if k != 'losses'} }", flush=True)
            rows.append([DATASET_LABELS.get(dataset, dataset), MODEL_LABELS[name], ",".join(map(str, seeds)),
                         *(spread([r[key] for r in runs]) for key in
                           ("reference_ap", "tgeval_ap", "tgeval_sampled_mrr", "tgeval_all_entity_mrr")),
                         f"{statistics.mean(r['train_events_per_second'] for r in runs):,.0f}"])
    protocol = (f"{args.epochs} epochs; reference protocol: state continued through validation, AP with 1 "
                f"negative (mean of per-batch AP); tgeval's: state rebuilt, AP with 1 negative, sampled MRR with "
                f"K = {args.negatives} uniform 'train'-catalog negatives, all-entity MRR over the 'train' catalog "
                f"(micro); ties average; mean ± sample standard deviation over seeds.")
    print_table(["data", "model", "seeds", "AP, reference protocol", "AP, tgeval's",
                 f"sampled MRR (K = {args.negatives}), tgeval's", "all-entity MRR, tgeval's", "training events/s"],
                rows, title=protocol)
    save_results(args, epochs=args.epochs, negatives=args.negatives, runs=runs_by_name)


if __name__ == "__main__":
    main()
