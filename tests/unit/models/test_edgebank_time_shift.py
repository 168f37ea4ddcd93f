"""Time-shift invariance of the time-dependent heuristics and of the window selection (issue 29, part 3):
shifting every int64 timestamp by any int64-safe offset (up to ~2^63 either way) changes no metric, no
chosen window; windows at and beyond the int64 range are unlimited and recorded as such."""

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval import Catalog, evaluate
from tgeval.data.split import Segment, chronological_split
from tgeval.errors import ModelConfigError, SplitError
from tgeval.eval.selection import default_windows, select_window
from tgeval.models.heuristics import EdgeBank, Popularity
from tgeval.eval.protocol import Protocol
from tests.strategies import segment_from, streams

N = 8
MAX_T = 12
LOW, HIGH = -2**63, 2**63 - 1
#: int64-safe offsets of times in [0, MAX_T]: the extremes, 2^62 and everything between
offsets = st.one_of(st.sampled_from([2**62, 2**62 + 1, HIGH - MAX_T, LOW, -2**62]), st.integers(LOW, HIGH - MAX_T))
windows = st.one_of(st.integers(1, MAX_T + 2), st.floats(0.25, MAX_T + 2.0), st.sampled_from([HIGH, 2**62]))


def shifted(data: TemporalData, offset: int) -> TemporalData:
    out = data.clone()
    out.t = data.t + offset
    return out


def run(model, data, start, offset=0):
    """Metrics and per-event records of ``model`` on the events from ``start`` (a timestamp group boundary) on,
    all-entity, exact history."""
    data = shifted(data, offset)
    t = data.t.tolist()
    segment = Segment("test", start, len(t), t[start], t[-1])
    result = evaluate(model, data, segment, Protocol(batch_size=3), catalog=Catalog("custom", torch.arange(N), None, N))
    return result.metrics, {key: result.records[key] for key in ("score", "above", "equal")}


def assert_same(a, b):
    assert a[0] == b[0]
    for key in a[1]:
        assert torch.equal(a[1][key], b[1][key]), key


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=4, max_events=30, max_nodes=N, max_time=MAX_T), start=st.integers(1, 20),
       window=windows, offset=offsets)
def test_edgebank_window_metrics_do_not_move_with_a_time_shift(data, start, window, offset):
    """Integer windows, float windows and windows up to 2^63 - 1: the same metrics at every offset (the old
    ``t - floor(w)`` wrapped around int64 below -2^63 and emptied the memory)."""
    start = segment_from(data, start).start
    assert_same(run(EdgeBank(N, window=window), data, start), run(EdgeBank(N, window=window), data, start, offset))


@settings(max_examples=40, deadline=None)
@given(data=streams(min_events=4, max_events=30, max_nodes=N, max_time=MAX_T), start=st.integers(1, 20),
       half_life=st.floats(0.5, 20.0), offset=offsets)
def test_popularity_decay_does_not_move_with_a_time_shift(data, start, half_life, offset):
    start = segment_from(data, start).start
    assert_same(run(Popularity(N, half_life=half_life), data, start),
                run(Popularity(N, half_life=half_life), data, start, offset))


@pytest.mark.parametrize("window", [float("inf"), 1e300, 9.3e18, 2**63, 2**64 + 5])
@pytest.mark.parametrize("offset", [0, 2**62, HIGH - 200, LOW])
def test_windows_at_and_beyond_the_int64_range_are_unlimited(window, offset):
    """``9.3e18`` wrapped around int64 (MRR 0.0165 instead of 0.2422 on UCI), ``inf`` was an OverflowError."""
    from tgeval.data.synthetic import generate_events

    data = generate_events(200, N, seed=5)
    bank = EdgeBank(N, window=window)
    assert bank.describe()["window"] is None and bank.describe()["name"] == "edgebank"
    assert bank.describe()["window_given"] == repr(window)
    assert_same(run(bank, data, 117, offset), run(EdgeBank(N), data, 117, offset))


@pytest.mark.parametrize("offset", [0, 2**62, LOW])
def test_largest_int64_window_is_exact_where_t_minus_w_leaves_int64(offset):
    """``w = 2^63 - 1`` covers the whole stream: ``t - w`` below -2^63 clamps instead of wrapping."""
    from tgeval.data.synthetic import generate_events

    data = generate_events(200, N, seed=5)
    assert EdgeBank(N, window=HIGH).describe()["window"] == HIGH
    assert_same(run(EdgeBank(N, window=HIGH), data, 117, offset), run(EdgeBank(N), data, 117, offset))


@pytest.mark.parametrize("window", [float("nan"), 0, 0.0, -1, -float("inf"), "5", True])
def test_a_nan_zero_negative_or_non_numeric_window_is_refused(window):
    with pytest.raises(ModelConfigError, match="window must be a positive duration"):
        EdgeBank(N, window=window)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(data=streams(min_events=8, max_events=30, max_nodes=N, max_time=MAX_T), offset=offsets)
def test_window_selection_does_not_move_with_a_time_shift(data, offset):
    """The candidates come from the validation segment's exact duration: the same candidates, MRRs and choice
    at every offset (the float duration changed the choice at 2^62 and was 0, "spans no time", near 2^63)."""
    try:
        split = chronological_split(data, (0.5, 0.25, 0.25))
    except SplitError:
        assume(False)
    big = chronological_split(shifted(data, offset), (0.5, 0.25, 0.25))
    catalog = Catalog("custom", torch.arange(N), None, N)

    def choose(d, s):
        try:
            window, record = select_window(lambda w: EdgeBank(N, window=w), d, s.val, catalog, batch_size=3)
        except ValueError as error:
            return str(error)
        return window, record["candidates"]

    assert choose(data, split) == choose(shifted(data, offset), big)


def test_default_windows_near_2_63_are_those_of_the_unshifted_segment():
    expected = [1000 * 2.0**k for k in range(-8, 3)] + [None]
    for offset in (0, 2**62, HIGH - 1003):
        assert default_windows(Segment("val", 0, 5, offset + 3, offset + 1003)) == expected
