"""Sampled AUROC / AP at TGB's width (K = 999): their cost against scikit-learn's, and a whole
sampled evaluation against the all-entity ranking of the same events.

Part 1, the metrics step alone, on synthetic scores of tgbl-wiki's test size (23,621 events x 999
negatives, batches of 200): EdgeBank-like 0/1 scores (almost all tied) and continuous scores.
tgeval: ``sampled_auroc_ap(pos, neg, groups=batch)`` on the ``[E, K]`` scores as the replay records
them (overall and per-batch AUROC and AP). Baseline: scikit-learn's ``roc_auc_score`` and
``average_precision_score`` on the same arrays, pooled (overall) and per batch (a loop over the
batches), the same four numbers. The script asserts that both agree to 1e-12.

Part 2, with the shared Wikipedia file: EdgeBank (unlimited, online, history of the batch start,
batches of 200) on the 70/15/15 test segment, (a) against 999 fixed negatives per event (every page
but the positive, as TGB's tgbl-wiki negatives), sampled metrics only, and (b) ranked against all
pages (``build_catalog(data, "range")``), no sampler. Each row gives ``evaluate``'s wall time and its
``performance["phases"]``.

Memory: peak resident memory of the process during the measured call above its resident memory
just before (Linux: the peak is reset through ``/proc/self/clear_refs`` and read from ``VmHWM``);
it counts torch's and numpy's allocations alike. One process, ``--threads`` torch threads (default 1).

Run: python benchmarks/bench_sampled_metrics.py [--data-dir DIR] [--repeat 1]
"""

from __future__ import annotations

import argparse
import time
import warnings

import _common  # noqa: F401  (puts the repository root on sys.path)
import numpy as np
import sklearn.metrics as sklearn_metrics
import torch
from _common import add_common_args, apply_common_args, load_wikipedia, print_header, print_table, save_results
from bench_edgebank_sampled import FixedNegatives

from tgeval import Protocol, build_catalog, chronological_split, evaluate
from tgeval.eval.metrics import sampled_auroc_ap
from tgeval.models.heuristics import EdgeBank

E, K, BATCH = 23_621, 999, 200


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def measured(fn):
    """``fn()``'s seconds, its peak resident memory above the memory before it (MB), its value."""
    with open("/proc/self/clear_refs", "w") as handle:  # reset VmHWM to the current resident size
        handle.write("5")
    before = _status_mb("VmRSS")
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    return seconds, _status_mb("VmHWM") - before, value


def synthetic(kind: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    if kind == "0/1 (EdgeBank)":
        pos, neg = (torch.rand(E, generator=gen) < 0.6).double(), (torch.rand(E, K, generator=gen) < 0.05).double()
    else:
        pos = torch.randn(E, generator=gen, dtype=torch.float64) + 1
        neg = torch.randn(E, K, generator=gen, dtype=torch.float64)
    return pos, neg, torch.arange(E) // BATCH


def with_sklearn(pos: torch.Tensor, neg: torch.Tensor, batch: torch.Tensor) -> tuple[float, float, float, float]:
    """Overall and mean per-batch AUROC and AP with scikit-learn, on the pooled scores."""
    scores = np.concatenate([pos.numpy(), neg.numpy().ravel()])
    labels = np.concatenate([np.ones(pos.numel(), bool), np.zeros(neg.numel(), bool)])
    groups = np.concatenate([batch.numpy(), np.repeat(batch.numpy(), neg.size(1))])
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(int(batch.max()) + 2))
    per_batch = [(sklearn_metrics.roc_auc_score(labels[idx], scores[idx]),
                  sklearn_metrics.average_precision_score(labels[idx], scores[idx]))
                 for idx in (order[a:b] for a, b in zip(bounds[:-1], bounds[1:]))]
    return (sklearn_metrics.roc_auc_score(labels, scores), float(np.mean([a for a, _ in per_batch])),
            sklearn_metrics.average_precision_score(labels, scores), float(np.mean([p for _, p in per_batch])))


