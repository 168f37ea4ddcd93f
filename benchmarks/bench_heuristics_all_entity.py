"""Every parameter-free heuristic's all-entity pass, timed against EdgeBank's in the same process.

Two streams: tgbl-wiki rebuilt from the shared Wikipedia file (TGB's numbering, as
``benchmarks/reproduce_tgb.py`` builds it) and the tgbl-flight-shaped synthetic stream of
``benchmarks/bench_scale.py`` (``--events``, 8M by default). Each heuristic is evaluated on the test
segment as ``--preset tgb`` evaluates it: TGB's split, batches of 200, every destination id ranked (the
``range`` catalog), TGB's ties, the preset's history for the model (exact for the recency and popularity
heuristics and their combinations, batch for EdgeBank), no sampled negatives; ``edgebank-window`` with TGB's
window, ``poptrack`` with its clock ticking from the validation and test starts. The time is the whole
``evaluate`` call (the warm-up over the earlier events included), after one untimed EdgeBank pass that pays the
process's start-up costs. "counted" says whether the pass counted its
ranks (the model's ``catalog_counts``) or scored the catalog: a heuristic that scored it would show it here.

Run: python benchmarks/bench_heuristics_all_entity.py [--events 8000000] [--models M ...] [--threads 1]
     [--out benchmarks/results/bench_heuristics_all_entity.json]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
from _common import add_run_args, apply_common_args, print_header, print_table, save_results
from bench_scale import flight_like
from reproduce_tgb import tgb_numbered

from tgeval import evaluate
from tgeval.models import registry
from tgeval.models.clock import EventClock
from tgeval.eval.presets import TGB


def build(name: str, data, split, num_nodes: int):
    """The heuristic ``name`` with the options ``--preset tgb`` gives it."""
    if name == "edgebank-window":
        return registry.build(name, num_nodes=num_nodes, window=TGB.edgebank_window(data, split), anchor="latest")
    if name == "poptrack":
        return registry.build(name, num_nodes=num_nodes, clock=EventClock(200, (split.val.start, split.test.start)))
    return registry.build(name, num_nodes=num_nodes)


def measure(name: str, data, split, num_nodes: int, catalog) -> tuple[str, bool, float, float]:
    """``(history, counted, seconds, test MRR)`` of one all-entity pass."""
    model = build(name, data, split, num_nodes)
    scored = []
    own = model.candidate_scorer
    model.candidate_scorer = lambda *args: scored.append(1) or own(*args)
    protocol = TGB.protocol(model=name)
    start = time.perf_counter()
    result = evaluate(model, data, split.test, protocol, catalog=catalog)
    seconds = time.perf_counter() - start
    return protocol.history, not scored, seconds, result.metrics["all_entity"]["mrr"]["micro"]


def run(title: str, data, names: list[str]) -> None:
    split = TGB.split(data)
    num_nodes = int(max(data.src.max(), data.dst.max())) + 1
    catalog = TGB.catalog(data, num_nodes)
    rows, baseline = [], None
    measure("edgebank", data, split, num_nodes, catalog)  # untimed: the first pass pays the start-up costs
    for name in ["edgebank"] + [n for n in names if n != "edgebank"]:
        history, counted, seconds, mrr = measure(name, data, split, num_nodes, catalog)
        baseline = seconds if baseline is None else baseline
        rows.append([name, history, "yes" if counted else "no", f"{seconds:.2f}", f"{seconds / baseline:.1f}x",
                     f"{mrr:.4f}"])
        print(f"  {name}: {seconds:.2f} s", flush=True)
    print_table(["model", "history", "counted", "seconds", "vs edgebank", "test MRR"], rows,
                title=f"{title}: {split.test.num_events:,} test events, each ranked against every destination id "
                      f"(catalog range, {catalog.size:,} items), TGB's ties (average), batches of 200, all-entity MRR "
                      f"(micro); EdgeBank timed after an untimed pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_args(parser)
    parser.add_argument("--events", type=int, default=8_000_000, help="events of the synthetic stream")
    parser.add_argument("--models", nargs="+", default=None,
                        help="heuristics to time (default: every registered parameter-free one)")
    args = parser.parse_args()
    apply_common_args(args)
    names = args.models or list(registry.names("heuristic", trainable=False))
    print_header("all-entity passes of the heuristics against EdgeBank's")
    run("tgbl-wiki", tgb_numbered(), names)
    save_results(args)
    run(f"tgbl-flight-shaped stream, {args.events:,} events", flight_like(args.events), names)
    save_results(args)


if __name__ == "__main__":
    main()
