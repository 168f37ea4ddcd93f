"""The approximate all-entity pre-filter (Protocol(prefilter=L)) against brute force, and its contract."""

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval import ModelCapabilityError, build_catalog, chronological_split, evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.synthetic import generate_events
from tgeval.eval.ranking import all_entity_counts, chunked_counts, plan_candidates
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.helpers import TableModel, brute_force_counts, small_neural_model
from tests.strategies import streams


class PriorTableModel(TableModel):
    """``table[src, dst]`` scores with a fixed per-item prior ``prior[item]``."""

    def __init__(self, table, prior):
        super().__init__(table)
        self.register_buffer("prior", prior)

    def candidate_prior(self, src, t, candidates):
        return self.prior[candidates]


def chosen_positions(prior, t, items, available_from, top):
    """The ``top`` catalog positions of the call's available prefix with the highest prior (ties
    to the earlier position), by sorting in Python."""
    width = len(items) if available_from is None else max(sum(a < s for a in available_from) for s in t.tolist())
    return set(sorted(range(width), key=lambda k: (-float(prior[items[k]]), k))[:top])


@settings(max_examples=80, deadline=None)
@given(data=streams(min_events=1, max_events=25, max_nodes=9), budget=st.integers(1, 60), top=st.integers(1, 10),
       seed=st.integers(0, 10_000), timed=st.booleans(), directed=st.booleans())
def test_prefiltered_counts_equal_brute_force(data, budget, top, seed, timed, directed):
    n = 9
    gen = torch.Generator().manual_seed(seed)
    table = torch.randint(0, 3, (n, n), generator=gen).double()  # ties among scores
    prior = torch.randint(0, 3, (n,), generator=gen).double()  # and among priors
    model = PriorTableModel(table, prior)
    catalog = build_catalog(data, "time-available", num_nodes=n) if timed else Catalog("custom", torch.arange(1, n), None, n)
    pos = model.score(data.src, data.dst, data.t)
    got = all_entity_counts(model, data.src, data.dst, data.t, pos, catalog, candidate_budget=budget,
                            directed=directed, prefilter=top)
    available_from = catalog.available_from.tolist() if timed else None
    chosen = chosen_positions(prior, data.t, catalog.items.tolist(), available_from, top)
    expected = brute_force_counts(lambda u, v, s: table[u, v], data.src, data.dst, data.t, catalog.items,
                                  available_from, directed=directed, scored=chosen)
    assert list(zip(got.above.tolist(), got.equal.tolist(), got.num_candidates.tolist())) == expected
    exact = all_entity_counts(model, data.src, data.dst, data.t, pos, catalog, directed=directed)
    assert torch.equal(got.num_candidates, exact.num_candidates)  # the candidates it stands for are all counted
    assert bool((got.above <= exact.above).all() and (got.equal <= exact.equal).all())  # never a worse rank


@settings(max_examples=60, deadline=None)
@given(data=streams(min_events=1, max_events=25, max_nodes=9), budget=st.integers(1, 40), world=st.integers(2, 12),
       top=st.integers(1, 9), seed=st.integers(0, 10_000))
def test_prefiltered_shards_sum_to_the_one_process_counts(data, budget, world, top, seed):
    """The ranks split the chosen columns (empty shards included) and sum to one process's counts."""
    n = 9
    gen = torch.Generator().manual_seed(seed)
    model = PriorTableModel(torch.randint(0, 3, (n, n), generator=gen).double(),
                            torch.randint(0, 3, (n,), generator=gen).double())
    catalog = build_catalog(data, "time-available", num_nodes=n)
    pos = model.score(data.src, data.dst, data.t)
    plan = plan_candidates(data.src, data.dst, data.t, catalog)

    def counts(rank, size):
        return chunked_counts(model, data.src, data.t, pos, catalog, plan, 0, data.num_events, budget, (rank, size),
                              prefilter=top)[:2]
    whole = counts(0, 1)
    parts = [counts(rank, world) for rank in range(world)]
    assert torch.equal(sum(p[0] for p in parts), whole[0]) and torch.equal(sum(p[1] for p in parts), whole[1])


def _stream_and_model():
    data = generate_events(600, 40, seed=3)
    split = chronological_split(data, (0.6, 0.2, 0.2))
    torch.manual_seed(0)
    model = small_neural_model("tgn", 40)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=40)
    return data, split, model, catalog


def test_prefilter_is_exact_at_the_catalog_size_and_monotone_in_l():
    data, split, model, catalog = _stream_and_model()
    sampler = UniformSampler(catalog)
    exact = evaluate(copy.deepcopy(model), data, split.test, Protocol(num_negatives=5), sampler=sampler,
                     catalog=catalog)
    whole = evaluate(copy.deepcopy(model), data, split.test, Protocol(num_negatives=5, prefilter=catalog.size),
                     sampler=sampler, catalog=catalog)
    assert torch.equal(whole.records["above"], exact.records["above"])
    assert torch.equal(whole.records["equal"], exact.records["equal"])
    assert whole.metrics["all_entity"]["approximate"]["prefilter"] == catalog.size
    assert "approximate" not in exact.metrics["all_entity"]
    assert whole.manifest["protocol"]["prefilter"] == catalog.size
    previous = None
    for top in (1, 3, 10, catalog.size):
        r = evaluate(copy.deepcopy(model), data, split.test, Protocol(num_negatives=5, prefilter=top),
                     sampler=sampler, catalog=catalog)
        counts = r.records["above"] + r.records["equal"]
        assert bool((r.records["above"] <= exact.records["above"]).all())
        if previous is not None:
            assert bool((counts >= previous).all())  # the top-L sets are nested
        previous = counts
        assert torch.equal(r.records["score"], exact.records["score"])  # sampled metrics untouched
    small = evaluate(copy.deepcopy(model), data, split.test, Protocol(num_negatives=5, prefilter=1),
                     sampler=sampler, catalog=catalog)
    assert small.metrics["all_entity"]["mrr"]["micro"] > exact.metrics["all_entity"]["mrr"]["micro"]  # optimistic


def test_prefilter_refuses_what_it_cannot_do():
    data, split, model, catalog = _stream_and_model()
    with pytest.raises(ValueError, match="prefilter"):
        Protocol(prefilter=0)
    with pytest.raises(ValueError, match="no catalog"):
        evaluate(model, data, split.test, Protocol(prefilter=5), sampler=UniformSampler(catalog))
    with pytest.raises(ModelCapabilityError, match="candidate_prior"):
        evaluate(EdgeBank(40), data, split.test, Protocol(prefilter=5), catalog=catalog)
    test = data[split.test.start:split.test.end]
    with pytest.raises(ModelCapabilityError, match="candidate_prior"):  # the one-batch function refuses as well
        all_entity_counts(EdgeBank(40), test.src, test.dst, test.t, torch.zeros(test.num_events), catalog,
                          prefilter=5)
