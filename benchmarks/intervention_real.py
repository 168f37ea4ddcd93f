"""The membership intervention on real data: TGN, DyRep and GraphMixer on UCI and Wikipedia.

Each model is trained from seed 0 for ``--epochs`` epochs of ``train_epoch`` on the training
segment (70/15/15 chronological split; no features: a message of one zero column; Adam 1e-4,
BCE, one uniform 'train'-catalog negative per positive, timestamp batches of at most 200),
then ``tgeval.diagnostics.membership_intervention`` fits the membership direction on the
training segment (Fisher probe, one seen and one unseen pair per event) and compares the base
model with the three projections on the test segment: full-catalog MRR (online, all-entity
over the 'train' catalog, average ties) and the 2 x 2 membership factorial (K = 20 seen and
unseen negatives, seed 0). The datasets come from ``../shared/datasets`` (or
``$TGEVAL_DATA_DIR``).

One summary table follows (``--out``: it and every run's full result as JSON, written after each
run; ``benchmarks/results/intervention_real.json`` is rendered in docs/quality.md).

Run: python benchmarks/intervention_real.py [--datasets uci,wikipedia] [--models tgn,dyrep,graphmixer]
     [--epochs 3] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (DATASET_LABELS, MODEL_LABELS, add_run_args, apply_common_args, print_header, print_table,
                     save_results)
from bench_tgn_train import num_nodes_of, with_zero_message

from tgeval import build_catalog, chronological_split
from tgeval.data.datasets import load_dataset
from tgeval.diagnostics import membership_intervention
from tgeval.models import registry
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch


def summary_row(dataset: str, model: str, result) -> list[str]:
    """One row of the summary table: full-catalog MRR of every variant, the Repeated–Unseen and
    New–Unseen cells of the base and the membership projection, the probe's AUROC and cos(w, d)."""
    rows = result.rows
    membership = result.directions["membership"]
    return [DATASET_LABELS.get(dataset, dataset), MODEL_LABELS.get(model, model),
            " / ".join(f"{rows[v]['mrr']:.4f}" for v in ("base", "membership", "random", "shuffled")),
            *(" / ".join(f"{rows[v]['factorial'][cell]['mrr']:.3f}" for v in ("base", "membership"))
              for cell in ("repeated_unseen", "new_unseen")),
            f"{membership.probe_auroc:.3f}", f"{rows['membership']['weight_cosine']:.3f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="uci,wikipedia")
    parser.add_argument("--models", default="tgn,dyrep,graphmixer")
    parser.add_argument("--epochs", type=int, default=3)
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("The membership intervention on real data")
    runs: dict = {}
    summary = []
    for name in args.datasets.split(","):
        raw, _ = load_dataset(name)
        data = with_zero_message(raw)
        split = chronological_split(data, (0.70, 0.15, 0.15))
        num_nodes = num_nodes_of(data)
        catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
        for model_name in args.models.split(","):
            torch.manual_seed(0)
            model = registry.build(model_name, num_nodes=num_nodes, msg_dim=1)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
            began = time.perf_counter()
            for epoch in range(args.epochs):
                stats = train_epoch(model, data, split.train,
                                    recipe=Recipe(UniformSampler(catalog), "bce", num_negatives=1, batch_size=200,
                                                  seed=0),
                                    optimizer=optimizer, epoch=epoch)
            trained = time.perf_counter() - began
            began = time.perf_counter()
            result = membership_intervention(model, data, split.train, split.test, catalog, num_negatives=20)
            seconds = time.perf_counter() - began
            print(f"\n{name}, {model_name}: {args.epochs} epochs ({trained:.0f} s, last loss {stats['loss']:.4f}); "
                  f"intervention {seconds:.0f} s; torch threads {torch.get_num_threads()}")
            print(f"protocol: online replay of the test segment; MRR (all): all-entity over the {catalog.size}-item "
                  f"'train' catalog, micro; cells: K = 20 seen and K = 20 unseen negatives (seed 0), sampled MRR; "
                  f"average ties; direction fitted on the training segment (Fisher probe)")
            print(result.format_table(), flush=True)
            runs[f"{name}/{model_name}"] = {**result.to_dict(), "train_seconds": trained,
                                            "intervention_seconds": seconds}
            summary.append(summary_row(name, model_name, result))
            save_results(args, epochs=args.epochs, runs=runs)
    print()
    print_table(["data", "model", "MRR (all) base / membership / random / shuffled",
                 "Repeated–Unseen base / membership", "New–Unseen base / membership", "probe AUROC", "cos(w, d)"],
                summary, title=f"{args.epochs} epochs of train_epoch (seed 0); MRR (all): online, all-entity over the "
                               "'train' catalog, micro, average ties; cells: sampled MRR against K = 20 seen or unseen "
                               "negatives (seed 0); membership direction fitted on the training segment (Fisher "
                               "probe); cos(w, d): the last layer's weights against the membership direction.")
    save_results(args, epochs=args.epochs, runs=runs)


if __name__ == "__main__":
    main()
