"""All-entity ranking: chunked counting vs brute force vs the full matrix, shortcut vs generic."""

from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval import build_catalog
from tgeval.data.catalog import Catalog
from tgeval.eval import ranking
from tgeval.eval.ranking import all_entity_counts, plan_candidates
from tgeval.models.heuristics import EdgeBank, PairMembership
from tests.helpers import TableModel, brute_force_counts
from tests.strategies import streams


@settings(max_examples=80, deadline=None)
@given(data=streams(max_events=25, max_nodes=9), budget=st.integers(1, 100), levels=st.integers(1, 4),
       seed=st.integers(0, 10_000), timed=st.booleans(), directed=st.booleans())
def test_chunked_counts_equal_brute_force_for_any_budget(data, budget, levels, seed, timed, directed):
    n = 9
    gen = torch.Generator().manual_seed(seed)
    table = torch.randint(0, levels, (n, n), generator=gen).double()  # few levels: many ties
    model = TableModel(table)
    catalog = build_catalog(data, "time-available", num_nodes=n) if timed else Catalog("custom", torch.arange(1, n), None, n)
    pos = model.score(data.src, data.dst, data.t)
    got = all_entity_counts(model, data.src, data.dst, data.t, pos, catalog, candidate_budget=budget,
                            directed=directed)
    expected = brute_force_counts(lambda u, v, s: table[u, v], data.src, data.dst, data.t, catalog.items,
                                  catalog.available_from.tolist() if timed else None, directed=directed)
    assert list(zip(got.above.tolist(), got.equal.tolist(), got.num_candidates.tolist())) == expected
    # same answer from the full [B, C] matrix in one block
    full = all_entity_counts(model, data.src, data.dst, data.t, pos, catalog, candidate_budget=10**9,
                             directed=directed)
    assert torch.equal(full.above, got.above) and torch.equal(full.equal, got.equal)


@settings(max_examples=80, deadline=None)
@given(history=streams(max_events=30, max_nodes=9), queries=streams(max_events=15, max_nodes=9),
       kind=st.sampled_from(["custom", "time-available", "all"]), beta=st.sampled_from([1.0, -1.0, 0.0]),
       window=st.sampled_from([None, 0.5, 3.0, 7.0]), split=st.integers(0, 5), directed=st.booleans(),
       grouped=st.booleans())
def test_edgebank_shortcut_equals_generic_chunked_scoring(history, queries, kind, beta, window, split, directed,
                                                          grouped):
    """``grouped``: the shortcut subtracts exclusions once per (t, source) group (the path for
    batches with more than PAIR_LIMIT pairs) instead of per event."""
    n = 9
    queries.t = queries.t + int(history.t.max()) + split  # queries come after (or with the end of) the history
    model = PairMembership(n, beta=beta) if window is None else EdgeBank(n, window=window)
    model.update(history)
    if kind == "custom":
        catalog = Catalog("custom", torch.tensor([0, 2, 3, 5, 8]), None, n)
    else:
        both = history.__class__(src=torch.cat([history.src, queries.src]), dst=torch.cat([history.dst, queries.dst]),
                                 t=torch.cat([history.t, queries.t]))
        catalog = build_catalog(both, kind, num_nodes=n)
    pos = model.score(queries.src, queries.dst, queries.t)
    with mock.patch.object(ranking, "PAIR_LIMIT", 0 if grouped else ranking.PAIR_LIMIT):
        fast = all_entity_counts(model, queries.src, queries.dst, queries.t, pos, catalog, use_shortcut=True,
                                 directed=directed)
    slow = all_entity_counts(model, queries.src, queries.dst, queries.t, pos, catalog, use_shortcut=False,
                             directed=directed)
    assert torch.equal(fast.above, slow.above) and torch.equal(fast.equal, slow.equal)
    assert torch.equal(fast.num_candidates, slow.num_candidates) and torch.equal(fast.num_filtered, slow.num_filtered)
    assert model.catalog_counts(queries.src, queries.t, pos, catalog) is not None or kind == "time-available"


def test_shortcut_declined_when_it_cannot_be_exact():
    assert EdgeBank(5, directed=False).catalog_counts(torch.tensor([0]), torch.tensor([1]), torch.tensor([0.0]),
                                                      Catalog("custom", torch.arange(5), None, 5)) is None


