"""Recency and popularity heuristics, local (per pair) and global (per destination), unlimited,
windowed and decayed, and their lexicographic combinations, against plain-Python references over every
event before each query; their scores never read the scored batch's or later events."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.eval.tuning import Tuning
from tgeval import evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.eval.engine import warm_up
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.models import registry
from tgeval.models.clock import EventClock
from tgeval.models.heuristics import (GlobalPopularity, GlobalRecency, LocalPopularity, LocalRecency, Popularity)
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream
from tests.helpers import assert_matches_reference
from tests.strategies import segment_from, streams

N = 10
CATALOG = Catalog("custom", torch.arange(N), None, N)


def _matching(events, scope, u, v, t, window):
    """Times of the events before ``t`` (within the window) of the pair (local) or destination (global)."""
    return [s for a, b, s in events if s < t and (window is None or s >= t - window)
            and b == v and (scope == "global" or a == u)]


def recency(scope, window=None):
    def score(events, u, v, t):
        times = _matching(events, scope, u, v, t, window)
        return -float(t - max(times)) if times else -math.inf
    return score


def popularity(scope, window=None, half_life=None):
    def score(events, u, v, t):
        if half_life is None:
            return float(len(_matching(events, scope, u, v, t, window)))
        total = sum(2.0 ** (-(t - s) / half_life) for s in _matching(events, scope, u, v, t, None))
        return math.log2(total) if total > 0 else -math.inf
    return score


def lexicographic(first, second):
    """The combination's score: ``code(first) * 2^26 + code(second)``, a time's code being the number of distinct
    times of the stream up to it (0: none), a popularity's its count."""
    def code(key, events, u, v, t):
        scope, kind = key.split("-")[1], key.split("-")[0]
        times = _matching(events, scope, u, v, t, None)
        if kind == "popularity":
            return len(times)
        return len({s for _, _, s in events if s <= max(times)}) if times else 0
    return lambda events, u, v, t: float(code(first, events, u, v, t) * 2**26 + code(second, events, u, v, t))


#: registry name, options, reference score(events, u, v, t) from the events before t
EXACT = {
    "local-global": ("local-global", {}, lexicographic("recency-local", "recency-global")),
    "recency-popularity-local": ("recency-popularity-local", {}, lexicographic("recency-local", "popularity-local")),
    "recency-popularity-global": ("recency-popularity-global", {},
                                  lexicographic("recency-global", "popularity-global")),
    "recency-local": ("recency-local", {}, recency("local")),
    "recency-local-w3": ("recency-local", {"window": 3}, recency("local", 3)),
    "recency-global": ("recency-global", {}, recency("global")),
    "recency-global-w2.5": ("recency-global", {"window": 2.5}, recency("global", 2.5)),
    "popularity-local": ("popularity-local", {}, popularity("local")),
    "popularity-local-w3": ("popularity-local", {"window": 3}, popularity("local", 3)),
    "popularity-global": ("popularity-global", {}, popularity("global")),
    "popularity-global-w1.5": ("popularity-global", {"window": 1.5}, popularity("global", 1.5)),
}


def _build(name):
    model_name, options, _ = EXACT[name]
    return registry.build(model_name, num_nodes=N, **options)


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=6, max_events=36, max_nodes=8, max_time=8), name=st.sampled_from(sorted(EXACT)),
       start=st.integers(1, 20), batch_size=st.integers(1, 40), seed=st.integers(0, 20))
def test_exact_scores_equal_a_per_timestamp_brute_force(data, name, start, batch_size, seed):
    """Every score (positives, sampled negatives) and every all-entity count equals the reference over
    the events strictly before the query's time, however the events are batched."""
    reference = EXACT[name][2]
    segment = segment_from(data, min(start, data.num_events - 1))
    result = evaluate(_build(name), data, segment, Protocol(num_negatives=3, batch_size=batch_size, seed=seed),
                      sampler=UniformSampler(CATALOG, replace=True), catalog=CATALOG, tuning=Tuning(candidate_budget=7))
    assert result.manifest["history"]["mode"] == "exact"
    assert_matches_reference(result.records, data, reference, CATALOG.items, name)


@settings(max_examples=40, deadline=None)
@given(data=streams(min_events=6, max_events=36, max_nodes=8, max_time=8),
       name=st.sampled_from(sorted(EXACT) + ["decayed-local", "decayed-global", "ticked-local", "ticked-global"]),
       start=st.integers(1, 20),
       cut=st.integers(0, 35), batch_size=st.integers(1, 12),
       future=streams(min_events=0, max_events=20, max_nodes=8, max_time=6))
