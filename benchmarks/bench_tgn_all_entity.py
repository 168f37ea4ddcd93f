"""All-entity scoring of TGN over Wikipedia's 'train' catalog: the fast path vs. two slower ways.

Setting: 70/15/15 chronological split; TGN with PyG's recipe widths (memory, time and
embedding 100, 10 neighbours), freshly initialised with a fixed seed (scoring cost does not
depend on the weights), state built from every event before the test segment; then the
head of the test segment is replayed online in batches of whole timestamp groups of at
most 200 events: score every catalog item for every event of the batch, then
``model.update(batch)``. Every method starts from the same state snapshot and sees the same
batches.

* **(a) fast path, incremental** (the default): ``model.candidate_scorer(src, t, items)``
  keeps every node's embedding and the items' decoder terms across batches and recomputes
  only the nodes the last update changed, then combines per pair (add, ReLU, output
  projection).
* **(a0) fast path, not incremental** (``model.incremental = False``): embeds the batch's
  sources and every item once per batch, computes the decoder terms once, combines per pair.
* **(b) per-event loop** (not incremental): for each event, ``model.score`` of the ``C``
  pairs (source, item): every item is embedded again for every event, as TGB's examples do.
* **(c) embed once per batch, plain decoder** (not incremental): embeddings as (a0), then
  ``model.decoder(z_src expanded, z_items expanded)`` on all ``B x C`` pairs (the decoder's
  input projections run per pair instead of per node).
* **tgeval evaluate** (context): the engine's full all-entity replay on the same events
  (``evaluate(catalog=..., sampler=None)``: exclusions, counting above / equal, metric
  summary not timed), incremental, state guard on and off; and not incremental.

The script asserts that (a), (b) and (c) give the same scores to 1e-5 (absolute) for every
compared (event, item) pair before printing ratios. ``--num-events N`` sets how many test
events are compared (rounded up to a whole timestamp group; (b) costs ~10 ms per event);
the fast path and the engine are also timed on the whole test segment (``--full-repeat``
runs each, default 1; ``--no-full`` skips that).

Run: python benchmarks/bench_tgn_all_entity.py [--num-events 400] [--full-repeat 1] [--no-full] [--data-dir DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_common_args, head_segment, load_wikipedia, median, print_header, print_table, save_results
from torch import Tensor

from tgeval.eval.tuning import Tuning
from tgeval import (
    Segment,
    TimestampBatchLoader,
    build_catalog,
    chronological_split,
    evaluate,
    warm_up,
)
from tgeval.models.config import TGNConfig
from tgeval.models.tgn import TGN
from tgeval.eval.protocol import Protocol

BATCH_SIZE = 200
TOLERANCE = 1e-5


def fast_path(model: TGN, src: Tensor, t: Tensor, items: Tensor) -> Tensor:
    """(a) ``[B, C]`` through the factorised ``candidate_scorer``."""
    return model.candidate_scorer(src, t, items)(slice(None), slice(None))


def per_event(model: TGN, src: Tensor, t: Tensor, items: Tensor) -> Tensor:
    """(b) ``[B, C]``, one ``model.score`` call over the ``C`` pairs of each event."""
    c = items.numel()
    return torch.stack([model.score(src[i].expand(c), items, t[i].expand(c)) for i in range(src.numel())])


def batch_plain_decoder(model: TGN, src: Tensor, t: Tensor, items: Tensor) -> Tensor:
    """(c) ``[B, C]``: embed once per batch, then the plain decoder on every expanded pair."""
    n_id, inverse = torch.cat([src, items]).unique(return_inverse=True)
    z = model.embed(n_id)
    b, c = src.numel(), items.numel()
    z_src, z_items = z[inverse[:b]], z[inverse[b:]]
    d = z.size(1)
    return model.decoder(z_src[:, None, :].expand(b, c, d).reshape(-1, d),
                         z_items[None, :, :].expand(b, c, d).reshape(-1, d)).view(b, c)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument("--num-events", type=int, default=400,
                        help="compare (a), (b), (c) on the first N test events, rounded up to a whole timestamp "
                             "group (default 400; 0: the whole test segment, ~15 min per run of (b))")
    parser.add_argument("--no-full", action="store_true",
                        help="skip timing the fast path and the engine on the whole test segment")
    parser.add_argument("--full-repeat", type=int, default=1,
                        help="timed runs of each method on the whole test segment (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="torch seed of the model's initialisation")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_header("All-entity TGN scoring, Wikipedia 'train' catalog (online, batch <= 200)")

    data, how = load_wikipedia(args.data_dir)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    test = split.test
    catalog = build_catalog(data, "train", train_end=split.train.end)
    items = catalog.items
    num_nodes = int(max(int(data.src.max()), int(data.dst.max())) + 1)
    seg = head_segment(data, test, args.num_events)
    torch.manual_seed(args.seed)
    model = TGN(TGNConfig(num_nodes, msg_dim=1, memory_dim=100, time_dim=100, embedding_dim=100,
                          num_neighbors=10)).eval()
    print(f"data    : {how}; {data.num_events} events; test segment {test.num_events} events; 'train' catalog "
          f"{catalog.size} items; compared on {seg.name} = events [{seg.start}, {seg.end}) ({seg.num_events} events)")
    print(f"model   : TGN(memory/time/embedding 100, 10 neighbours), seed {args.seed}, eval mode, no_grad; state "
          f"built from the {test.start} events before the test segment")

    began = time.perf_counter()
    warm_up(model, data[: test.start], batch_size=BATCH_SIZE)
    print(f"warm-up : {time.perf_counter() - began:.1f} s (not timed below)")
    start_state = model.snapshot()

    def replay(method, segment: Segment, keep: bool, incremental: bool):
        """Seconds of the online loop over ``segment`` (score all items, update) and the scores."""
        model.restore(start_state)
        model.incremental = incremental
        out = []
        loader = TimestampBatchLoader(data[segment.start : segment.end], BATCH_SIZE)
        with torch.no_grad():
            began = time.perf_counter()
            for batch in loader:
                scores = method(model, batch.src, batch.t, items)
                if keep:
                    out.append(scores)
                model.update(batch)
            seconds = time.perf_counter() - began
        return seconds, (torch.cat(out) if keep else None)

    methods = {"(a) fast path: candidate_scorer, incremental": (fast_path, True),
               "(a0) fast path, not incremental": (fast_path, False),
               "(b) per-event loop: model.score per event": (per_event, False),
               "(c) embed once per batch, plain decoder per pair": (batch_plain_decoder, False)}
    # Untimed warm-up of each method on the first batch's worth of events.
    first = head_segment(data, test, BATCH_SIZE)
    for method, incremental in methods.values():
        replay(method, first, keep=False, incremental=incremental)

    engines = {"tgeval evaluate (engine), incremental, guard on": (True, True),
               "tgeval evaluate (engine), incremental, guard off": (True, False),
               "tgeval evaluate (engine), not incremental, guard on": (False, True)}

    def run_engine(segment: Segment, incremental: bool, guard: bool) -> float:
        model.restore(start_state)
        model.incremental = incremental
        r = evaluate(model, data, segment, Protocol(replay="online", batch_size=BATCH_SIZE, warm=False), sampler=None,
                     catalog=catalog, tuning=Tuning(check_state=guard))
        return r.performance["seconds"]

    run_engine(first, True, True)

    rows: dict[str, list[float]] = {n: [] for n in list(methods) + list(engines)}
    reference = None
    max_diff = {n: 0.0 for n in methods}
    for _ in range(args.repeat):  # interleaved (round robin)
        for name, (method, incremental) in methods.items():
            seconds, scores = replay(method, seg, keep=True, incremental=incremental)
            rows[name].append(seconds)
            if reference is None:
                reference = scores
            max_diff[name] = max(max_diff[name], float((scores - reference).abs().max()))
        for name, (incremental, guard) in engines.items():
            rows[name].append(run_engine(seg, incremental, guard))
    assert reference is not None and reference.shape == (seg.num_events, catalog.size)
    for name, diff in max_diff.items():
        assert diff <= TOLERANCE, f"{name}: scores differ from the fast path's by {diff:.3g} > {TOLERANCE}"
    print(f"check   : {reference.numel():,} (event, item) scores; max |difference| to (a): "
          + ", ".join(f"{n.split(' ')[0]} {d:.2e}" for n, d in max_diff.items()) + f" (tolerance {TOLERANCE})")

    n = seg.num_events
    fast = min(rows["(a) fast path: candidate_scorer, incremental"])
    table = [[name, f"{min(v) / n * 1e3:.3f}", f"{median(v) / n * 1e3:.3f}", f"{min(v) / fast:.1f}x"]
             for name, v in rows.items()]
    print(f"timing  : ms/event on the {n} compared events (score all {catalog.size} items + update), best and "
          f"median of {args.repeat} interleaved runs; 'cost vs (a)' uses the best")
    print_table(["method", "ms/event (best)", "ms/event (median)", "cost vs (a)"], table)
    slow_b = min(rows["(b) per-event loop: model.score per event"]) / fast
    slow_c = min(rows["(c) embed once per batch, plain decoder per pair"]) / fast
    print(f"target  : (a) vs (b) >= 20x: {slow_b:.1f}x -> {'PASS' if slow_b >= 20 else 'FAIL'}; "
          f"(a) vs (c) >= 2x: {slow_c:.1f}x -> {'PASS' if slow_c >= 2 else 'FAIL'}; "
          f"scores identical to {TOLERANCE}: PASS")

    if not args.no_full and seg is not test:
        full = []
        for incremental in (True, False):
            runs = [replay(fast_path, test, keep=False, incremental=incremental)[0] for _ in range(args.full_repeat)]
            full.append([f"(a{'' if incremental else '0'}) fast path, {'' if incremental else 'not '}incremental",
                         f"{min(runs) / test.num_events * 1e3:.3f}", f"{median(runs) / test.num_events * 1e3:.3f}"])
        for name, (incremental, guard) in engines.items():
            runs = [run_engine(test, incremental, guard) for _ in range(args.full_repeat)]
            full.append([name, f"{min(runs) / test.num_events * 1e3:.3f}", f"{median(runs) / test.num_events * 1e3:.3f}"])
        print(f"full test segment ({test.num_events} events), best and median of {args.full_repeat} run(s):")
        print_table(["method", "ms/event (best)", "ms/event (median)"], full)
    save_results(args)


if __name__ == "__main__":
    main()
