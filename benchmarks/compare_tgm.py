"""TGM's PopTrack beside tgeval's ``poptrack`` (``popularity-global`` with an event clock) on tgbl-wiki.

tgbl-wiki is rebuilt from the shared Wikipedia file as ``benchmarks/reproduce_tgb.py`` does (TGB's numbering and
split). TGM's ``PopTrackPredictor`` runs as TGM's tgbl-wiki example runs it: built from the training events (one
update), decay 0.36, then TGB's fixed slices of 200 events, each scored and then fed (validation, then test, the
same model). tgeval's ``PopTrack`` (half-life ``1 / log2(1 / 0.36)`` ticks, one tick per 200 events from the
validation and test starts) is evaluated on the test segment with exact history, every page ranked (the ``range``
catalog, TGB's ties). TGM's ranks are computed from its float32 scores with the same rule (simultaneous positives
of the source left out, as tgeval does). TGM's Base3 exists only as work-in-progress example code, not in the
package, so it is not compared.

Run: python benchmarks/compare_tgm.py [--threads 1] [--out benchmarks/results/compare_tgm.json]
(needs TGM: ``pip install -e ".[tgm]"``)
"""

from __future__ import annotations

import argparse
import sys
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_run_args, apply_common_args, print_header, print_table, save_results
from reproduce_tgb import tgb_numbered

from tgeval import evaluate
from tgeval.models.clock import EventClock
from tgeval.models.poptrack import POPTRACK_DECAY, POPTRACK_TICK, PopTrack
from tgeval.presets import TGB
from tgeval.protocol import Protocol


def tgm_ranks(data, split, num_nodes: int, pages: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Test ranks of TGM's PopTrack (average ties over ``pages``, the source's simultaneous positives left out)."""
    from tgm.nn import PopTrackPredictor

    start = time.perf_counter()
    train = slice(split.train.start, split.train.end)
    model = PopTrackPredictor(data.src[train], data.dst[train], data.t[train], num_nodes, decay=POPTRACK_DECAY)
    ranks = []
    for segment in (split.val, split.test):
        for a in range(segment.start, segment.end, POPTRACK_TICK):
            z = min(a + POPTRACK_TICK, segment.end)
            src, dst, t = data.src[a:z], data.dst[a:z], data.t[a:z]
            if segment is split.test:
                scores = model(src[:, None].expand(-1, pages.numel()), pages[None, :].expand(z - a, -1))
                positive = model.popularity[dst][:, None]
                rank = 1 + (scores > positive).sum(1) + ((scores == positive).sum(1) - 1) / 2
                ranks.append(rank.double())
            model.update(src, dst, t)
    ranks = torch.cat(ranks)
    return ranks, time.perf_counter() - start



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    try:
        import tgm  # noqa: F401
    except ImportError:
        sys.exit("compare_tgm.py needs TGM (pip install tgm-lib, or pip install -e \".[tgm]\"); skipped.")
    print_header("tgbl-wiki: TGM's PopTrack against tgeval's poptrack")
    data = tgb_numbered()
    split = TGB.split(data)
    num_nodes = int(max(data.src.max(), data.dst.max())) + 1
    catalog = TGB.catalog(data, num_nodes)
    start = time.perf_counter()
    clock = EventClock(POPTRACK_TICK, (split.val.start, split.test.start))
    result = evaluate(PopTrack(num_nodes, clock=clock), data, split.test, TGB.protocol(history="exact"),
                      catalog=catalog, records="events")
    ours_seconds = time.perf_counter() - start
    ours = result.event_table()["rank"].double()
    theirs, tgm_seconds = tgm_ranks(data, split, num_nodes, catalog.items)
    same = ours == theirs
    print_table(["implementation", "scores", "test MRR", "seconds (val + test)"],
                [["TGM PopTrackPredictor (decay 0.36, slices of 200)", "float32", f"{(1 / theirs).mean():.4f}",
                  f"{tgm_seconds:.1f}"],
                 ["tgeval poptrack (history exact, range catalog)", "float64 log-counts",
                  f"{(1 / ours).mean():.4f}", f"{ours_seconds:.1f}"]],
                title=f"Test segment of tgbl-wiki ({ours.numel():,} events, {catalog.items.numel():,} pages)")
    print_table(["per-event ranks", "events", "fraction"],
                [["equal", f"{int(same.sum()):,}", f"{same.double().mean():.5f}"],
                 ["different", f"{int((~same).sum()):,}", f"{(~same).double().mean():.5f}"]])
    save_results(args)


if __name__ == "__main__":
    main()
