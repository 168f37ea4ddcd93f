"""Everything a sampler returns is checked as a negatives file is (NegativesCheck): a user's own sampler too,
on every path (evaluate, train_epoch, save_negatives), its collisions refused, masked or kept as it says."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval import SamplerError, build_catalog, chronological_split, evaluate
from tgeval.data.split import Segment
from tgeval.data.synthetic import generate_events
from tgeval.models.heuristics import EdgeBank, PairMembership
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler, save_negatives
from tgeval.samplers.base import NegativeSampler, Negatives, _pair_collisions, destination_collisions
from tgeval.training.train import Recipe, train_epoch
from tests.conftest import make_stream
from tests.helpers import TableModel

N = 30
DATA = generate_events(num_events=400, num_nodes=N - 5, seed=4)  # ids N - 5 .. N - 1 never occur
SPLIT = chronological_split(DATA)


class Returns(NegativeSampler):
    """A user's sampler: ``make(batch, k)`` is what it returns."""

    name = "mine"

    def __init__(self, make, collisions="error"):
        self.make, self.collisions = make, collisions

    def sample(self, batch, num_negatives, generator=None):
        return self.make(batch, num_negatives)


def others(batch, k):
    """k ids that are never the source or a destination of the batch's time (ids the data never holds)."""
    return torch.arange(N - k, N).expand(batch.src.numel(), k).clone()


def run(sampler, k=3, data=DATA):
    return evaluate(EdgeBank(N), data, chronological_split(data).test, Protocol(num_negatives=k), sampler=sampler)


@pytest.mark.parametrize("make, message", [
    (lambda b, k: torch.cat([b.dst[:, None], others(b, k - 1)], 1), r"the negative \(\d+, \d+\) for event 0 of the "
                                                                     r"batch .*: the positive itself"),
    (lambda b, k: torch.cat([b.src[:, None], others(b, k - 1)], 1), r"its source \(a self-loop\)"),
    (lambda b, k: torch.full((b.src.numel(), k), 999), r"node id 999 for event 0 .*outside the node range \[0, 30\)"),
    (lambda b, k: torch.full((b.src.numel(), k), -1), r"node id -1 for event 0 .*outside the node range"),
    (lambda b, k: others(b, k).float(), r"destinations of dtype torch.float32. Node ids are integers"),
    (lambda b, k: others(b, k + 1), r"destinations of shape \(\d+, 4\). A batch of \d+ events with K=3 takes"),
    (lambda b, k: others(b, k)[:-1], r"destinations of shape"),
    (lambda b, k: others(b, k).tolist(), r"returned a list. Return Negatives"),
    (lambda b, k: Negatives(others(b, k), mask=torch.ones(b.src.numel(), k)), r"a mask of torch.float32"),
    (lambda b, k: Negatives(others(b, k), src=torch.full((b.src.numel(), k), N)), r"node id 30 .*outside"),
])
def test_a_users_sampler_is_checked_on_every_draw(make, message):
    with pytest.raises(SamplerError, match=message):
        run(Returns(make))


def test_a_simultaneous_positive_is_refused():
    # two events of source 0 at one time: each destination is a positive of the other
    data = make_stream([1, 2, 0, 0, 3], [2, 3, 4, 5, 4], [1, 2, 3, 3, 4])
    test = Segment("test", 2, 5, 3, 4)
    sampler = Returns(lambda b, k: torch.where(b.dst[:, None] == 4, 5, 4).expand(-1, k).clone())
    with pytest.raises(SamplerError, match=r"the negative \(0, 5\) for event 0 .*a simultaneous positive"):
        evaluate(TableModel(torch.rand(6, 6, dtype=torch.float64)), data, test, Protocol(num_negatives=1),
                 sampler=sampler)


