"""Sampled EdgeBank replay on the Wikipedia test segment: tgeval vs. a Python set and tgm-lib.

Setting: 70/15/15 chronological split, online protocol (the bank learns each batch after
it is scored; tgeval with ``history="batch"``, the peers' convention), batches of whole
timestamp groups of <= 200 events, K = 20 uniform negatives
drawn once by tgeval's ``UniformSampler`` over the 'train' catalog. Every method scores the
SAME negatives with the SAME batch boundaries; the script asserts that all positive and
negative scores are identical before it prints any ratio.

Timed region (every method): the per-batch loop over the test segment (score positives and
negatives, then learn the batch). Not timed: building the bank from the history before the
test segment (tgeval's warm-up, the reference's set construction, tgm-lib's constructor),
and tgeval's metric summary after the loop. tgeval's numbers are its own
``result.performance["events_per_second"]``, which times exactly that loop.

Run: python benchmarks/bench_edgebank_sampled.py [--data-dir DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import logging
import warnings

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_common_args, best, load_wikipedia, median, print_header, print_table, save_results, timed

from tgeval.eval.tuning import Tuning
from tgeval import TimestampBatchLoader, build_catalog, chronological_split, evaluate
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol
from tgeval.samplers import NegativeSampler, UniformSampler

K = 20
BATCH_SIZE = 200


class FixedNegatives(NegativeSampler):
    """Returns precomputed negatives, looked up by the global event index ``batch.e_id`` (a pure
    lookup: history-free, so the engine reads a whole window of them at once)."""

    name = "fixed-negatives"
    history_free = True

    def __init__(self, negatives: torch.Tensor, start: int) -> None:
        self.negatives, self.start = negatives, start

    def sample(self, batch, num_negatives, generator=None):
        return self.negatives[batch.e_id - self.start, :num_negatives]


# -- baselines ----------------------------------------------------------------------------
def set_reference(history, events, negatives, bounds, tensor_io=False):
    """Plain Python: a set of (u, v) tuples; per batch score positives and negatives, then add the pairs.

    ``tensor_io=False``: inputs are Python lists made before the clock starts and scores stay
    Python lists (the reference's best case). ``tensor_io=True``: each batch arrives as tensors
    (converted with ``tolist()``) and its scores leave as float64 tensors, like tgeval's.
    """
    bank = set(zip(history.src.tolist(), history.dst.tolist()))
    bounds = bounds.tolist()
    if tensor_io:
        src, dst, neg = events.src, events.dst, negatives
    else:
        src, dst, neg = events.src.tolist(), events.dst.tolist(), negatives.tolist()

    def run():
        pos_out, neg_out = [], []
        contains = bank.__contains__
        for a, b in zip(bounds[:-1], bounds[1:]):
            s, d, n = src[a:b], dst[a:b], neg[a:b]
            if tensor_io:
                s, d, n = s.tolist(), d.tolist(), n.tolist()
            p = list(map(contains, zip(s, d)))
            q = [(u, x) in bank for u, row in zip(s, n) for x in row]
            if tensor_io:
                p = torch.tensor(p, dtype=torch.float64)
                q = torch.tensor(q, dtype=torch.float64).view(-1, K)
                pos_out.append(p)
                neg_out.append(q)
            else:
                pos_out.extend(p)
                neg_out.extend(q)
            bank.update(zip(s, d))
        return pos_out, neg_out

    seconds, (pos, neg_scores) = timed(run)
    if tensor_io:
        return seconds, torch.cat(pos), torch.cat(neg_scores)
    return seconds, torch.tensor(pos, dtype=torch.float64), torch.tensor(neg_scores, dtype=torch.float64).view(-1, K)


def load_tgm():
    try:
        from tgm.nn import EdgeBankPredictor
    except Exception as exc:  # noqa: BLE001 - any import failure means "skip this baseline"
        return None, f"tgm-lib is not importable ({type(exc).__name__}: {exc}); install with `pip install tgm-lib`"
    logging.getLogger("tgm").setLevel(logging.ERROR)  # its constructor warns about out-of-order events
    return EdgeBankPredictor, None


def tgm_reference(EdgeBankPredictor, history, events, negatives, bounds):
    """tgm-lib's EdgeBankPredictor (unlimited memory): the same loop with its __call__ / update."""
    bank = EdgeBankPredictor(history.src, history.dst, history.t, memory_mode="unlimited")
    src, dst, t = events.src, events.dst, events.t
    bounds = bounds.tolist()

    def run():
        pos_out, neg_out = [], []
        for a, b in zip(bounds[:-1], bounds[1:]):
            s, d = src[a:b], dst[a:b]
            pos_out.append(bank(s, d))
            neg_out.append(bank(s.repeat_interleave(K), negatives[a:b].flatten()))
            bank.update(s, d, t[a:b])
        return pos_out, neg_out

    seconds, (pos, neg) = timed(run)
    return seconds, torch.cat(pos).double(), torch.cat(neg).double().view(-1, K)


def load_tgb():
    """TGB's EdgeBankPredictor lives in TGB's repository (modules/edgebank_predictor.py), not in
    the py-tgb wheel; it is used only when that file is importable as ``modules.edgebank_predictor``."""
    try:
        from modules.edgebank_predictor import EdgeBankPredictor  # TGB repository checkout on sys.path
    except Exception:  # noqa: BLE001
        return None, ("TGB's EdgeBankPredictor is not in the py-tgb wheel (it is TGB's repository file "
                      "modules/edgebank_predictor.py); put a TGB checkout on PYTHONPATH to include it")
    if not hasattr(EdgeBankPredictor, "update_memory"):
        return None, "this TGB EdgeBankPredictor has no update_memory(); it cannot replay online"
    return EdgeBankPredictor, None


def tgb_reference(EdgeBankPredictor, history, events, negatives, bounds):
    """TGB's EdgeBankPredictor (numpy API: predict_link(query_src, query_dst), update_memory(src, dst, ts))."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bank = EdgeBankPredictor(history.src.numpy(), history.dst.numpy(), history.t.numpy(), memory_mode="unlimited")
    src, dst, t, neg = events.src.numpy(), events.dst.numpy(), events.t.numpy(), negatives.numpy()
    bounds = bounds.tolist()

    def run():
        pos_out, neg_out = [], []
        for a, b in zip(bounds[:-1], bounds[1:]):
            s, d = src[a:b], dst[a:b]
            pos_out.append(torch.as_tensor(bank.predict_link(s, d)))
            neg_out.append(torch.as_tensor(bank.predict_link(s.repeat(K), neg[a:b].reshape(-1))))
            bank.update_memory(s, d, t[a:b])
        return pos_out, neg_out

    seconds, (pos, neg_scores) = timed(run)
    return seconds, torch.cat(pos).double(), torch.cat(neg_scores).double().view(-1, K)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("Sampled EdgeBank replay, Wikipedia test segment (online, batch <= 200, K = 20 uniform)")
    torch.manual_seed(0)

    data, how = load_wikipedia(args.data_dir)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    test = split.test
    catalog = build_catalog(data, "train", train_end=split.train.end)
    num_nodes = int(max(int(data.src.max()), int(data.dst.max())) + 1)
    bounds = TimestampBatchLoader(data[test.start : test.end], BATCH_SIZE).boundaries
    print(f"data    : {how}; {data.num_events} events; test segment [{test.start}, {test.end}) = "
          f"{test.num_events} events in {bounds.numel() - 1} timestamp batches; 'train' catalog "
          f"{catalog.size} items")

    def run_tgeval(sampler, check_state):
        # as the peers: history at the batch start (bench_history.py: exact)
        return evaluate(EdgeBank(num_nodes), data, test,
                        Protocol(replay="online", num_negatives=K, batch_size=BATCH_SIZE, seed=0, history="batch"),
                        sampler=sampler, tuning=Tuning(check_state=check_state))

    # 1. tgeval's full path draws the negatives once; every other method gets exactly those.
    first = run_tgeval(UniformSampler(catalog), True)  # also the untimed warm-up run
    ref = first.records
    # Records are in tgeval's replay order; ``event`` is each row's index in ``data`` (tgeval replays
    # each timestamp group in a canonical order, so rows need not follow file order).
    event = ref.get("event", torch.arange(test.start, test.end))
    history, events = data[: test.start], data[event]
    assert torch.equal(events.t, data.t[test.start : test.end]), "replay order must keep timestamps sorted"
    assert torch.equal(ref["batch"], torch.repeat_interleave(torch.arange(bounds.numel() - 1), bounds.diff()))
    negatives = ref["neg"]  # [E, K], row i belongs to data[event[i]]
    assert negatives.shape == (test.num_events, K)
    pos_ref, neg_ref = ref["score"].double(), ref["neg_score"].double()
    by_index = torch.empty_like(negatives)
    by_index[event - test.start] = negatives
    fixed = FixedNegatives(by_index, test.start)

    def tgeval_method(sampler_factory, guard):
        def run():
            r = run_tgeval(sampler_factory(), guard)
            assert torch.equal(r.records["neg"], negatives), "tgeval: negatives differ between runs"
            return r.performance["events_per_second"], r.records["score"].double(), r.records["neg_score"].double()
        return run

    def reference_method(runner, *extra):
        def run():
            seconds, pos, neg = runner(*extra, history, events, negatives, bounds)
            return test.num_events / seconds, pos, neg
        return run

    methods = {
        "tgeval, own UniformSampler, guard on": tgeval_method(lambda: UniformSampler(catalog), True),
        "tgeval, fixed negatives, guard on (default)": tgeval_method(lambda: fixed, True),
        "tgeval, fixed negatives, guard off": tgeval_method(lambda: fixed, False),
        "set reference (Python set of tuples)": reference_method(
            lambda *a: set_reference(*a, tensor_io=False)),
        "set reference, tensor in/out per batch": reference_method(
            lambda *a: set_reference(*a, tensor_io=True)),
    }
    skipped = []
    for label, loader, runner in (("tgm-lib EdgeBankPredictor", load_tgm, tgm_reference),
                                  ("TGB EdgeBankPredictor", load_tgb, tgb_reference)):
        cls, why = loader()
        if cls is None:
            skipped.append(f"{label}: skipped - {why}")
        else:
            methods[label] = reference_method(runner, cls)

    # Repetitions are interleaved (round robin over the methods), so a change of machine load
    # during the script affects every method alike.
    rows = {name: [] for name in methods}
    for _ in range(args.repeat):
        for name, run in methods.items():
            eps, pos, neg = run()
            assert torch.equal(pos, pos_ref), f"{name}: positive scores differ from tgeval's"
            assert torch.equal(neg, neg_ref), f"{name}: negative scores differ from tgeval's"
            rows[name].append(eps)

    print(f"check   : positive and negative scores identical across all methods "
          f"({test.num_events} positives, {negatives.numel()} negatives; "
          f"{int(pos_ref.sum())} positives and {int(neg_ref.sum())} negatives seen before)")
    set_eps = best(rows["set reference (Python set of tuples)"])
    tgm_eps = best(rows["tgm-lib EdgeBankPredictor"]) if "tgm-lib EdgeBankPredictor" in rows else None
    table = []
    for name, values in rows.items():
        eps = best(values)
        table.append([name, f"{eps:,.0f}", f"{median(values):,.0f}", f"{eps / set_eps:.2f}x",
                      f"{eps / tgm_eps:.1f}x" if tgm_eps else "n/a"])
    print(f"timing  : events/s over the {test.num_events} test events, best and median of {args.repeat} interleaved "
          f"runs; ratios use the best")
    print_table(["method", "events/s (best)", "events/s (median)", "vs set ref", "vs tgm-lib"], table)
    for line in skipped:
        print(line)
    default = best(rows["tgeval, fixed negatives, guard on (default)"])
    print(f"target  : tgeval (default guard) >= 1x set reference: {default / set_eps:.2f}x "
          f"-> {'PASS' if default >= set_eps else 'FAIL'}")
    if tgm_eps:
        print(f"target  : tgeval (default guard) >= 5x tgm-lib: {default / tgm_eps:.1f}x "
              f"-> {'PASS' if default >= 5 * tgm_eps else 'FAIL'}")
    print("note    : the 'own UniformSampler' row includes drawing the negatives inside the timed loop; "
          "the other rows do not draw (they look up the same precomputed negatives).")
    save_results(args)


if __name__ == "__main__":
    main()
