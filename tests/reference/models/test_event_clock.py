"""The decayed popularity heuristics with an event clock against a plain loop over the events: the
ticks, every score and every all-entity rank, however the engine batches the stream."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.eval.tuning import Tuning
from tgeval import evaluate
from tgeval.data.catalog import Catalog
from tgeval.errors import ModelConfigError
from tgeval.models.clock import EventClock
from tgeval.models.heuristics import GlobalPopularity, LocalPopularity, Popularity
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.helpers import brute_force_counts
from tests.strategies import segment_from, streams

N = 8
CATALOG = Catalog("custom", torch.arange(N), None, N)
MODELS = {"popularity": Popularity, "popularity-global": GlobalPopularity, "popularity-local": LocalPopularity}
clocks = st.builds(lambda tick, origins: EventClock(tick, tuple(sorted(origins))), st.integers(1, 6),
                   st.lists(st.integers(0, 40), min_size=1, max_size=3))


def reference_ticks(num_events, clock):
    """Tick of each position: 0 before the first origin; a new tick at each origin and after every ``tick``
    events since the last new one."""
    ticks, tick, filled = [], 0, None
    for i in range(num_events):
        if i in clock.origins:
            tick, filled = tick + 1, 0
        elif filled == clock.tick:
            tick, filled = tick + 1, 0
        ticks.append(tick)
        filled = None if filled is None else filled + 1
    return ticks


def reference(data, clock, half_life, local):
    """score(u, v, t): log2 of the sum, over the events of ticks before the query's tick (the tick of the first
    event at ``t``), with destination ``v`` (and source ``u`` if ``local``), of 2^(-(tick gap) / half_life); the
    events in the engine's canonical order (t, src, dst)."""
    events = sorted(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()), key=lambda e: (e[2], e[0], e[1]))
    ticks = reference_ticks(len(events) + 1, clock)

    def score(u, v, t):
        k = ticks[sum(s < t for _, _, s in events)]
        total = sum(2.0 ** (-(k - c) / half_life) for (a, b, _), c in zip(events, ticks)
                    if c < k and b == v and (not local or a == u))
        return math.log2(total) if total > 0 else -math.inf
    return score


def _run(name, data, segment, clock, half_life, batch_size, history="exact"):
    return evaluate(MODELS[name](N, half_life=half_life, clock=clock), data, segment,
                    Protocol(num_negatives=3, batch_size=batch_size, seed=1, history=history),
                    sampler=UniformSampler(CATALOG, replace=True), catalog=CATALOG, tuning=Tuning(candidate_budget=7))


@given(num_events=st.integers(0, 60), clock=clocks)
def test_ticks_equal_a_loop(num_events, clock):
    assert clock.ticks(torch.arange(num_events)).tolist() == reference_ticks(num_events, clock)
    ticks = reference_ticks(num_events + 1, clock)
    assert [clock.tick_of(i) for i in range(num_events)] == ticks[:num_events]
    for k in set(ticks[1:]) - {0}:  # the first position of each tick
        assert clock.start_of(k) == ticks.index(k)


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=6, max_events=36, max_nodes=N, max_time=10), name=st.sampled_from(sorted(MODELS)),
       clock=clocks, half_life=st.sampled_from([0.7, 1.5, 4.0]), start=st.integers(1, 20),
       batch_size=st.integers(1, 40))
def test_scores_and_ranks_equal_a_loop(data, name, clock, half_life, start, batch_size):
    """Positive and negative scores to rounding, all-entity ranks exactly, at any batch size."""
    segment = segment_from(data, min(start, data.num_events - 1))
    rec = _run(name, data, segment, clock, half_life, batch_size).records
    score = reference(data, clock, half_life, name == "popularity-local")
    for i, (u, v, t) in enumerate(zip(rec["src"].tolist(), rec["dst"].tolist(), rec["t"].tolist())):
        got = [rec["score"][i].item()] + rec["neg_score"][i].tolist()
        expected = [score(u, v, t)] + [score(u, q, t) for q in rec["neg"][i].tolist()]
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, i)
    counts = brute_force_counts(score, rec["src"], rec["dst"], rec["t"], CATALOG.items)
    assert [(a, e) for a, e, _ in counts] == list(zip(rec["above"].tolist(), rec["equal"].tolist())), name


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=N, max_time=10), name=st.sampled_from(sorted(MODELS)),
       clock=clocks, start=st.integers(1, 20), sizes=st.lists(st.integers(1, 40), min_size=2, max_size=2),
       cuts=st.lists(st.integers(0, 40), max_size=6))
def test_any_batching_gives_the_same_scores(data, name, clock, start, sizes, cuts):
    """The engine's batch size changes no record; the state after any cuts of the stream (inside timestamp groups
    too) scores every pair the same."""
    segment = segment_from(data, min(start, data.num_events - 1))
    a, b = (_run(name, data, segment, clock, 1.5, size).records for size in sizes)
    for key in ("score", "neg_score", "above", "equal"):
        assert torch.allclose(a[key].double(), b[key].double(), rtol=1e-12, atol=0.0), key
    whole, pieces = MODELS[name](N, half_life=1.5, clock=clock), MODELS[name](N, half_life=1.5, clock=clock)
    whole.update(data)
    bounds = sorted({0, data.num_events, *(c for c in cuts if c < data.num_events)})
    for lo, hi in zip(bounds, bounds[1:]):
        pieces.update(data[lo:hi])
    queries = torch.arange(N).repeat_interleave(N), torch.arange(N).repeat(N)
    t = torch.full((N * N,), int(data.t[-1]) + 1)
    assert torch.allclose(whole.score(*queries, t), pieces.score(*queries, t), rtol=1e-12, atol=0.0)


def test_poptrack_rule_by_hand():
    """Training (4 events) is one tick, then one tick per 2 events: a query of tick 2 sees tick 0 decayed twice
    and tick 1 once; the events of its own tick do not count."""
    from torch_geometric.data import TemporalData

    data = TemporalData(src=torch.zeros(8, dtype=torch.long), dst=torch.tensor([1, 1, 2, 3, 2, 3, 1, 1]),
                        t=torch.arange(8))
    decay = 0.5  # half-life 1 tick
    model = GlobalPopularity(4, half_life=1.0, clock=EventClock(2, (4,)))
    model.update(data[:7])  # ticks 0 0 0 0 1 1 2: the event at position 6 is of tick 2, the next one's tick
    scores = model.score(torch.zeros(4, dtype=torch.long), torch.arange(4), torch.full((4,), 7))
    # page 1: 2 training events * decay^2 = 0.5; page 2: 1 * decay^2 + 1 * decay = 0.75; page 3: 0.25 + 0.5
    expected = [0.0, 2 * decay ** 2, decay ** 2 + decay, decay ** 2 + decay]
    assert scores.tolist() == [-math.inf] + [math.log2(x) for x in expected[1:]]


def test_bad_clocks_are_refused():
    with pytest.raises(ModelConfigError, match="tick is a number of events >= 1"):
        EventClock(0)
    with pytest.raises(ModelConfigError, match="origins are non-decreasing"):
        EventClock(200, (5, 3))
    with pytest.raises(ModelConfigError, match="clock must be 'time' or an EventClock"):
        GlobalPopularity(N, half_life=1.0, clock="events")
    with pytest.raises(ModelConfigError, match="give half_life"):
        Popularity(N, clock=EventClock(200))
