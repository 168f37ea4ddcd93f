"""Chronological splits at every time magnitude (issue 29, part 3): shifting every int64 timestamp by any
int64-safe offset, up to ~2^63 either way, moves no boundary and shifts each segment's times exactly."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval.data.split import chronological_split
from tgeval.errors import SplitError
from tests.strategies import streams

MAX_T = 12
offsets = st.one_of(st.sampled_from([2**62, 2**62 + 1, 2**63 - 1 - MAX_T, -2**63, -2**62]),
                    st.integers(-2**63, 2**63 - 1 - MAX_T))


@settings(max_examples=80, deadline=None)
@given(data=streams(min_events=3, max_events=40, max_time=MAX_T), offset=offsets, train=st.floats(0.1, 0.7),
       val=st.floats(0.05, 0.3))
def test_split_boundaries_do_not_move_with_a_time_shift(data, offset, train, val):
    moved = TemporalData(src=data.src, dst=data.dst, t=data.t + offset)
    ratios = (train, val, 1 - train - val)
    try:
        split = chronological_split(data, ratios)
    except SplitError as error:
        with pytest.raises(SplitError) as moved_error:
            chronological_split(moved, ratios)
        assert type(moved_error.value) is type(error)
        return
    big = chronological_split(moved, ratios)
    for name in ("train", "val", "test"):
        a, b = split[name], big[name]
        assert (a.start, a.end) == (b.start, b.end), name
        assert (b.t_first - offset, b.t_last - offset) == (a.t_first, a.t_last), name
