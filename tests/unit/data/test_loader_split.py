import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval import SplitError, TemporalDataError, TimestampBatchLoader, chronological_split
from tgeval.data.groups import canonical_order, group_ids, group_starts
from tgeval.stream.loader import timestamp_batch_boundaries
from tgeval.eval.protocol import Protocol
from tests.conftest import make_stream
from tests.strategies import streams


def test_groups_by_hand():
    t = torch.tensor([1, 1, 2, 5, 5, 5])
    assert group_starts(t).tolist() == [0, 2, 3, 6]
    assert group_ids(t).tolist() == [0, 0, 1, 2, 2, 2]


@settings(max_examples=150, deadline=None)
@given(data=streams(max_events=60), batch_size=st.integers(1, 12))
def test_loader_never_splits_a_group_and_covers_every_event_once(data, batch_size):
    loader = TimestampBatchLoader(data, batch_size)
    bounds = loader.boundaries.tolist()
    assert bounds[0] == 0 and bounds[-1] == data.num_events
    assert all(a < b for a, b in zip(bounds, bounds[1:]))
    t = data.t.tolist()
    for cut in bounds[1:-1]:
        assert t[cut - 1] != t[cut]  # never inside a group
    for a, b in zip(bounds, bounds[1:]):
        # either within the target size, or a single (large) group
        assert b - a <= batch_size or len(set(t[a:b])) == 1
        # greedy: the next group would not have fitted
        if b < len(t):
            next_end = b + t[b:].count(t[b])
            assert next_end - a > batch_size
    seen = [i for a, b in loader.spans() for i in range(a, b)]
    assert seen == list(range(data.num_events))
    assert sum(batch.num_events for batch in loader) == data.num_events


def test_batches_carry_positions_and_are_views_of_the_stream():
    data = make_stream([0, 1, 2, 3, 4], [1, 2, 3, 4, 0], [1, 1, 2, 3, 3], msg=torch.arange(10.0).view(5, 2))
    del data.position  # as a user's TemporalData: the loader attaches positions itself
    loader = TimestampBatchLoader(data, batch_size=2)
    assert isinstance(loader, torch.utils.data.DataLoader) and len(loader) == 3
    batches = list(loader)
    assert [b.position.tolist() for b in batches] == [[0, 1], [2], [3, 4]]
    assert batches[2].msg.data_ptr() == data.msg[3:].data_ptr()  # no copies
    assert "position" not in data  # the stream is not changed
    tail = TimestampBatchLoader(data[2:], batch_size=5)  # positions relative to the stream given
    assert next(iter(tail)).position.tolist() == [0, 1, 2]
    data.position = torch.tensor([10, 11, 12, 13, 14])  # a stream that has positions keeps them
    assert [b.position.tolist() for b in TimestampBatchLoader(data, batch_size=2)] == [[10, 11], [12], [13, 14]]


def test_loader_takes_dataloader_options_but_not_its_own_batching():
    data = make_stream([0, 1, 2, 3], [1, 2, 3, 0], [1, 1, 2, 3])
    expected = [b.src.tolist() for b in TimestampBatchLoader(data, batch_size=2)]
    workers = TimestampBatchLoader(data, batch_size=2, num_workers=1)  # batches built in a worker process
    assert [b.src.tolist() for b in workers] == expected
    for reserved in ("shuffle", "sampler", "collate_fn", "drop_last"):
        with pytest.raises(TypeError, match=f"sets `{reserved}` itself"):
            TimestampBatchLoader(data, batch_size=2, **{reserved: None})


def test_large_group_is_one_batch():
    t = torch.tensor([0, 1, 1, 1, 1, 1, 2, 3])
    assert timestamp_batch_boundaries(t, 2).tolist() == [0, 1, 6, 8]


def test_loader_rejects_unsorted_and_bad_size():
    with pytest.raises(TemporalDataError, match="non-decreasing"):
        TimestampBatchLoader(make_stream([0, 1], [1, 0], [2, 1]))
    with pytest.raises(ValueError, match="batch_size"):
        TimestampBatchLoader(make_stream([0, 1], [1, 0], [1, 2]), batch_size=0)


@settings(max_examples=150, deadline=None)
@given(data=streams(min_events=10, max_events=80, max_time=40),
       ratios=st.sampled_from([(0.7, 0.15, 0.15), (0.5, 0.25, 0.25), (0.8, 0.1, 0.1), (0.6, 0.0, 0.4)]))
def test_split_cuts_between_distinct_timestamps(data, ratios):
    try:
        split = chronological_split(data, ratios)
    except SplitError:
        return  # too few distinct timestamps for a non-empty segment: the error is the contract
    t = data.t.tolist()
    assert split.train.start == 0 and split.test.end == len(t)
    assert split.train.end == split.val.start and split.val.end == split.test.start
    for cut in (split.train.end, split.val.end):
        if 0 < cut < len(t):
            assert t[cut - 1] != t[cut]
    # the cuts are the time quantiles (PyG's rule)
    q1, q2 = np.quantile(np.array(t), [ratios[0], ratios[0] + ratios[1]])
    assert split.train.end == sum(x <= q1 for x in t)
    if ratios[1] > 0:
        assert split.val.end == sum(x <= q2 for x in t)


def test_split_errors():
    data = make_stream([0, 1, 2, 3], [1, 2, 3, 0], [5, 5, 5, 5])
    with pytest.raises(SplitError, match="val segment is empty.*1 distinct values"):
        chronological_split(data)
    with pytest.raises(SplitError, match="summing to 1"):
        chronological_split(make_stream([0, 1], [1, 0], [0, 1]), (0.5, 0.5, 0.5))


def test_split_by_hand():
    t = list(range(20))
    split = chronological_split(make_stream([0] * 20, [1] * 20, t))
    # quantiles of 0..19 at 0.70 / 0.85: 13.3 and 16.15 -> train t<=13, val 14..16, test 17..19
    assert (split.train.end, split.val.end) == (14, 17)
    assert split.test.to_dict()["t_first"] == 17


def test_canonical_order_ignores_file_order_inside_groups():
    src, dst, t = torch.tensor([2, 0, 1, 0]), torch.tensor([1, 3, 0, 2]), torch.tensor([1, 1, 1, 2])
    order = canonical_order(src, dst, t)
    assert list(zip(src[order].tolist(), dst[order].tolist())) == [(0, 3), (1, 0), (2, 1), (0, 2)]


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=6, max_time=15),
       train=st.floats(0.2, 0.6), val=st.floats(0.1, 0.3))
def test_integer_time_above_2_53_splits_and_evaluates_exactly(data, train, val):
    """Shifting integer time by 2^60 (beyond float64's exact integers) changes no boundary and no score."""
    from tgeval import Catalog, evaluate
    from tgeval.models.heuristics import EdgeBank
    from torch_geometric.data import TemporalData

    shifted = TemporalData(src=data.src, dst=data.dst, t=data.t + 2**60)
    ratios = (train, val, 1 - train - val)
    try:
        split = chronological_split(data, ratios)
    except SplitError:
        with pytest.raises(SplitError):
            chronological_split(shifted, ratios)
        return
    big = chronological_split(shifted, ratios)
    assert (big.train.end, big.val.end) == (split.train.end, split.val.end)
    catalog = Catalog("custom", torch.arange(6), None, 6)
    run = lambda d, s: evaluate(EdgeBank(6, window=3), d, s.test, Protocol(batch_size=4), catalog=catalog)  # noqa: E731
    a, b = run(data, split), run(shifted, big)
    for key in ("score", "above", "equal"):
        assert torch.equal(a.records[key], b.records[key]), key
