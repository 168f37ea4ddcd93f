import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from tgeval import SamplerError
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream
from tests.strategies import streams


@settings(max_examples=80, deadline=None)
@given(data=streams(max_events=30, max_nodes=8), k=st.integers(1, 4), replace=st.booleans(), seed=st.integers(0, 99),
       directed=st.booleans())
def test_never_returns_source_true_or_simultaneous_destination(data, k, replace, seed, directed):
    catalog = Catalog("custom", torch.arange(16), None, 16)  # nodes < 8: enough distinct candidates
    sampler = UniformSampler(catalog, replace=replace, directed=directed)
    neg = sampler.sample(data, k, torch.Generator().manual_seed(seed)).dst
    assert neg.shape == (data.num_events, k)
    events = list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))
    for row, (u, v, t) in zip(neg.tolist(), events):
        forbidden = {u} | {b for a, b, s in events if a == u and s == t}
        if not directed:
            forbidden |= {a for a, b, s in events if b == u and s == t}
        assert not forbidden & set(row)
        if not replace:
            assert len(set(row)) == k


def test_time_available_pool():
    data = make_stream([0, 1, 2, 3], [5, 6, 7, 5], [1, 2, 3, 9])
    catalog = build_catalog(data, "time-available")
    neg = UniformSampler(catalog, replace=True).sample(data[3:], 50, torch.Generator().manual_seed(0)).dst
    assert set(neg.flatten().tolist()) == {6, 7}  # 5 is the positive; only 5, 6, 7 appeared before t=9


@pytest.mark.parametrize("replace", [False, True])
def test_uniform_distribution_chi_square(replace):
    catalog = Catalog("custom", torch.arange(12), None, 12)
    batch = make_stream([0] * 50, [1] * 50, list(range(50)))
    draws = torch.cat([UniformSampler(catalog, replace=replace).sample(batch, 5, torch.Generator().manual_seed(seed)).dst
                       .flatten() for seed in range(40)])
    counts = torch.bincount(draws, minlength=12)
    assert counts[0] == 0 and counts[1] == 0  # source and positive
    assert chisquare(counts[2:].numpy()).pvalue > 1e-3  # 10,000 draws over 10 items


def test_exact_finish_for_tight_pools():
    catalog = Catalog("custom", torch.arange(10), None, 10)
    batch = make_stream([0] * 30, [1] * 30, list(range(30)))
    neg = UniformSampler(catalog).sample(batch, 8, torch.Generator().manual_seed(0)).dst  # all 8 valid items
    assert all(sorted(row) == list(range(2, 10)) for row in neg.tolist())


@pytest.mark.parametrize("replace", [False, True])
def test_exact_finish_is_uniform(replace, monkeypatch):
    # no rejection round: every row is finished by the exact path
    monkeypatch.setattr("tgeval.samplers.uniform._MAX_DRAWS_PER_ITEM", 0)
    catalog = Catalog("custom", torch.arange(12), None, 12)
    batch = make_stream([0] * 500, [1] * 500, list(range(500)))
    neg = UniformSampler(catalog, replace=replace).sample(batch, 3, torch.Generator().manual_seed(2)).dst
    assert not ({0, 1} & set(neg.flatten().tolist()))
    if not replace:
        assert all(len(set(row)) == 3 for row in neg.tolist())
    # first draw of each row: uniform over the 10 valid items (500 rows)
    assert chisquare(torch.bincount(neg[:, 0], minlength=12)[2:].numpy()).pvalue > 1e-3
    assert chisquare(torch.bincount(neg.flatten(), minlength=12)[2:].numpy()).pvalue > 1e-3


def test_draws_do_not_depend_on_other_events_of_the_batch():
    catalog = Catalog("custom", torch.arange(40), None, 40)
    batch = make_stream([0, 1, 2], [3, 4, 5], [1, 1, 2])
    batch.position = torch.tensor([10, 11, 12])
    bigger = make_stream([0, 1, 2, 7, 7], [3, 4, 5, 8, 9], [1, 1, 2, 3, 3])
    bigger.position = torch.tensor([10, 11, 12, 13, 14])
    gen = torch.Generator().manual_seed(5)
    a = UniformSampler(catalog).sample(batch, 30, gen).dst  # K close to the pool: several rounds
    b = UniformSampler(catalog).sample(bigger, 30, gen).dst
    assert torch.equal(a, b[:3])


def test_deterministic_for_a_seed():
    catalog = Catalog("custom", torch.arange(50), None, 50)
    batch = make_stream([0, 1, 2], [3, 4, 5], [1, 1, 2])
    a = UniformSampler(catalog).sample(batch, 10, torch.Generator().manual_seed(7)).dst
    b = UniformSampler(catalog).sample(batch, 10, torch.Generator().manual_seed(7)).dst
    c = UniformSampler(catalog).sample(batch, 10, torch.Generator().manual_seed(8)).dst
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_k_larger_than_pool_is_a_typed_error():
    catalog = Catalog("custom", torch.arange(5), None, 5)
    batch = make_stream([0, 0], [1, 2], [3, 3])
    with pytest.raises(SamplerError, match="2 candidate negatives.*fewer than the 3 required.*replace=True"):
        UniformSampler(catalog).sample(batch, 3).dst
    assert UniformSampler(catalog, replace=True).sample(batch, 3).dst.shape == (2, 3)
    with pytest.raises(ValueError, match="num_negatives"):
        UniformSampler(catalog).sample(batch, -1).dst


def test_when_a_row_is_finished_exactly_depends_on_its_own_pool_only(monkeypatch):
    monkeypatch.setattr("tgeval.samplers.uniform._MAX_DRAWS_PER_ITEM", 1)  # exact finish after |pool| draws
    # items 1..12 available from t=0, items 13..1012 from t=5
    items = torch.arange(1, 1013)
    catalog = Catalog("custom", items, torch.cat([torch.zeros(12), torch.full((1000,), 5)]).long(), 1100)
    # 20 sources x 10 simultaneous destinations 1..10 at t=1: each event keeps only {11, 12}
    src = torch.arange(1050, 1070).repeat_interleave(10)
    tight = make_stream(src, torch.arange(1, 11).repeat(20), [1] * 200)
    tight.position = torch.arange(200)
    # plus 998 simultaneous events of one source at t=10: 1012 available items, 2 valid, so those
    # rows need many rounds too, with a much larger pool
    big_dst = torch.arange(13, 1011)
    mixed = make_stream(torch.cat([src, torch.full((998,), 1090)]), torch.cat([torch.arange(1, 11).repeat(20), big_dst]),
                        [1] * 200 + [10] * 998)
    mixed.position = torch.arange(1198)
    alone = UniformSampler(catalog).sample(tight, 1, torch.Generator().manual_seed(3)).dst
    together = UniformSampler(catalog).sample(mixed, 1, torch.Generator().manual_seed(3)).dst
    assert set(alone.flatten().tolist()) == {11, 12}
    assert torch.equal(alone, together[:200])