def with_tgeval(pos: torch.Tensor, neg: torch.Tensor, batch: torch.Tensor) -> tuple[float, float, float, float]:
    out = sampled_auroc_ap(pos, neg, groups=batch)
    return (float(out.auroc), float(torch.nanmean(out.grouped_auroc)), float(out.average_precision),
            float(torch.nanmean(out.grouped_average_precision)))


def metrics_step(repeat: int) -> None:
    print(f"\n-- 1. the metrics step: {E:,} events x {K} negatives, batches of {BATCH}")
    rows = []
    for kind in ("0/1 (EdgeBank)", "continuous"):
        pos, neg, batch = synthetic(kind)
        runs = {name: min((measured(lambda: fn(pos, neg, batch)) for _ in range(repeat)), key=lambda r: r[0])
                for name, fn in (("tgeval", with_tgeval), ("scikit-learn", with_sklearn))}
        mine, ref = runs["tgeval"][2], runs["scikit-learn"][2]
        assert np.allclose(mine, ref, rtol=0, atol=1e-12), (kind, mine, ref)
        for name, (seconds, peak, _) in runs.items():
            rows.append([kind, name, f"{seconds:.2f}", f"{peak:.0f}",
                         f"{runs['scikit-learn'][0] / seconds:.1f}x" if name == "tgeval" else ""])
        print(f"{kind}: AUROC {mine[0]:.12f} / per batch {mine[1]:.12f}, AP {mine[2]:.12f} / per batch "
              f"{mine[3]:.12f} (tgeval = scikit-learn to 1e-12)")
    print_table(["scores", "AUROC + AP, overall and per batch", "seconds", "peak MB above start",
                 "speed-up"], rows)


def whole_evaluation(data_dir, repeat: int) -> None:
    data, how = load_wikipedia(data_dir)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    test = split.test
    events = data[test.start:test.end]
    pages = build_catalog(data, "range")
    items = pages.items
    others = items[None, :] != events.dst[:, None]  # every page but the positive (a page here: one False)
    negatives = items.expand(events.num_events, -1)[others].view(events.num_events, -1)
    k = negatives.size(1)
    num_nodes = int(max(data.src.max(), data.dst.max())) + 1
    print(f"\n-- 2. EdgeBank on {how}, test segment ({test.num_events:,} events), online, history 'batch', "
          f"batches of {BATCH}; {items.numel()} pages")

    def run(sampled: bool):
        protocol = Protocol(history="batch", batch_size=BATCH, num_negatives=k if sampled else 1)
        fixed = FixedNegatives(negatives, test.start)
        fixed.collisions = "keep"  # TGB's file as drawn: its rows hold the batch's other positives (recorded)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return evaluate(EdgeBank(num_nodes), data, test, protocol, sampler=fixed if sampled else None,
                            catalog=None if sampled else pages)

    rows, mrr = [], {}
    for name, sampled in ((f"{k} fixed negatives (TGB's file)", True), ("all pages, ranked", False)):
        seconds, peak, result = min((measured(lambda: run(sampled)) for _ in range(repeat)), key=lambda r: r[0])
        part = "sampled" if sampled else "all_entity"
        mrr[name] = result.metrics[part]["mrr"]["micro"]
        phases = result.performance["phases"]
        rows.append([name, f"{seconds:.2f}", f"{peak:.0f}", f"{mrr[name]:.6f}",
                     ", ".join(f"{p} {s:.2f}" for p, s in phases.items())])
    print_table(["EdgeBank against", "seconds", "peak MB above start", "MRR", "phases (s)"], rows)
    (file_name, file_row), (_, pages_row) = zip(mrr, rows)
    print(f"file run / all-pages run: {float(file_row[1]) / float(pages_row[1]):.2f}x time, "
          f"{float(file_row[2]) / max(float(pages_row[2]), 1.0):.2f}x peak memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.set_defaults(repeat=1)
    parser.add_argument("--skip-wikipedia", action="store_true", help="only the synthetic metrics step")
    args = parser.parse_args()
    apply_common_args(args)
    print_header("sampled AUROC / AP at K = 999")
    metrics_step(args.repeat)
    if not args.skip_wikipedia:
        whole_evaluation(args.data_dir, args.repeat)
    save_results(args)


if __name__ == "__main__":
    main()
