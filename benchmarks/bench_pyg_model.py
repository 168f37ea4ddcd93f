"""A TGN built from PyG's modules (``PygTGN`` of docs/guide/pyg-models.md) against tgeval's own TGN, through ``evaluate``.

Setting: Wikipedia (or ``--dataset uci``), 70/15/15 chronological split, 'train' catalog; both
models with PyG's recipe widths (100, 10 neighbours), freshly initialised with a fixed seed
(scoring cost does not depend on the weights), in eval mode. Each model's state is built once by
``tgeval.replay`` over every event before the test segment (timed: the replay row) and
snapshotted; every timed run restores that snapshot and evaluates the head of the test segment
all-entity, online, in batches of at most 200 events, ``warm=False``, interleaved round robin.

* **all-entity speed**: ``PygTGN`` through the scorer the engine derives from its ``embed`` and
  ``decode`` vs tgeval's ``TGN`` (issue 11's target: at least 50%), and vs ``PygTGN`` scored
  pair by pair (the default before the derived scorer: ``score`` of every (event, item) pair).
  The derived and the pairwise paths must give the same ranks (checked before timing). Also
  tgeval's ``TGN`` without its incremental embedding cache (``incremental = False``: every
  candidate re-embedded every batch, as the derived scorer of ``PygTGN`` does), same weights
  and state: the share of the gap that the cache explains; and ``PygTGN`` with its decoder's ReLU
  in place (``relu_``, the same scores): 2x faster on one block in isolation, whether it pays in a
  whole pass (on UCI's test segment it did not, beyond the noise).
  Rates also per second of this process's CPU time (robust to other load at one thread).
* **guard cost**: the same runs with ``check_state=False`` (the ratio moves with the noise of
  single runs), and the check itself timed alone (median of 50), as a share of a batch step.
* **loader cost**: iterating ``TimestampBatchLoader`` (a ``DataLoader`` that attaches
  positions) over the whole stream vs a plain generator of views over the same boundaries
  (the loader before it became a ``DataLoader``) and vs PyG's ``TemporalDataLoader``.

Run: python benchmarks/bench_pyg_model.py [--dataset wikipedia|uci] [--num-events 2000] [--pairwise-events 200]
     [--data-dir DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (add_common_args, apply_common_args, head_segment, load_setting, median, print_header, print_table,
                     save_results)
from torch_geometric.data import TemporalData
from torch_geometric.loader import TemporalDataLoader

from tgeval.eval.tuning import Tuning
from tgeval import Segment, TimestampBatchLoader, evaluate, no_state_change, replay
from tgeval.models import TGN, TGNConfig
from tgeval.models.base import TemporalLinkModel, pairwise_scorer
from tgeval.eval.protocol import Protocol
from tests.helpers import readme_pyg_tgn

BATCH_SIZE = 200
PygTGN, PygTGNConfig = readme_pyg_tgn()


class PairwisePygTGN(PygTGN):
    """``PygTGN`` scored pair by pair (what a model without ``embed`` / ``decode`` gets)."""

    def candidate_scorer(self, src, t, candidates):
        return pairwise_scorer(self.score, src, t, candidates)


class InPlacePygTGN(PygTGN):
    """``PygTGN`` whose decoder applies its ReLU in place (``relu_``): one ``[b, c, D]`` allocation
    less per block of the derived scorer (and autograd-safe: the sum it overwrites is not saved)."""

    def decode(self, z_src, z_dst):
        return self.lin_out((self.lin_src(z_src) + self.lin_dst(z_dst)).relu_()).squeeze(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-events", type=int, default=2000, help="test events evaluated per run")
    parser.add_argument("--pairwise-events", type=int, default=200, help="test events of the pair-by-pair run")
    parser.add_argument("--dataset", choices=("wikipedia", "uci"), default="wikipedia")
    add_common_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("PyG-built TGN vs tgeval's TGN through evaluate (all-entity), guard and loader costs")
    data, how, split, catalog, num_nodes = load_setting(args.dataset, args.data_dir)
    history = Segment("history", 0, split.test.start, None, None)
    head = head_segment(data, split.test, args.num_events)
    print(f"data    : {how}: {data.num_events:,} events, {num_nodes:,} nodes; catalog {catalog.size} items; "
          f"evaluated: the first {head.num_events:,} test events; batches <= {BATCH_SIZE}")

    models: dict[str, TemporalLinkModel] = {}
    snapshots, replay_rate = {}, {}
    copies = {"PygTGN pair by pair": "PygTGN (guide)", "tgeval TGN, no cache": "tgeval TGN",
              "PygTGN, relu_ decode": "PygTGN (guide)"}
    for name, build in (("tgeval TGN", lambda: TGN(TGNConfig(num_nodes, msg_dim=1))),
                        ("PygTGN (guide)", lambda: PygTGN(PygTGNConfig(num_nodes, msg_dim=1))),
                        ("PygTGN pair by pair", lambda: PairwisePygTGN(PygTGNConfig(num_nodes, msg_dim=1))),
                        ("tgeval TGN, no cache", lambda: TGN(TGNConfig(num_nodes, msg_dim=1))),
                        ("PygTGN, relu_ decode", lambda: InPlacePygTGN(PygTGNConfig(num_nodes, msg_dim=1)))):
        torch.manual_seed(0)
        model = build().eval()
        if name in copies:  # the same weights and state as the model it copies
            model.load_state_dict(models[copies[name]].state_dict())
            model.restore(snapshots[copies[name]])
            if name == "tgeval TGN, no cache":
                model.incremental = False
        else:
            began = time.perf_counter()
            replay(model, data, history, batch_size=BATCH_SIZE)
            replay_rate[name] = history.num_events / (time.perf_counter() - began)
        models[name], snapshots[name] = model, model.snapshot()

    cpu: dict[tuple[str, bool], list[float]] = {}  # process CPU seconds of each timed evaluate call

    def run(name: str, segment: Segment, guard: bool):
        model = models[name]
        model.restore(snapshots[name])
        began = time.process_time()
        result = evaluate(model, data, segment, Protocol(replay="online", batch_size=BATCH_SIZE, warm=False),
                          sampler=None, catalog=catalog, tuning=Tuning(check_state=guard))
        cpu.setdefault((name, guard), []).append(time.process_time() - began)
        return result

    pairwise_head = head_segment(data, split.test, args.pairwise_events)
    ranks = {name: run(name, pairwise_head, True).event_table()["rank"]
             for name in ("PygTGN (guide)", "PygTGN pair by pair", "PygTGN, relu_ decode")}
    same = all(torch.equal(ranks["PygTGN (guide)"], r) for r in ranks.values())
    print(f"check   : derived, pairwise and relu_-decode ranks of PygTGN on {pairwise_head.num_events} events: "
          f"{'identical' if same else 'DIFFERENT'}")
    assert same, "the derived candidate scorer must rank as the pairwise one"
    timed = [("tgeval TGN", True), ("tgeval TGN", False), ("PygTGN (guide)", True), ("PygTGN (guide)", False),
             ("tgeval TGN, no cache", True), ("PygTGN, relu_ decode", True)]
    for name in dict(timed):
        run(name, head_segment(data, split.test, BATCH_SIZE), True)  # untimed warm-up

    rows: dict[tuple[str, bool], list[float]] = {key: [] for key in timed}
    cpu.clear()
    for _ in range(args.repeat):
        for (name, guard), seconds in rows.items():
            seconds.append(run(name, head, guard).performance["seconds"])
    pair_seconds = [run("PygTGN pair by pair", pairwise_head, True).performance["seconds"]
                    for _ in range(max(1, args.repeat // 3))]

    batches = len(TimestampBatchLoader(data[head.start:head.end], BATCH_SIZE))

    def rate(name: str, guard: bool) -> float:
        return head.num_events / min(rows[(name, guard)])

    def cpu_rate(name: str, guard: bool) -> float:
        return head.num_events / median(cpu[(name, guard)])

    table = [[f"{name}, guard {'on' if guard else 'off'}", f"{head.num_events / min(v):,.0f}",
              f"{head.num_events / median(v):,.0f}", f"{cpu_rate(name, guard):,.0f}"]
             for (name, guard), v in rows.items()]
    table.append(["PygTGN pair by pair, guard on", f"{pairwise_head.num_events / min(pair_seconds):,.0f}",
                  f"{pairwise_head.num_events / median(pair_seconds):,.0f}", "-"])
    print(f"timing  : all-entity evaluate, events/s, best and median of {args.repeat} interleaved runs, and per "
          f"second of this process's CPU time (median; robust to other processes' load at one thread) "
          f"(pair by pair: {len(pair_seconds)} run(s) on {pairwise_head.num_events} events)")
    print_table(["model", "events/s (best)", "events/s (median)", "events per CPU s (median)"], table)
    share = rate("PygTGN (guide)", True) / rate("tgeval TGN", True)
    cpu_share = cpu_rate("PygTGN (guide)", True) / cpu_rate("tgeval TGN", True)
    print(f"ratio   : PygTGN / tgeval TGN (guard on) = {share:.2f} by wall time (target >= 0.50: "
          f"{'PASS' if share >= 0.5 else 'FAIL'}), {cpu_share:.2f} by CPU time; "
          f"PygTGN / tgeval TGN without its cache = "
          f"{cpu_rate('PygTGN (guide)', True) / cpu_rate('tgeval TGN, no cache', True):.2f} by CPU time; "
          f"PygTGN with relu_ decode / tgeval TGN = "
          f"{cpu_rate('PygTGN, relu_ decode', True) / cpu_rate('tgeval TGN', True):.2f} by CPU time; "
          f"PygTGN derived / pair by pair = "
          f"{rate('PygTGN (guide)', True) / (pairwise_head.num_events / min(pair_seconds)):.1f}x")
    for name in ("tgeval TGN", "PygTGN (guide)"):
        model = models[name]
        model.restore(snapshots[name])
        checks = []
        for _ in range(50):
            began = time.perf_counter()
            with no_state_change(model):
                pass
            checks.append(time.perf_counter() - began)
        per_batch = min(rows[(name, True)]) / batches
        print(f"guard   : {name}: guard on / off = {rate(name, True) / rate(name, False):.2f} of the speed; one "
              f"check (before + after a scoring step) {median(checks) * 1e3:.2f} ms = "
              f"{median(checks) / per_batch:.1%} of a guarded batch step ({per_batch * 1e3:.1f} ms)")
    print("replay  : " + ", ".join(f"{n} {r:,.0f} events/s" for n, r in replay_rate.items())
          + f" (tgeval.replay of the {history.num_events:,} events before the test segment, once)")

    def plain_views():  # the loader before it was a DataLoader: a generator of views
        bounds = TimestampBatchLoader(data, BATCH_SIZE).boundaries.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            yield TemporalData(src=data.src[start:end], dst=data.dst[start:end], t=data.t[start:end])

    loaders = {"TimestampBatchLoader (DataLoader, positions)": lambda: TimestampBatchLoader(data, BATCH_SIZE),
               "plain generator of views (before)": plain_views,
               "PyG TemporalDataLoader (event-count batches)": lambda: TemporalDataLoader(data, batch_size=BATCH_SIZE)}
    seconds: dict[str, list[float]] = {n: [] for n in loaders}
    counts = {}
    for _ in range(args.repeat):
        for name, make in loaders.items():
            began = time.perf_counter()
            counts[name] = sum(1 for _ in make())
            seconds[name].append(time.perf_counter() - began)
    base = min(seconds["plain generator of views (before)"])
    print(f"loader  : one pass over all {data.num_events:,} events (including building the loader), best of "
          f"{args.repeat}")
    print_table(["loader", "batches", "ms per pass", "us per batch", "vs before"],
                [[n, counts[n], f"{min(v) * 1e3:.1f}", f"{min(v) / counts[n] * 1e6:.1f}", f"{min(v) / base:.2f}x"]
                 for n, v in seconds.items()])
    save_results(args)


if __name__ == "__main__":
    main()
