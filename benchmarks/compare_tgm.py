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

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_run_args, apply_common_args, print_header, print_table, save_results
from reproduce_tgb import tgb_numbered

from tgeval.eval.tuning import Tuning
from tgeval import evaluate
from tgeval.models.clock import EventClock
from tgeval.models.poptrack import POPTRACK_DECAY, POPTRACK_TICK, PopTrack
from tgeval.eval.presets import TGB


def tgm_ranks(data, split, num_nodes: int, pages: torch.Tensor,
              dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Test ranks of TGM's PopTrack in the stream's order, its popularity kept in ``dtype`` (TGM's is float32):
    average ties over ``pages``, the source's other positives at the same time left out (as TGB's files and
    tgeval do)."""
    from tgm.nn import PopTrackPredictor

    train = slice(split.train.start, split.train.end)
    model = PopTrackPredictor(data.src[train], data.dst[train], data.t[train], num_nodes, decay=POPTRACK_DECAY)
    if dtype != model.popularity.dtype:  # the same training update, in dtype
        model.popularity = torch.zeros(num_nodes, dtype=dtype)
        model.update(data.src[train], data.dst[train], data.t[train])
    ranks = []
    for segment in (split.val, split.test):
        for a in range(segment.start, segment.end, POPTRACK_TICK):
            z = min(a + POPTRACK_TICK, segment.end)
            src, dst, t = data.src[a:z], data.dst[a:z], data.t[a:z]
            if segment is split.test:
                scores = model(src[:, None].expand(-1, pages.numel()), pages[None, :].expand(z - a, -1))
                positive = model.popularity[dst][:, None]
                other = (src[:, None] == src[None, :]) & (t[:, None] == t[None, :]) & (dst[:, None] != dst[None, :])
                left_out = torch.zeros(z - a, pages.numel(), dtype=torch.bool)
                left_out[other.nonzero()[:, 0], dst[other.nonzero()[:, 1]] - pages[0]] = True
                above = ((scores > positive) & ~left_out).sum(1)
                ties = ((scores == positive) & ~left_out).sum(1) - 1
                ranks.append(1 + above.double() + ties.double() / 2)
            model.update(src, dst, t)
    return torch.cat(ranks)


def split_groups(data, segment) -> torch.Tensor:
    """bool, per event of the segment in the stream's order: its timestamp group spans two of TGM's slices (a
    query there sees simultaneous events of the slice before)."""
    t = data.t[segment.start:segment.end]
    slice_of = torch.arange(t.numel()) // POPTRACK_TICK
    first = slice_of[torch.searchsorted(t, t)]
    last = slice_of[torch.searchsorted(t, t, right=True) - 1]
    return first != last


def canonical(data, segment, num_nodes: int) -> torch.Tensor:
    """The permutation that puts the segment's events of the stream's order in tgeval's canonical order
    (time, source, destination)."""
    src, dst, t = (x[segment.start:segment.end] for x in (data.src, data.dst, data.t))
    return torch.argsort((t * num_nodes + src) * num_nodes + dst, stable=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    try:
        import tgm  # noqa: F401  (only whether it is installed)
    except ImportError:
        sys.exit("compare_tgm.py needs TGM (pip install tgm-lib, or pip install -e \".[tgm]\"); skipped.")
    print_header("tgbl-wiki: TGM's PopTrack against tgeval's poptrack")
    data = tgb_numbered()
    split = TGB.split(data)
    num_nodes = int(max(data.src.max(), data.dst.max())) + 1
    catalog = TGB.catalog(data, num_nodes)
    clock = EventClock(POPTRACK_TICK, (split.val.start, split.test.start))
    result = evaluate(PopTrack(num_nodes, clock=clock), data, split.test, TGB.protocol(history="exact"),
                      catalog=catalog, tuning=Tuning(records="events"))
    ours = result.event_table()["rank"].double()
    order = canonical(data, split.test, num_nodes)
    rows, equality = [], []
    for dtype in (torch.float32, torch.float64):
        theirs = tgm_ranks(data, split, num_nodes, catalog.items, dtype)
        theirs = theirs[order]
        same, split_group = ours == theirs, split_groups(data, split.test)[order]
        near = (ours - theirs).abs() <= 1
        name = str(dtype).removeprefix("torch.")
        rows.append([f"TGM PopTrackPredictor (decay 0.36, slices of 200), popularity in {name}", name,
                     f"{(1 / theirs).mean():.4f}"])
        equality.append([f"tgeval against TGM in {name}", f"{int(same.sum()):,}", f"{int((~same).sum()):,}",
                         f"{same.double().mean():.5f}", f"{int((~same & split_group).sum()):,}",
                         f"{int((~same & ~split_group & near).sum()):,}",
                         f"{int((~same & ~split_group & ~near).sum()):,}"])
    rows.append(["tgeval poptrack (history exact, range catalog)", "float64 log-counts", f"{(1 / ours).mean():.4f}"])
    print_table(["implementation", "scores", "test MRR"], rows,
                title=f"Test segment of tgbl-wiki ({ours.numel():,} events), each ranked against every page "
                      f"({catalog.items.numel():,}; the source's simultaneous positives left out), TGB's ties "
                      f"(average), MRR micro")
    print_table(["per-event ranks (canonical order)", "equal", "different", "fraction equal",
                 "different: timestamp group split by TGM's slices", "different by at most 1 rank", "different by more"],
                equality)
    save_results(args)


if __name__ == "__main__":
    main()