def test_future_perturbation_never_changes_past_scores(data, name, start, cut, batch_size, future):
    """Replacing every event after ``tau`` (changed, added, removed, re-timed) changes no score of an
    event at or before ``tau``: a batch is scored before it (or anything later) is seen."""
    make = {"decayed-local": lambda: LocalPopularity(N, half_life=2.0),
            "decayed-global": lambda: GlobalPopularity(N, half_life=2.0),
            "ticked-local": lambda: LocalPopularity(N, half_life=1.5, clock=EventClock(2, (5,))),
            "ticked-global": lambda: GlobalPopularity(N, half_life=0.5, clock=EventClock(3, (0, 7)))}.get(
                name, lambda: _build(name))
    segment = segment_from(data, min(start, data.num_events - 1))
    tau = int(data.t[min(max(cut, segment.start), data.num_events - 1)])
    past = data.t <= tau
    altered = data.__class__(src=torch.cat([data.src[past], future.src]), dst=torch.cat([data.dst[past], future.dst]),
                             t=torch.cat([data.t[past], future.t + tau + 1]))
    altered_segment = Segment("test", segment.start, altered.num_events, segment.t_first, None)
    run = lambda d, seg: evaluate(make(), d, seg, Protocol(num_negatives=3, batch_size=batch_size, seed=1),  # noqa
                                  sampler=UniformSampler(CATALOG, replace=True), catalog=CATALOG)
    a, b = run(data, segment), run(altered, altered_segment)
    past_a, past_b = a.records["t"] <= tau, b.records["t"] <= tau
    for key in ("score", "neg", "neg_score", "above", "equal"):
        assert torch.equal(a.records[key][past_a], b.records[key][past_b]), key


@pytest.mark.parametrize("scope", ["local", "global"])
@settings(max_examples=40, deadline=None)
@given(data=streams(max_events=30, max_nodes=6), batch_size=st.integers(1, 7),
       half_life=st.sampled_from([0.5, 2.0, 7.0]))
def test_decayed_popularity_matches_reference_under_online_updates(scope, data, batch_size, half_life):
    """As of the batch start (no exact history): the log of the decayed count of the earlier batches' events."""
    model = (LocalPopularity if scope == "local" else GlobalPopularity)(8, half_life=half_life)
    assert not model.capabilities.exact_history
    reference, history = popularity(scope, half_life=half_life), []
    us, vs = torch.arange(8).repeat_interleave(8), torch.arange(8).repeat(8)
    for batch in TimestampBatchLoader(data, batch_size):
        t = int(batch.t[-1])
        got = model.score(us, vs, torch.full_like(us, t))
        expected = torch.tensor([reference(history, u, v, t) for u, v in zip(us.tolist(), vs.tolist())],
                                dtype=torch.float64)
        assert torch.equal(torch.isinf(got), torch.isinf(expected))
        finite = torch.isfinite(expected)
        assert torch.allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
        model.update(batch)
        history += list(zip(batch.src.tolist(), batch.dst.tolist(), batch.t.tolist()))


@pytest.mark.parametrize("name", sorted(EXACT) + ["decayed-local"])
@settings(max_examples=25, deadline=None)
@given(data=streams(min_events=2, max_events=40, max_nodes=8))
def test_state_does_not_depend_on_the_batching(name, data):
    """One large batch (the warm-up) leaves the state of one timestamp group at a time, bit for bit."""
    make = (lambda: LocalPopularity(N, half_life=2.0)) if name == "decayed-local" else (lambda: _build(name))
    warmed, fed = make(), make()
    warm_up(warmed, data, batch_size=1)
    for batch in TimestampBatchLoader(data, batch_size=1):
        fed.update(batch)
    for key, value in fed.snapshot().items():
        assert torch.equal(warmed.snapshot()[key], value), (name, key)
    queries = torch.arange(N).repeat_interleave(N), torch.arange(N).repeat(N)
    t = torch.full((N * N,), int(data.t[-1]) + 3)
    assert torch.equal(warmed.score(*queries, t), fed.score(*queries, t))


@settings(max_examples=60, deadline=None)
@given(offsets=st.lists(st.integers(0, 2**40), min_size=3, max_size=30), query=st.integers(1, 2**61),
       window=st.one_of(st.none(), st.integers(1, 2**62)), scope=st.sampled_from(["local", "global"]),
       pairs=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=30, max_size=30))
