"""Leak-freedom and invariance of the replay engine, as properties over random streams."""

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from unittest import mock

from tgeval.eval.tuning import Tuning
from tgeval import LeakageError, SplitError, build_catalog, evaluate
from tgeval import samplers
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment, Split
from tgeval.eval import engine
from tgeval.models.clock import EventClock
from tgeval.models.heuristics import (EdgeBank, GlobalPopularity, LocalPopularity, NodeMemory, PairMembership,
                                      Popularity, PreferentialAttachment)
from tgeval.eval.protocol import Protocol
from tgeval.samplers import HistoricalSampler, UniformSampler
from tests.strategies import segment_from, shuffle_within_groups, streams

N = 10
MODELS = [lambda: EdgeBank(N), lambda: EdgeBank(N, window=3), lambda: NodeMemory(N),
          lambda: PreferentialAttachment(N), lambda: Popularity(N, half_life=2.0),
          lambda: LocalPopularity(N, half_life=2.0, clock=EventClock(3, (4,))),
          lambda: GlobalPopularity(N, half_life=0.5, clock=EventClock(2, (3, 9)))]


def _run(model, data, segment, protocol="online", batch_size=4, seed=3, catalog_kind="time-available", replace=True,
         sampler_kind="uniform", directed=True, history=None):
    full = Catalog("custom", torch.arange(N), None, N)  # streams use nodes < 8: every pool holds >= 2 items
    catalog = build_catalog(data, catalog_kind, num_nodes=N) if catalog_kind == "time-available" else full
    if sampler_kind == "uniform":
        sampler = UniformSampler(full, replace=replace)
    elif sampler_kind == "historical":
        sampler = HistoricalSampler(N, catalog=full, replace=replace)
    else:  # history-free samplers of the zoo, and a mixture with history
        empty = Segment("val", segment.start, segment.start, None, None)
        split = Split(Segment("train", 0, segment.start, None, None), empty, segment, (0.0, 0.0, 0.0))
        sampler = samplers.from_spec(sampler_kind, data=data, split=split, catalog=full)
    return evaluate(model, data, segment,
                    Protocol(replay=protocol, num_negatives=3 if replace else 2, batch_size=batch_size, seed=seed,
                             directed=directed, history=history),
                    sampler=sampler, catalog=catalog, tuning=Tuning(candidate_budget=7))


PER_EVENT = ("score", "neg", "neg_score", "sampled_above", "sampled_equal", "above", "equal", "candidates",
             "filtered", "covered", "stratum")


@settings(max_examples=80, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=8), which=st.integers(0, len(MODELS) - 1),
       start=st.integers(1, 20), cut=st.integers(0, 39), batch_size=st.integers(1, 12),
       protocol=st.sampled_from(["online", "fixed"]), replace=st.booleans(),
       future=streams(min_events=0, max_events=20, max_nodes=8, max_time=6))
def test_future_perturbation_never_changes_past_scores(data, which, start, cut, batch_size, protocol, replace,
                                                       future):
    segment = segment_from(data, min(start, data.num_events - 1))
    tau = int(data.t[min(max(cut, segment.start), data.num_events - 1)])
    past = data.t <= tau
    # Replace everything after tau by another future: events changed, added, removed, re-timed.
    altered = data.__class__(src=torch.cat([data.src[past], future.src]), dst=torch.cat([data.dst[past], future.dst]),
                             t=torch.cat([data.t[past], future.t + tau + 1]))
    a = _run(MODELS[which](), data, segment, protocol, batch_size, replace=replace)
    altered_segment = Segment("test", segment.start, altered.num_events, segment.t_first, None)
    b = _run(MODELS[which](), altered, altered_segment, protocol, batch_size, replace=replace)
    past_a = a.records["t"] <= tau
    past_b = b.records["t"] <= tau
    assert torch.equal(a.records["event"][past_a], b.records["event"][past_b])
    for key in PER_EVENT:
        assert torch.equal(a.records[key][past_a], b.records[key][past_b]), key


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=8), which=st.integers(0, len(MODELS) - 1),
       start=st.integers(1, 20), batch_size=st.integers(1, 6), protocol=st.sampled_from(["online", "fixed"]),
       seed=st.integers(0, 99), replace=st.booleans())
def test_shuffling_inside_timestamp_groups_changes_no_metric(data, which, start, batch_size, protocol, seed,
                                                              replace):
    segment = segment_from(data, min(start, data.num_events - 1))
    shuffled = shuffle_within_groups(data, seed)
    assume(not torch.equal(shuffled.src, data.src) or not torch.equal(shuffled.dst, data.dst))
    a = _run(MODELS[which](), data, segment, protocol, batch_size, catalog_kind="custom", replace=replace)
    b = _run(MODELS[which](), shuffled, segment, protocol, batch_size, catalog_kind="custom", replace=replace)
    assert a.metrics == b.metrics
    assert a.manifest["data"]["canonical_fingerprint"] == b.manifest["data"]["canonical_fingerprint"]


