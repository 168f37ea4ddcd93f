"""The price of merging timestamp groups into batches: all-entity MRR against the batch size.

Setting: UCI and Wikipedia, 70/15/15 chronological split, 'train' catalog, online protocol,
exact all-entity ranking of the test segment. TGN (tgeval's reference wrapper, default widths)
is trained for ``--epochs`` epochs on the training segment (BCE, one uniform negative per
positive, Adam, batches of 200, seed ``--seed``); its state is then built once from every event
before the test segment (eval mode, batches of 200) and every batch size starts from that
snapshot, so only the test-time merging differs. A memory model is stale inside a batch by
design: an event whose source or destination had an earlier-timestamp event in the same batch
is scored without it (``manifest["history"]["stale_events"]``). EdgeBank is shown beside it
with ``history="exact"`` (every batch size gives the per-timestamp number) and ``"batch"`` (the
peers' convention, stale like TGN). Batch size 1 means one timestamp group per batch.

Run: python benchmarks/bench_batch_size.py [--datasets uci,wikipedia] [--epochs 1] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import DATASET_LABELS, add_run_args, apply_common_args, print_header, print_table, save_results

from tgeval import build_catalog, chronological_split, evaluate, warm_up
from tgeval.data.datasets import load_dataset
from tgeval.models.config import TGNConfig
from tgeval.models.heuristics import EdgeBank
from tgeval.models.tgn import TGN
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch

BATCH_SIZES = (1, 50, 200, 1000)
TRAIN_BATCH = 200


def rows_for(name: str, epochs: int, seed: int, lr: float) -> list[list[str]]:
    data, info = load_dataset(name)
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=info.num_nodes)
    torch.manual_seed(seed)
    model = TGN(TGNConfig(info.num_nodes))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        fit = train_epoch(model, data, split.train,
                          recipe=Recipe(UniformSampler(catalog), "bce", batch_size=TRAIN_BATCH, seed=seed),
                          optimizer=optimizer, epoch=epoch)
        print(f"{name}: TGN epoch {epoch + 1}, loss {fit['loss']:.4f}, {fit['events_per_second']:,.0f} events/s",
              flush=True)
    model.eval()
    warm_up(model, data[: split.test.start], batch_size=TRAIN_BATCH)
    state = model.snapshot()
    rows = []
    for size in BATCH_SIZES:
        model.restore(state)
        tgn = evaluate(model, data, split.test, Protocol(batch_size=size, warm=False), catalog=catalog)
        bank = {history: evaluate(EdgeBank(info.num_nodes), data, split.test,
                                  Protocol(batch_size=size, history=history), catalog=catalog)
                for history in ("exact", "batch")}
        stale = tgn.manifest["history"]
        rows.append([DATASET_LABELS.get(name, name), "1 group" if size == 1 else str(size),
                     f"{tgn.performance['num_batches']:,}",
                     f"{stale['stale_events']:,} ({stale['same_batch_fraction']:.1%})",
                     f"{tgn.metrics['all_entity']['mrr']['micro']:.4f}",
                     f"{bank['exact'].metrics['all_entity']['mrr']['micro']:.4f}",
                     f"{bank['batch'].metrics['all_entity']['mrr']['micro']:.4f}"])
        print(f"{name}: batch size {size} done", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="uci,wikipedia")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("All-entity MRR against the batch size (test segment, online, 'train' catalog)")
    rows = []
    for name in args.datasets.split(","):
        rows += rows_for(name, args.epochs, args.seed, args.lr)
    print_table(["data", "batch size", "batches", "TGN stale events", "TGN MRR", "EdgeBank exact",
                 "EdgeBank batch"], rows,
                title=f"TGN: {args.epochs} epoch(s) of training at batch {TRAIN_BATCH}, the state before the test "
                      f"segment built at batch {TRAIN_BATCH}, then the test segment replayed online at each batch size "
                      f"from that state; MRR: all-entity over the 'train' catalog, average ties, micro (mean over "
                      f"events); EdgeBank with exact and with batch history; seed {args.seed}, "
                      f"{torch.get_num_threads()} torch thread(s).")
    save_results(args)


if __name__ == "__main__":
    main()