def test_recency_gaps_are_exact_int64_near_2_62(offsets, query, window, scope, pairs):
    times = sorted(2**62 + o for o in offsets)
    src, dst = [p[0] for p in pairs[:len(times)]], [p[1] for p in pairs[:len(times)]]
    model = (LocalRecency if scope == "local" else GlobalRecency)(4, window=window)
    model.update(make_stream(src, dst, times))
    t = times[-1] + query
    us, vs = torch.arange(4).repeat_interleave(4), torch.arange(4).repeat(4)
    got = model.score(us, vs, torch.full_like(us, t)).tolist()
    assert got == [recency(scope, window)(list(zip(src, dst, times)), u, v, t) for u, v in zip(us.tolist(), vs.tolist())]


def test_scores_rank_recent_and_frequent_destinations_first():
    history = make_stream([0, 0, 0, 1, 2], [1, 2, 2, 3, 3], [1, 2, 3, 4, 5])
    src, dst, t = torch.tensor([0, 0, 0, 0]), torch.tensor([1, 2, 3, 4]), torch.full((4,), 9)
    expected = {LocalRecency: [-8.0, -6.0, -math.inf, -math.inf], GlobalRecency: [-8.0, -6.0, -4.0, -math.inf],
                LocalPopularity: [1.0, 2.0, 0.0, 0.0], GlobalPopularity: [1.0, 2.0, 2.0, 0.0]}
    for cls, scores in expected.items():
        model = cls(5)
        model.update(history)
        assert model.score(src, dst, t).tolist() == scores, cls.__name__
    windowed = LocalRecency(5, window=6)  # (0, 1) last seen at 1 < 9 - 6
    windowed.update(history)
    assert windowed.score(src, dst, t).tolist() == [-math.inf, -6.0, -math.inf, -math.inf]


@pytest.mark.parametrize("clock", ["time", EventClock(3, (13, 40))])
def test_global_popularity_equals_popularity(clock):
    """To rounding: Popularity keeps running decayed counts, GlobalPopularity recomputes them from the events."""
    data = make_stream(torch.arange(60) % 7, (torch.arange(60) * 3) % 10, torch.arange(60) // 4)
    for half_life in (None, 3.0) if clock == "time" else (3.0,):
        a, b = GlobalPopularity(N, half_life=half_life, clock=clock), Popularity(N, half_life=half_life, clock=clock)
        for batch in TimestampBatchLoader(data, 5):
            a.update(batch)
            b.update(batch)
        queries = torch.arange(N).repeat_interleave(N), torch.arange(N).repeat(N), torch.full((N * N,), 20)
        assert torch.allclose(a.score(*queries), b.score(*queries), rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("cls", [LocalRecency, GlobalRecency, LocalPopularity, GlobalPopularity])
def test_state_moves_with_device_and_snapshot_restores(cls, device):
    model = cls(6, window=4).to(device)
    data = make_stream([0, 1, 2, 0], [1, 2, 3, 3], [1, 2, 3, 4]).to(device)
    model.update(data[:2])
    snap = model.snapshot()
    q = (torch.tensor([0, 1, 2], device=device), torch.tensor([1, 2, 3], device=device),
         torch.tensor([5, 5, 5], device=device))
    before = model.score(*q)
    model.update(data[2:])
    assert not torch.equal(model.score(*q), before)
    model.restore(snap)
    assert torch.equal(model.score(*q), before)
    model.reset_state()
    assert torch.equal(model.score(*q), cls(6, window=4).to(device).score(*q))
    moved, built_there = cls(6, window=4), cls(6, window=4).to(device)  # updated, then moved: its index moves too
    moved.update(data.cpu())
    built_there.update(data)
    assert torch.equal(moved.to(device).score(*q), built_there.score(*q))


def test_registered_and_described():
    assert {"recency-local", "recency-global", "popularity-local", "popularity-global"} <= set(
        registry.names("heuristic"))
    model = registry.build("popularity-local", num_nodes=N, window=None, half_life=2.0, directed=True)
    assert model.describe() == {"name": "popularity-local", "window": None, "half_life": 2.0, "clock": "time",
                                "num_nodes": N}
    assert registry.build("recency-global", num_nodes=N, window=5).describe() == {
        "name": "recency-global", "window": 5, "num_nodes": N}
    with pytest.raises(ValueError, match="a window or a half_life, not both"):
        LocalPopularity(N, window=3, half_life=2.0)
    with pytest.raises(ValueError, match="half_life must be positive"):
        GlobalPopularity(N, half_life=0.0)
    with pytest.raises(ValueError, match="window must be a positive duration"):
        LocalRecency(N, window=-1)
