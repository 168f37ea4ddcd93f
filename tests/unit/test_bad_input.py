"""docs/protocol.md §12: every bad input this layer can meet gets a typed error naming the fix."""

import pytest
import torch

from tgeval.training.train import Recipe
from tgeval import (CatalogError, ModelConfigError, ProtocolError, SplitError, TemporalDataError, chronological_split,
                    evaluate)
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.eval.ranking import all_entity_counts
from tgeval.models.heuristics import EdgeBank, NodeMemory, Popularity
from tgeval.data.validation import validate
from tgeval.eval.protocol import Protocol
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


class Returns(TableModel):
    """A table model whose ``score`` returns ``kind`` instead of a float tensor ``[B]``."""

    def __init__(self, kind):
        super().__init__(torch.rand(5, 5, generator=torch.Generator().manual_seed(0)))
        self.kind = kind

    def score(self, src, dst, t):
        good = super().score(src, dst, t)
        return {"short": good[:-1], "0-d": good.sum(), "list": good.tolist(), "2-d": good[:, None].expand(-1, 2),
                "booleans": good > 0.5}[self.kind]


RETURNS = {"short": r"returned a torch.float32 tensor of shape \[\d+\], but a float tensor of shape \[\d+\]",
           "0-d": r"returned a 0-d torch.float32 tensor \(one number for the whole batch\)",
           "list": r"returned a list, but a float tensor",
           "2-d": r"returned a torch.float32 tensor of shape \[\d+, 2\]", "booleans": r"returned a torch.bool tensor"}


@pytest.mark.parametrize("kind", list(RETURNS))
def test_scores_that_are_no_float_tensor_of_one_score_per_query_are_refused(kind):
    """Every scoring path checks what ``score`` returns (:func:`tgeval.models.base.checked_scores`): the replay,
    the all-entity shortcut's excluded pairs, training and the diagnostics."""
    from tgeval import ModelOutputError, train_epoch
    from tgeval.diagnostics.membership import membership_factorial

    message = RETURNS[kind] + r".*one score per \(src, dst, t\) query"
    with pytest.raises(ModelOutputError, match=message):
        evaluate(Returns(kind), DATA, TEST, Protocol(num_negatives=2), sampler=UniformSampler(CATALOG))
    model = Returns(kind)
    with pytest.raises(ModelOutputError, match=message):
        train_epoch(model, DATA, (0, 4), recipe=Recipe(UniformSampler(CATALOG), "bce", batch_size=2),
                    optimizer=torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1))
    with pytest.raises(ModelOutputError, match=message):
        membership_factorial(Returns(kind), DATA, TEST, CATALOG, num_negatives=1)


def test_candidate_blocks_of_another_shape_are_refused():
    class Blocks(TableModel):
        def candidate_scorer(self, src, t, candidates):
            return lambda ev, cand: torch.zeros(3)

    from tgeval import ModelOutputError

    with pytest.raises(ModelOutputError,
                       match=r"Blocks.candidate_scorer returned a torch.float32 tensor of shape \[3\], but a float "
                             r"tensor of shape \[\d+, \d+\] is expected \(one score per event and candidate"):
        evaluate(Blocks(torch.rand(5, 5)), DATA, TEST, catalog=CATALOG)


def test_a_model_without_score_or_update_or_no_model_at_all_is_refused_before_any_work():
    from tgeval import ModelCapabilityError
    from tgeval.models.base import TemporalLinkModel

    class NoUpdate(TemporalLinkModel):
        def score(self, src, dst, t):
            return torch.zeros(src.numel())

    class NoScore(TemporalLinkModel):
        def update(self, batch):
            pass

    with pytest.raises(ModelCapabilityError, match=r"NoUpdate does not implement update: .*`def update\(self, "
                                                   r"batch\): pass`\); or evaluate it with Protocol\(replay='fixed', "
                                                   r"warm=False\)"):
        evaluate(NoUpdate(5), DATA, TEST, catalog=CATALOG)
    fixed = evaluate(NoUpdate(5).eval(), DATA, TEST, Protocol(replay="fixed", warm=False, num_negatives=2),
                     sampler=UniformSampler(CATALOG))
    assert fixed.metrics["sampled"]["num_events"] == 2  # never updated: measured
    with pytest.raises(ModelCapabilityError, match=r"NoScore does not implement score: define score"):
        evaluate(NoScore(5), DATA, TEST, catalog=CATALOG)
    with pytest.raises(ModelCapabilityError, match=r"the model must be a tgeval TemporalLinkModel .*got function "
                                                   r"<function .*FixedScorerModel\(num_nodes, function\)"):
        evaluate(lambda src, dst, t: torch.zeros(src.numel()), DATA, TEST, catalog=CATALOG)


@pytest.mark.parametrize("field, value, message", [
    ("num_negatives", 20.0, r"Protocol.num_negatives must be an integer, got 20.0 \(float\): pass 20\."),
    ("num_negatives", True, r"Protocol.num_negatives must be an integer, got True \(bool\): a count, not a switch"),
    ("batch_size", "200", r"Protocol.batch_size must be an integer, got '200' \(str\)\."),
    ("seed", 1.5, r"Protocol.seed must be an integer, got 1.5 \(float\)\."),
    ("prefilter", 2.0, r"Protocol.prefilter must be None \(exact ranking\) or an integer, got 2.0 \(float\): pass 2"),
    ("directed", "no", r"Protocol.directed must be True or False, got 'no' \(str\)"),
    ("warm", 1, r"Protocol.warm must be True or False, got 1 \(int\)"),
    ("hits", 10, r"Protocol.hits must be a sequence of integers k \(Hits@k\), e.g. \(1, 3, 10\) or \(10,\), got 10\."),
    ("hits", (1.5,), r"Protocol.hits must be a sequence of integers k .*got \(1.5,\)"),
])
def test_protocol_fields_of_another_type_are_refused(field, value, message):
    """Every field is checked by type where the Protocol is built, never cast (20.0 and True are not K) nor left
    to fail in the engine."""
    with pytest.raises(ProtocolError, match=message):
        Protocol(**{field: value})


def test_protocol_takes_numpy_integers_as_integers():
    import numpy as np

    protocol = Protocol(num_negatives=np.int64(5), hits=[np.int32(3)], prefilter=np.int64(7))
    assert protocol.to_dict()["num_negatives"] == 5 and type(protocol.num_negatives) is int
    assert protocol.hits == (3,) and type(protocol.prefilter) is int


@pytest.mark.parametrize("dtype, exact", [(torch.float16, 2048), (torch.bfloat16, 256)])
def test_half_precision_times_are_refused_as_already_rounded(dtype, exact):
    """float16 / bfloat16 cannot hold timestamps (2049 is 2048): refused, not widened after the damage."""
    data = make_stream([0, 1, 2, 3, 0, 1], [1, 2, 3, 4, 2, 3], [1, 2, 3, 4, 5, 6])
    data.t = data.t.to(dtype)
    message = rf"`t` has dtype {dtype}, which holds whole numbers exactly only up to {exact}: .*Build `t` as int64"
    with pytest.raises(TemporalDataError, match=message):
        validate(data)
    with pytest.raises(TemporalDataError, match=message):
        evaluate(EdgeBank(5), data, TEST, catalog=CATALOG)
    data.t = torch.tensor([1.0, 2.0, float("nan"), 4.0, 5.0, 6.0])
    with pytest.raises(TemporalDataError, match=r"`t` must be finite, but t\[2\]=nan. Drop or repair"):
        evaluate(EdgeBank(5), data, TEST, catalog=CATALOG)