def test_collisions_mask_or_keep_as_the_sampler_says():
    with_positive = lambda b, k: torch.cat([b.dst[:, None], others(b, k - 1)], 1)  # noqa: E731
    masked = run(Returns(with_positive, collisions="mask"))
    n = SPLIT.test.num_events
    assert masked.manifest["negatives_check"] == {"collisions": "mask", "num_masked_collisions": n}
    assert not masked.records["neg_mask"][:, 0].any() and masked.records["neg_mask"][:, 1:].all()
    # the masked slot is not counted: the same numbers as the draws without it
    clean = run(Returns(others), k=2)
    assert masked.metrics["sampled"]["mrr"] == clean.metrics["sampled"]["mrr"]
    kept = run(Returns(with_positive, collisions="keep"))
    assert kept.manifest["negatives_check"] == {"collisions": "keep", "num_masked_collisions": 0}
    assert kept.metrics["sampled"]["mrr"]["micro"] < clean.metrics["sampled"]["mrr"]["micro"]  # scored as drawn
    assert run(UniformSampler(build_catalog(DATA, "all"))).manifest["negatives_check"] == {
        "collisions": "error", "num_masked_collisions": 0}
    with pytest.raises(SamplerError, match=r"Returns.collisions must be one of \('error', 'mask', 'keep'\)"):
        run(Returns(with_positive, collisions="drop"))


def test_training_and_saved_files_go_through_the_same_checks(tmp_path):
    positive = Returns(lambda b, k: b.dst[:, None].expand(-1, k).clone())
    model = PairMembership(N, beta=0.0, bias=0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(SamplerError, match="the positive itself"):
        train_epoch(model, DATA, SPLIT.train, recipe=Recipe(positive, "bce"), optimizer=optimizer)
    with pytest.raises(SamplerError, match="the positive itself"):
        save_negatives(tmp_path / "n.pt", positive, DATA, SPLIT.test, 2)
    assert not (tmp_path / "n.pt").exists()
    masked = Returns(lambda b, k: torch.cat([b.dst[:, None], others(b, k - 1)], 1), collisions="mask")
    stats = train_epoch(model, DATA, SPLIT.train, recipe=Recipe(masked, "bce", num_negatives=2), optimizer=optimizer)
    assert stats["num_masked_collisions"] == SPLIT.train.num_events
    stored = save_negatives(tmp_path / "m.pt", masked, DATA, SPLIT.test, 2, num_nodes=N)
    assert stored.header["collisions"] == "mask" and stored.header["num_masked_collisions"] == SPLIT.test.num_events
    assert not stored.neg_mask[:, 0].any()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_collisions_equal_a_brute_force(draw):
    """Events and negative pairs (or destinations) over few ids, so that collisions are common, at huge magnitudes:
    the ranks keep keys small."""
    size, k = draw.draw(st.integers(1, 12)), draw.draw(st.integers(1, 4))
    offset = draw.draw(st.sampled_from([0, 2**40, 2**62]))
    ids = st.integers(0, 4).map(lambda i: i + offset)
    src, dst = (torch.tensor(draw.draw(st.lists(ids, min_size=size, max_size=size))) for _ in range(2))
    t = torch.tensor(sorted(draw.draw(st.lists(st.integers(0, 2), min_size=size, max_size=size))))
    neg_src, neg_dst = (torch.tensor(draw.draw(st.lists(st.lists(ids, min_size=k, max_size=k), min_size=size,
                                                        max_size=size))) for _ in range(2))
    events = set(zip(src.tolist(), dst.tolist(), t.tolist()))
    pairs = [(a, b, t[i].item()) in events for i in range(size) for a, b in zip(neg_src[i].tolist(),
                                                                                 neg_dst[i].tolist())]
    assert _pair_collisions(src, dst, t, neg_src, neg_dst).flatten().tolist() == pairs
    sources = [b == src[i] or (src[i].item(), b, t[i].item()) in events for i in range(size)
               for b in neg_dst[i].tolist()]  # destination negatives: the source too
    batch = TemporalData(src=src, dst=dst, t=t)
    assert destination_collisions(src, dst, t, neg_dst, batch, True).flatten().tolist() == sources
