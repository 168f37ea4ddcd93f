"""docs/protocol.md §12: every bad input this layer can meet gets a typed error naming the fix."""

import pytest
import torch

from tgeval import (CatalogError, ModelConfigError, ProtocolError, SplitError, TemporalDataError, chronological_split,
                    evaluate)
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.eval.ranking import all_entity_counts
from tgeval.models.heuristics import EdgeBank, NodeMemory, Popularity
from tgeval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream
from tests.helpers import TableModel, brute_force_counts

DATA = make_stream([0, 1, 2, 3, 0, 1], [1, 2, 3, 4, 2, 3], [1, 2, 3, 4, 5, 6])
TEST = Segment("test", 4, 6, 5, 6)
CATALOG = Catalog("custom", torch.arange(5), None, 5)


def test_evaluate_refuses_negative_and_out_of_range_ids():
    bad = make_stream([0, 1, -2, 3, 0, 1], [1, 2, 3, 4, 2, 3], [1, 2, 3, 4, 5, 6])
    with pytest.raises(TemporalDataError, match="node ids >= 0"):
        evaluate(NodeMemory(5), bad, TEST, catalog=CATALOG)
    with pytest.raises(TemporalDataError, match=r"node id 4 is >= the model's num_nodes=4.*num_nodes >= 5"):
        evaluate(NodeMemory(4), DATA, TEST, catalog=CATALOG)


def test_evaluate_refuses_unsorted_time():
    bad = make_stream([0, 1, 2, 3, 0, 1], [1, 2, 3, 4, 2, 3], [1, 2, 3, 4, 6, 5])
    with pytest.raises(TemporalDataError, match="non-decreasing"):
        evaluate(EdgeBank(5), bad, TEST, catalog=CATALOG)


def test_uncovered_error_rule():
    catalog = Catalog("custom", torch.tensor([0, 1]), None, 5)
    with pytest.raises(CatalogError, match=r"2 positives lie outside the 'custom' catalog.*uncovered='rank'"):
        evaluate(EdgeBank(5), DATA, TEST, Protocol(uncovered="error"), catalog=catalog)
    excluded = evaluate(EdgeBank(5), DATA, TEST, Protocol(uncovered="exclude"), catalog=catalog)
    assert excluded.metrics["all_entity"]["num_events"] == 0
    assert excluded.metrics["all_entity"]["coverage"]["uncovered"] == 2


def test_evaluate_argument_errors():
    with pytest.raises(ValueError, match="num_negatives must be >= 1"):
        evaluate(EdgeBank(5), DATA, TEST, Protocol(num_negatives=0), sampler=UniformSampler(CATALOG))
    with pytest.raises(ValueError, match="uncovered"):
        evaluate(EdgeBank(5), DATA, TEST, Protocol(uncovered="drop"), catalog=CATALOG)
    with pytest.raises(ProtocolError, match="ties"):
        evaluate(EdgeBank(5), DATA, TEST, Protocol(ties="random"), catalog=CATALOG)
    with pytest.raises(ProtocolError, match="candidate_budget"):
        all_entity_counts(EdgeBank(5), DATA.src, DATA.dst, DATA.t, torch.zeros(6, dtype=torch.float64), CATALOG,
                          candidate_budget=0)


@pytest.mark.parametrize("budget", [-5, 0, 1.5, True])
def test_evaluate_refuses_a_candidate_budget_below_one(budget):
    # a negative budget counted no candidate (every rank 1, MRR 1.0), zero divided by zero
    with pytest.raises(ProtocolError, match=r"candidate_budget .* must be an integer >= 1"):
        evaluate(TableModel(torch.rand(5, 5, dtype=torch.float64)), DATA, TEST, catalog=CATALOG,
                 candidate_budget=budget)


def test_split_refuses_unsorted_time():
    with pytest.raises(SplitError, match="non-decreasing"):
        chronological_split(make_stream([0, 1, 2], [1, 2, 0], [3, 1, 2]))


def test_zero_train_ratio_gives_an_empty_train_segment():
    split = chronological_split(make_stream([0] * 10, [1] * 10, list(range(10))), (0.0, 0.5, 0.5))
    assert split.train.num_events == 0 and split.val.start == 0


def test_catalog_invariants():
    with pytest.raises(CatalogError, match="distinct"):
        Catalog("custom", torch.tensor([1, 2, 2]), None, 5)
    with pytest.raises(CatalogError, match="sorted by available_from"):
        Catalog("custom", torch.tensor([1, 2]), torch.tensor([5, 3]), 5)
    with pytest.raises(CatalogError, match="one time per item"):
        Catalog("custom", torch.tensor([1, 2]), torch.tensor([3]), 5)
    with pytest.raises(CatalogError, match=r"\[0, num_nodes=3\).*larger num_nodes"):
        Catalog("custom", torch.tensor([1, 4]), None, 3)
    with pytest.raises(CatalogError, match="int64"):
        Catalog("custom", torch.tensor([1.0, 2.0]), None, 3)


def test_availability_compares_mixed_dtypes_exactly():
    catalog = Catalog("custom", torch.tensor([1, 2]), torch.tensor([2, 3]), 5)
    t = torch.tensor([2.5, 2.0], dtype=torch.float64)
    assert catalog.num_available(t).tolist() == [1, 0]  # 2 < 2.5 is available; 2 < 2 is not
    assert catalog.available(torch.tensor([1, 1]), t).tolist() == [True, False]


def test_small_catalog_id_space_does_not_merge_events_of_other_times():
    # (6 -> 1, t=1) and (1 -> 2, t=2): source ids beyond the catalog's num_nodes must not collide
    table = torch.arange(49, dtype=torch.float64).view(7, 7) % 3
    model = TableModel(table)
    catalog = Catalog("custom", torch.arange(5), None, 5)
    src, dst, t = torch.tensor([6, 1]), torch.tensor([1, 2]), torch.tensor([1, 2])
    got = all_entity_counts(model, src, dst, t, model.score(src, dst, t), catalog)
    expected = brute_force_counts(lambda u, v, s: table[u, v], src, dst, t, catalog.items)
    assert list(zip(got.above.tolist(), got.equal.tolist(), got.num_candidates.tolist())) == expected


def test_popularity_decay_with_negative_timestamps_is_finite():
    model = Popularity(4, half_life=10.0)
    q = (torch.tensor([0, 1]), torch.tensor([1, 2]), torch.tensor([-5000, -5000]))
    assert not torch.isnan(model.score(*q)).any()
    model.update(make_stream([0], [1], [-6000]))
    scores = model.score(*q)  # log2 of the decayed count: log2(2 ** -100) = -100; unseen: -inf
    assert scores[0] == pytest.approx(-100.0) and scores[1] == float("-inf")


def test_pair_keys_must_fit_int64():
    with pytest.raises(ModelConfigError, match="too large for int64 pair keys"):
        EdgeBank(4_000_000_000)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_model_and_data_on_different_devices():
    with pytest.raises(ValueError, match="model is on"):
        evaluate(EdgeBank(5).cuda(), DATA, TEST, catalog=CATALOG)
