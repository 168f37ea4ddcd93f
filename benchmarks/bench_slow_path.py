"""The pair-by-pair warning's estimate against the pass it describes.

Setting: UCI (or ``--dataset wikipedia``), 70/15/15 chronological split, 'train' catalog; the
guide's ``PygTGN`` (docs/guide/pyg-models.md; widths 100, 10 neighbours, fixed seed, eval mode) with its state built by
``tgeval.replay`` over every event before the test segment, then evaluated all-entity, online, in
batches of at most 200 events, ``warm=False``, on the first ``--num-events`` test events:

* **score only**: the same model without ``embed`` / ``decode`` (its ``score`` calls them
  internally), so the engine can only score every (event, item) pair through ``score``: the
  pass warns once (:class:`~tgeval.errors.SlowPathWarning`) with the pairs it scores and the time
  expected at its first step's rate; the table compares that with the pass's measured time;
* **embed / decode**: the guide's model as it is (the scorer derived from them): same ranks.

Run: python benchmarks/bench_slow_path.py [--dataset uci|wikipedia] [--num-events 1000] [--data-dir DIR] [--threads 1]
"""

from __future__ import annotations

import argparse
import re
import warnings

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import (add_common_args, apply_common_args, head_segment, load_setting, print_header, print_table,
                     save_results)

from tgeval import Segment, evaluate, replay
from tgeval.errors import SlowPathWarning
from tgeval.eval.protocol import Protocol
from tests.helpers import readme_pyg_tgn

PygTGN, PygTGNConfig = readme_pyg_tgn()


class ScoreOnlyPygTGN(PygTGN):
    """``PygTGN`` whose all-entity pass cannot see ``embed`` / ``decode`` (``score`` still uses them)."""

    embed = decode = None  # type: ignore[assignment]

    def score(self, src, dst, t):
        nodes, inverse = torch.cat([src, dst]).unique(return_inverse=True)
        z = PygTGN.embed(self, nodes)[inverse]
        return PygTGN.decode(self, z[: src.numel()], z[src.numel():])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("uci", "wikipedia"), default="uci")
    parser.add_argument("--num-events", type=int, default=1000, help="test events evaluated (0: all)")
    add_common_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("The pair-by-pair warning's estimate vs the pass it describes (PygTGN, all-entity)")
    data, how, split, catalog, num_nodes = load_setting(args.dataset, args.data_dir)
    head = head_segment(data, split.test, args.num_events)
    print(f"data    : {how}: {data.num_events:,} events; catalog {catalog.size:,} items; evaluated: the first "
          f"{head.num_events:,} test events; batches <= 200")
    torch.manual_seed(0)
    model = PygTGN(PygTGNConfig(num_nodes, msg_dim=1)).eval()
    replay(model, data, Segment("history", 0, split.test.start, None, None), batch_size=200)
    slow = ScoreOnlyPygTGN(PygTGNConfig(num_nodes, msg_dim=1)).eval()
    slow.load_state_dict(model.state_dict())
    state = model.snapshot()
    slow.restore(state)
    protocol = Protocol(replay="online", batch_size=200, warm=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        slow_result = evaluate(slow, data, head, protocol, sampler=None, catalog=catalog)
        fast_result = evaluate(model, data, head, protocol, sampler=None, catalog=catalog)
    notes = [str(w.message) for w in caught if issubclass(w.category, SlowPathWarning)]
    assert len(notes) == 1, f"expected one SlowPathWarning (the score-only pass), got {len(notes)}"
    assert torch.equal(slow_result.event_table()["rank"], fast_result.event_table()["rank"])
    estimate = float(re.search(r"about ([\d,.]+) s", notes[0]).group(1).replace(",", ""))
    print(f"warning : {notes[0]}")
    print("check   : score-only and embed/decode ranks identical")
    slow_s, fast_s = slow_result.performance["seconds"], fast_result.performance["seconds"]
    rows = [["score only (pair by pair)", "1", f"{estimate:.1f}", slow_s],
            ["embed / decode (guide)", "0", "-", fast_s]]
    print_table(["model", "warnings", "estimated s", "measured s", "events/s"],
                [[*row[:3], f"{row[3]:.1f}", f"{head.num_events / row[3]:,.0f}"] for row in rows])
    print(f"ratio   : estimate / measured = {estimate / slow_s:.2f}; embed/decode is {slow_s / fast_s:.1f}x faster")
    save_results(args)


if __name__ == "__main__":
    main()
