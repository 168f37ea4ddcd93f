"""The approximate all-entity pre-filter (``Protocol(prefilter=L)``) against exact ranking, on real data.

Per dataset (UCI, Wikipedia; 70/15/15 chronological split, no features: a message of one zero
column): TGN at its registry defaults trained ``--epochs`` epochs as in ``models_table.py`` (BCE,
Adam 1e-4, batches of 200, one uniform 'train'-catalog negative, seed 0), then the test segment evaluated all-entity
over the 'train' catalog (no sampler), exactly and with each ``L`` of ``--tops``. Reported per
``L``: MRR (micro, average ties) exact and approximate and their difference, the fraction of
events whose rank changed (``above`` or ``equal`` differ), the largest rank ratio, and the
pass's events/s as a ratio to the exact pass run in the same process (``--threads`` torch
threads). The pre-filter can only improve a rank, so the MRR difference is its bias.

Run: python benchmarks/bench_prefilter.py [--datasets uci,wikipedia] [--tops 10,100,1000] [--epochs 2]
     [--threads 1] [--out prefilter.json]
"""

from __future__ import annotations

import argparse
import json

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import command_line, print_header, print_table
from bench_tgn_train import BATCH_SIZE
from models_table import prepared, trained

from tgeval import evaluate
from tgeval.core.atomic import write_atomic
from tgeval.eval.metrics import rank_from_counts
from tgeval.eval.protocol import Protocol


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="uci,wikipedia")
    parser.add_argument("--tops", default="10,100,1000")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="prefilter.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("Approximate all-entity pre-filter vs exact ranking (TGN)")
    report: dict = {"command": command_line(), "runs": {}}
    rows = []
    for dataset in args.datasets.split(","):
        data, split, catalog = prepared(dataset)
        model = trained("tgn", data, split, catalog, 0, args.epochs)[0]
        exact = evaluate(model, data, split.test, Protocol(batch_size=BATCH_SIZE), catalog=catalog)
        exact_rank = rank_from_counts(exact.records["above"], exact.records["equal"], ties="average")
        exact_mrr = exact.metrics["all_entity"]["mrr"]["micro"]
        entry: dict = {"catalog_size": catalog.size, "exact_mrr": exact_mrr,
                       "exact_events_per_second": exact.performance["events_per_second"], "prefilter": {}}
        for top in (int(x) for x in args.tops.split(",")):
            approx = evaluate(model, data, split.test, Protocol(batch_size=BATCH_SIZE, prefilter=top), catalog=catalog)
            rank = rank_from_counts(approx.records["above"], approx.records["equal"], ties="average")
            changed = ((approx.records["above"] != exact.records["above"])
                       | (approx.records["equal"] != exact.records["equal"]))
            mrr = approx.metrics["all_entity"]["mrr"]["micro"]
            speed = approx.performance["events_per_second"] / exact.performance["events_per_second"]
            measured = entry["prefilter"][top] = {
                "mrr": mrr, "mrr_difference": mrr - exact_mrr, "fraction_rank_changed": float(changed.double().mean()),
                "largest_rank_ratio": float((exact_rank / rank).max()), "speed_ratio": speed}
            rows.append([dataset, f"{catalog.size:,}", top, f"{exact_mrr:.4f}", f"{mrr:.4f}",
                         f"{measured['mrr_difference']:+.4f}", f"{measured['fraction_rank_changed']:.3f}",
                         f"{measured['largest_rank_ratio']:.1f}", f"{speed:.2f}x"])
            print(f"  {dataset} L={top}: {entry['prefilter'][top]}", flush=True)
        report["runs"][dataset] = entry
        write_atomic(args.out, json.dumps(report, indent=1) + "\n")
    print(f"TGN (registry defaults) after {args.epochs} epochs; test segment, all-entity over the 'train' catalog, "
          f"MRR micro, average ties; speed: events/s against the exact pass in the same process; torch threads "
          f"{torch.get_num_threads()}")
    print_table(["data", "catalog", "L", "MRR exact", "MRR pre-filtered", "difference", "events whose rank changed",
                 "largest rank ratio", "speed vs exact"], rows)


if __name__ == "__main__":
    main()
