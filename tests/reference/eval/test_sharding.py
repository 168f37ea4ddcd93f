"""Catalog shards (issue 18): ``shard()`` tiles ``[0, n)``, and the chunked counts of the shards of
``W`` ranks sum to the one-process counts for any budget, catalog and tie pattern (in one
process: the counting, without the process group that sums it)."""

from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval import build_catalog
from tgeval.data.catalog import Catalog
from tgeval.core.distributed import shard, state_digest
from tgeval.eval import ranking
from tgeval.eval.ranking import chunked_counts, plan_candidates
from tests.conftest import make_stream
from tests.helpers import TableModel
from tests.strategies import streams


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 10_000), world=st.integers(1, 64))
def test_shards_tile_the_range_in_order_with_balanced_sizes(n, world):
    ranges = [shard(n, rank, world) for rank in range(world)]
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(stop == start for (_, stop), (start, _) in zip(ranges[:-1], ranges[1:]))  # contiguous, disjoint
    sizes = [stop - start for start, stop in ranges]
    assert min(sizes) >= 0 and max(sizes) - min(sizes) <= 1


def test_shard_rejects_a_rank_outside_the_world():
    with pytest.raises(ValueError, match="rank must lie in"):
        shard(10, 2, 2)


def _shard_sums(model, data, catalog, budget, world):
    pos = model.score(data.src, data.dst, data.t)
    plan = plan_candidates(data.src, data.dst, data.t, catalog)
    size = data.num_events
    parts = [chunked_counts(model, data.src, data.t, pos, catalog, plan, 0, size, budget, (rank, world))
             for rank in range(world)]
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


@settings(max_examples=80, deadline=None)
@given(data=streams(max_events=25, max_nodes=9), budget=st.integers(1, 40), world=st.integers(2, 12),
       levels=st.integers(1, 3), seed=st.integers(0, 10_000), timed=st.booleans())
def test_shard_counts_sum_to_the_whole_catalog_counts(data, budget, world, levels, seed, timed):
    """Worlds up to 12 on catalogs of at most 8 items: empty shards, shards narrower than a block."""
    n = 9
    table = torch.randint(0, levels, (n, n), generator=torch.Generator().manual_seed(seed)).double()  # many ties
    model = TableModel(table)
    catalog = build_catalog(data, "time-available", num_nodes=n) if timed else Catalog("custom", torch.arange(1, n),
                                                                                        None, n)
    whole = _shard_sums(model, data, catalog, budget, 1)
    summed = _shard_sums(model, data, catalog, budget, world)
    assert torch.equal(summed[0], whole[0]) and torch.equal(summed[1], whole[1])


def test_an_off_by_one_shard_is_caught():
    """The check above can fail: shards that overlap by one column count it twice."""
    n = 9
    events = make_stream([1, 2, 3, 1], [4, 5, 6, 7], [1, 1, 2, 3])
    model = TableModel(torch.arange(n * n, dtype=torch.float64).view(n, n) % 5)
    catalog = Catalog("custom", torch.arange(n), None, n)
    whole = _shard_sums(model, events, catalog, 4, 1)
    overlapping = lambda size, rank, world: (max(0, shard(size, rank, world)[0] - 1), shard(size, rank, world)[1])
    with mock.patch.object(ranking, "shard_range", overlapping):
        wrong = _shard_sums(model, events, catalog, 4, 3)
    assert not (torch.equal(wrong[0], whole[0]) and torch.equal(wrong[1], whole[1]))


def test_state_digest_tells_models_apart():
    a, b = TableModel(torch.zeros(3, 3)), TableModel(torch.zeros(3, 3))
    assert state_digest(a) == state_digest(b)
    b.table[0, 1] = 1.0
    assert state_digest(a) != state_digest(b)
