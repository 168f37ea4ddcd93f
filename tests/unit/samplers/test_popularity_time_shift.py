"""The popularity sampler's decay sees time only through exact int64 differences (issue 29, part 3): shifting
every timestamp by any int64-safe offset draws the same negatives and keeps the same counts."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.data.catalog import Catalog
from tgeval.samplers.popularity import PopularitySampler
from tests.helpers import sample_replay
from tests.strategies import streams

N = 8
MAX_T = 12
offsets = st.one_of(st.sampled_from([2**62, 2**62 + 1, 2**63 - 1 - MAX_T, -2**63, -2**62]),
                    st.integers(-2**63, 2**63 - 1 - MAX_T))


def replay(data, offset, **options):
    shifted = data.clone()
    shifted.t = data.t + offset
    sampler = PopularitySampler(N, catalog=Catalog("custom", torch.arange(N), None, N), **options)
    drawn = sample_replay(sampler, shifted, 3, seed=7, batch_size=4)
    return [type(d) if isinstance(d, Exception) else d.dst for d in drawn], sampler.counts  # messages name t


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=2, max_events=40, max_nodes=N, max_time=MAX_T), offset=offsets,
       half_life=st.floats(0.25, 20.0), power=st.sampled_from([1.0, 0.5]), directed=st.booleans(),
       replace=st.booleans())
def test_popularity_negatives_do_not_move_with_a_time_shift(data, offset, half_life, power, directed, replace):
    """Float64 times rounded 2^62 + s to multiples of 1024, so the decayed counts and the negatives changed."""
    options = dict(half_life=half_life, power=power, directed=directed, replace=replace)
    base, base_counts = replay(data, 0, **options)
    moved, moved_counts = replay(data, offset, **options)
    assert torch.equal(base_counts, moved_counts)
    assert len(base) == len(moved)
    for a, b in zip(base, moved):
        assert a is b if isinstance(a, type) else torch.equal(a, b)
