"""Occurrences (counts of a batch's keys before t) and same-batch history, against brute force."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.data.sorted_keys import PAD, Occurrences
from tgeval.stream.loader import same_batch_history, timestamp_batch_boundaries
from tests.strategies import streams


@settings(max_examples=100, deadline=None)
@given(occurrences=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), max_size=30),
       queries=st.lists(st.tuples(st.integers(-1, 7), st.integers(-1, 11)), min_size=1, max_size=30),
       dropped=st.integers(0, 6), times_sorted=st.booleans())
def test_occurrences_count_before_like_brute_force(occurrences, queries, dropped, times_sorted):
    if times_sorted:
        occurrences = sorted(occurrences, key=lambda o: o[1])
    keys = torch.tensor([k for k, _ in occurrences], dtype=torch.long)
    times = torch.tensor([s for _, s in occurrences], dtype=torch.long)
    index = Occurrences(torch.where(keys == dropped, PAD, keys), times, times_sorted=times_sorted)  # PAD: left out
    q_keys = torch.tensor([[k, 0] for k, _ in queries], dtype=torch.long)[:, 0]  # strided views, as engine slices
    q_t = torch.tensor([[s, 0] for _, s in queries], dtype=torch.long)[:, 0]
    expected = [sum(k == qk and s < qt for k, s in occurrences) if qk != dropped else 0 for qk, qt in queries]
    assert index.count_before(q_keys, q_t).tolist() == expected
    assert index.first_before(q_keys, q_t).tolist() == [c > 0 for c in expected]
    as_float = index.count_before(q_keys, q_t.double() - 0.5)  # a float bound against integer times
    assert as_float.tolist() == [sum(k == qk and s < qt - 0.5 for k, s in occurrences) if qk != dropped else 0
                                 for qk, qt in queries]
    first = {}
    for k, s in sorted(occurrences, key=lambda o: o[1]):
        first.setdefault(k, s)
    assert sorted(zip(index.keys[:-1][index.first].tolist(), index.times[:-1][index.first].tolist())) == sorted(
        (PAD if k == dropped else k, s) for k, s in first.items())


@settings(max_examples=100, deadline=None)
@given(data=streams(min_events=0, max_events=40, max_nodes=6, max_time=10), batch_size=st.integers(1, 15))
def test_same_batch_history_like_brute_force(data, batch_size):
    bounds = timestamp_batch_boundaries(data.t, batch_size)
    got = same_batch_history(data.src, data.dst, data.t, bounds).tolist()
    src, dst, t = data.src.tolist(), data.dst.tolist(), data.t.tolist()
    expected = []
    for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        for e in range(a, z):
            expected.append(any(t[f] < t[e] and {src[f], dst[f]} & {src[e], dst[e]} for f in range(a, z)))
    assert got == expected