def test_filtering_and_coverage_by_hand():
    # Source 0 has two simultaneous positives (1 and 2) at t=5; catalog {1, 2, 3, 4}.
    # Scores: s(0,1)=3, s(0,2)=9, s(0,3)=5, s(0,4)=3.
    table = torch.zeros(6, 6, dtype=torch.float64)
    table[0, 1], table[0, 2], table[0, 3], table[0, 4] = 3, 9, 5, 3
    model = TableModel(table)
    catalog = Catalog("custom", torch.tensor([1, 2, 3, 4]), None, 6)
    src, dst, t = torch.tensor([0, 0, 1]), torch.tensor([1, 2, 5]), torch.tensor([5, 5, 5])
    got = all_entity_counts(model, src, dst, t, model.score(src, dst, t), catalog)
    # event 0 (p=3): candidates {3, 4} (2 filtered): above=1 (5), equal=1 (3)
    # event 1 (p=9): candidates {3, 4}: above 0, equal 0; 1 filtered
    # event 2 (src 1, dst 5 outside catalog, p=0): candidates {2, 3, 4} (1 is its source): all score 0
    assert got.above.tolist() == [1, 0, 0] and got.equal.tolist() == [1, 0, 3]
    assert got.num_candidates.tolist() == [2, 2, 3] and got.num_filtered.tolist() == [1, 1, 0]
    assert got.covered.tolist() == [True, True, False]


def test_nan_scores_are_refused():
    table = torch.zeros(3, 3, dtype=torch.float64)
    table[0, 2] = float("nan")
    model = TableModel(table)
    catalog = Catalog("custom", torch.arange(3), None, 3)
    src, dst, t = torch.tensor([0]), torch.tensor([1]), torch.tensor([1])
    with pytest.raises(ValueError, match="NaN candidate scores"):
        all_entity_counts(model, src, dst, t, model.score(src, dst, t), catalog)


def test_device(device):
    table = torch.rand(6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device)
    model = TableModel(table)
    catalog = Catalog("custom", torch.arange(6, device=device), None, 6)
    src, dst, t = (torch.tensor(x, device=device) for x in ([0, 1], [2, 3], [1, 1]))
    got = all_entity_counts(model, src, dst, t, model.score(src, dst, t), catalog, candidate_budget=4)
    assert got.above.device.type == device.type


def test_a_source_with_thousands_of_simultaneous_events_stays_linear():
    """2,000 simultaneous events of one source: exclusions are stored once for the group (2,001
    keys, not 2,000 x 2,001 pairs); the shortcut counts them per group (more pairs than
    PAIR_LIMIT) and the chunked path expands pairs per block; both equal the hand count."""
    n, size = 3000, 2000
    src, dst, t = torch.zeros(size, dtype=torch.long), torch.arange(1, size + 1), torch.full((size,), 5)
    catalog = Catalog("custom", torch.arange(n), None, n)
    plan = plan_candidates(src, dst, t, catalog)
    assert plan.excluded.numel() == size + 1 and plan.num_pairs(0, size) == size * (size + 1) > ranking.PAIR_LIMIT
    assert plan.shortcut_pairs(0, size).row.numel() == size + 1  # the group's pairs, once
    model = EdgeBank(n)
    model.update(TemporalData(src=torch.zeros(1500, dtype=torch.long), dst=torch.arange(1, 1501),
                              t=torch.ones(1500, dtype=torch.long)))  # (0, 1..1500) seen before
    model.update(TemporalData(src=torch.zeros(1, dtype=torch.long), dst=torch.tensor([2500]),
                              t=torch.ones(1, dtype=torch.long)))  # and one candidate, 2500
    pos = model.score(src, dst, t)
    fast = all_entity_counts(model, src, dst, t, pos, catalog, use_shortcut=True)
    slow = all_entity_counts(model, src, dst, t, pos, catalog, use_shortcut=False, candidate_budget=50_000)
    # candidates: 3000 ids minus the source and the 2000 destinations = 999, of which 2500 is seen
    seen = dst <= 1500
    assert fast.num_candidates.eq(999).all()
    assert fast.above[seen].eq(0).all() and fast.equal[seen].eq(1).all()  # p = 1: ties with 2500
    assert fast.above[~seen].eq(1).all() and fast.equal[~seen].eq(998).all()  # p = 0: 2500 above
    assert torch.equal(fast.above, slow.above) and torch.equal(fast.equal, slow.equal)
