"""All-entity EdgeBank replay over Wikipedia's 'train' catalog: tgeval vs. a Python set reference.

Setting: 70/15/15 chronological split, online protocol, batches of whole timestamp groups of
<= 200 events. For every evaluated event (u, v, t) every catalog item c is a candidate except
the source u and the destinations of same-source-same-timestamp events (v included), as in
``tgeval.data.exclusions.build_exclusions``; the output per event is the number of candidates
scoring strictly above / equal to the positive.

* tgeval, ``use_shortcut=True``: ``EdgeBank.catalog_counts`` (per-source counts of seen items).
* tgeval, ``use_shortcut=False``: generic chunked scoring of every (event, item) pair.
* set reference: a Python set of (u, v) tuples; for each event, a loop over the catalog that
  scores every item by membership and counts above / equal; the bank learns each batch after
  it is scored (same batch boundaries as tgeval, which runs with ``history="batch"`` to match;
  ``bench_history.py`` measures the exact per-timestamp default against it).

By default the comparison covers the whole test segment (the reference takes a few seconds
per run); ``--num-events N`` restricts it to the first N test events (rounded up to a whole
timestamp group), and tgeval's rate on the full segment is then printed as well. tgeval runs
on exactly the compared events, and the script asserts identical above / equal / candidate
counts before printing ratios. Timed region: the per-batch loop (bank
construction from earlier events and tgeval's metric summary are not timed).

Run: python benchmarks/bench_edgebank_all_entity.py [--num-events N] [--data-dir DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (add_common_args, best, head_segment, load_wikipedia, median, print_header, print_table,
                    save_results, timed)

from tgeval.eval.tuning import Tuning
from tgeval import TimestampBatchLoader, build_catalog, chronological_split, evaluate
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol

BATCH_SIZE = 200


def set_reference(history, events, items, bounds):
    """Python set of (u, v) tuples; every catalog item scored for every event. Lists are made before timing."""
    bank = set(zip(history.src.tolist(), history.dst.tolist()))
    src, dst, t = events.src.tolist(), events.dst.tolist(), events.t.tolist()
    bounds = bounds.tolist()

    def run():
        above_out, equal_out, cand_out = [], [], []
        for a, b in zip(bounds[:-1], bounds[1:]):
            simultaneous = defaultdict(set)  # (u, t) -> destinations of that source at that time
            for i in range(a, b):
                simultaneous[(src[i], t[i])].add(dst[i])
            for i in range(a, b):
                u = src[i]
                p = (u, dst[i]) in bank
                excluded = simultaneous[(u, t[i])]
                above = equal = cand = 0
                for c in items:
                    if c == u or c in excluded:
                        continue
                    cand += 1
                    s = (u, c) in bank
                    if s > p:
                        above += 1
                    elif s == p:
                        equal += 1
                above_out.append(above)
                equal_out.append(equal)
                cand_out.append(cand)
            bank.update(zip(src[a:b], dst[a:b]))
        return above_out, equal_out, cand_out

    seconds, (above, equal, cand) = timed(run)
    return seconds, torch.tensor(above), torch.tensor(equal), torch.tensor(cand)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--num-events", type=int, default=0,
                        help="compare on the first N test events, rounded up to a whole timestamp group "
                             "(default 0: the whole test segment)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("All-entity EdgeBank replay, Wikipedia 'train' catalog (online, batch <= 200)")

    data, how = load_wikipedia(args.data_dir)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    test = split.test
    catalog = build_catalog(data, "train", train_end=split.train.end)
    num_nodes = int(max(int(data.src.max()), int(data.dst.max())) + 1)
    seg = head_segment(data, test, args.num_events)
    print(f"data    : {how}; {data.num_events} events; test segment {test.num_events} events; 'train' catalog "
          f"{catalog.size} items; compared on {seg.name} = events [{seg.start}, {seg.end}) "
          f"({seg.num_events} events{'' if seg is test else ', the head of the test segment'})")

    def run_tgeval(segment, shortcut, guard=True):
        # as the reference: history at the batch start (bench_history.py: exact)
        return evaluate(EdgeBank(num_nodes), data, segment,
                        Protocol(replay="online", batch_size=BATCH_SIZE, history="batch"), catalog=catalog,
                        sampler=None, tuning=Tuning(use_shortcut=shortcut, check_state=guard))

    first = run_tgeval(seg, True)  # untimed warm-up run (first-call costs); fixes the reference counts
    ref = first.records
    # The reference replays the events in tgeval's order (``event`` = index of each record row in data).
    event = ref.get("event", torch.arange(seg.start, seg.end))
    history, events = data[: seg.start], data[event]
    assert torch.equal(events.t, data.t[seg.start : seg.end])
    bounds = TimestampBatchLoader(events, BATCH_SIZE).boundaries
    assert torch.equal(ref["batch"], torch.repeat_interleave(torch.arange(bounds.numel() - 1), bounds.diff()))
    items = catalog.items.tolist()

    def tgeval_method(shortcut, guard):
        def run():
            r = run_tgeval(seg, shortcut, guard)
            rec = r.records
            return r.performance["events_per_second"], rec["above"], rec["equal"], rec["candidates"]
        return run

    def reference():
        seconds, above, equal, cand = set_reference(history, events, items, bounds)
        return seg.num_events / seconds, above, equal, cand

    name = "set reference (loop over the catalog per event)"
    methods = {"tgeval, shortcut (use_shortcut=True), guard on": tgeval_method(True, True),
               "tgeval, shortcut, guard off": tgeval_method(True, False),
               "tgeval, chunked scoring (use_shortcut=False), guard on": tgeval_method(False, True),
               name: reference}
    # Repetitions are interleaved (round robin), so a change of machine load affects every method alike.
    rows = {n: [] for n in methods}
    for _ in range(args.repeat):
        for n, run in methods.items():
            eps, above, equal, cand = run()
            assert torch.equal(above, ref["above"]), f"{n}: `above` differs from tgeval's"
            assert torch.equal(equal, ref["equal"]), f"{n}: `equal` differs from tgeval's"
            assert torch.equal(cand, ref["candidates"]), f"{n}: candidate counts differ from tgeval's"
            rows[n].append(eps)
    print(f"check   : above / equal / candidate counts identical across methods on {seg.num_events} events "
          f"(sum above {int(ref['above'].sum())}, sum equal {int(ref['equal'].sum())}, "
          f"{int(ref['candidates'].sum())} (event, candidate) pairs)")

    set_eps = best(rows[name])
    table = [[n, f"{best(v):,.0f}", f"{median(v):,.0f}", f"{best(v) / set_eps:.1f}x"] for n, v in rows.items()]
    print(f"timing  : events/s on the {seg.num_events} compared events, best and median of {args.repeat} interleaved runs; "
          f"ratios use the best")
    print_table(["method", "events/s (best)", "events/s (median)", "vs set ref"], table)
    shortcut = best(rows["tgeval, shortcut (use_shortcut=True), guard on"])
    print(f"target  : tgeval shortcut >= 20x set reference: {shortcut / set_eps:.1f}x "
          f"-> {'PASS' if shortcut >= 20 * set_eps else 'FAIL'}")

    if seg is not test:
        full = []
        for shortcut_flag, label in ((True, "tgeval, shortcut, guard on"), (False, "tgeval, chunked scoring, guard on")):
            runs = [run_tgeval(test, shortcut_flag) for _ in range(args.repeat)]
            vals = [r.performance["events_per_second"] for r in runs]
            full.append([label, f"{best(vals):,.0f}", f"{median(vals):,.0f}"])
        print(f"full test segment ({test.num_events} events), tgeval only (the reference would take "
              f"~{test.num_events / set_eps:.0f} s per run):")
        print_table(["method", "events/s (best)", "events/s (median)"], full)
    save_results(args)


if __name__ == "__main__":
    main()