@settings(max_examples=40, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=8), which=st.integers(0, len(MODELS) - 1),
       start=st.integers(1, 20))
def test_fixed_and_online_agree_on_a_single_batchsegment_from(data, which, start):
    segment = segment_from(data, min(start, data.num_events - 1))
    big = segment.num_events  # the whole segment is one timestamp batch, scored from the state at its start
    a = _run(MODELS[which](), data, segment, "online", big, history="batch")
    b = _run(MODELS[which](), data, segment, "fixed", big)
    assert a.performance["num_batches"] == 1
    assert a.metrics == b.metrics


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=8), which=st.integers(0, len(MODELS)),
       start=st.integers(1, 20), batch_size=st.integers(1, 6), window=st.integers(1, 15),
       protocol=st.sampled_from(["online", "fixed"]), catalog_kind=st.sampled_from(["custom", "time-available"]),
       sampler_kind=st.sampled_from(["uniform", "historical", "degree:replace=true", "HD:replace=true",
                                     "OE:replace=true", "mixture:uniform=0.5,degree=0.5",
                                     "mixture:uniform=0.5,historical=0.5"]), directed=st.booleans())
def test_windows_of_batches_change_nothing(data, which, start, batch_size, window, protocol, catalog_kind,
                                           sampler_kind, directed):
    """The engine prepares candidate plans, history-free negatives and queries per window of
    batches; any window size (down to one batch per window) gives the same records, for
    samplers drawn per window (history-free) and per batch (with history)."""
    segment = segment_from(data, min(start, data.num_events - 1))
    make = MODELS[which] if which < len(MODELS) else (lambda: PairMembership(N, beta=-1.0))
    run = lambda: _run(make(), data, segment, protocol, batch_size, catalog_kind=catalog_kind,  # noqa: E731
                       sampler_kind=sampler_kind, directed=directed)
    whole = run()
    with mock.patch.object(engine, "WINDOW_EVENTS", window):
        windowed = run()
    assert windowed.metrics == whole.metrics
    for key in PER_EVENT + ("batch", "event"):
        assert torch.equal(windowed.records[key], whole.records[key]), key


def test_fixed_and_online_differ_when_history_matters():
    # pair (0, 1) first appears inside the test segment and then repeats
    data = streams_example()
    segment = Segment("test", 2, 6, 3, 6)
    online = _run(EdgeBank(N), data, segment, "online", batch_size=1)
    fixed = _run(EdgeBank(N), data, segment, "fixed", batch_size=1)
    assert online.records["score"].tolist() == [0.0, 1.0, 1.0, 1.0]
    assert fixed.records["score"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert online.manifest["protocol"]["replay"] == "online" and fixed.manifest["protocol"]["replay"] == "fixed"


def streams_example():
    from tests.conftest import make_stream
    return make_stream([5, 6, 0, 0, 0, 0], [6, 5, 1, 1, 1, 1], [1, 2, 3, 4, 5, 6])


class _PeekingBank(EdgeBank):
    """Adds the scored pairs to its bank while scoring: the leak the guard must catch."""

    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        keys = torch.unique(torch.cat([self.keys, src * self.num_nodes + dst]))
        self.keys, self.last_seen = keys, torch.zeros(keys.numel(), dtype=torch.float64)
        return out


def test_engine_guard_detects_scoring_that_changes_state():
    data = streams_example()
    with pytest.raises(LeakageError, match="_PeekingBank changed"):
        _run(_PeekingBank(N), data, Segment("test", 2, 6, 3, 6))


def test_segment_errors():
    data = streams_example()
    catalog = Catalog("custom", torch.arange(N), None, N)
    with pytest.raises(SplitError, match="empty"):
        evaluate(EdgeBank(N), data, Segment("test", 6, 6, None, None), catalog=catalog)
    from tests.conftest import make_stream
    tied = make_stream([0, 1, 2, 3], [1, 2, 3, 4], [1, 2, 2, 3])
    with pytest.raises(SplitError, match="cuts a timestamp group"):
        evaluate(EdgeBank(N), tied, Segment("test", 2, 4, 2, 3), catalog=catalog)
    with pytest.raises(ValueError, match="nothing to measure"):
        evaluate(EdgeBank(N), data, Segment("test", 2, 6, 3, 6))
    with pytest.raises(ValueError, match="Protocol.replay must be one of"):
        evaluate(EdgeBank(N), data, Segment("test", 2, 6, 3, 6), Protocol(replay="streaming"), catalog=catalog)
