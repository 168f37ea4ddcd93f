"""The walk through time is written once: every consumer (evaluation, training, fixed-negative generation, the
membership factorial, beta*, the audit, the window selection) sees the same batches in the same order, and no
step is scored by a state that has seen it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tgeval import Protocol, audit, build_catalog, chronological_split, evaluate
from tgeval.data.synthetic import generate_events
from tgeval.data.validation import permute_events
from tgeval.diagnostics.membership import beta_star, membership_factorial
from tgeval.errors import LeakageError
from tgeval.eval.selection import select_window
from tgeval.models.base import TemporalLinkModel, pairwise_scorer
from tgeval.samplers import UniformSampler
from tgeval.samplers.fixed import draw_negatives
from tgeval.training.train import Recipe, train_epoch
from tgeval.stream.walk import Walk

BATCH = 7
pytestmark = pytest.mark.filterwarnings("ignore::tgeval.errors.UntrainedModelWarning")


class Recording(TemporalLinkModel):
    """A differentiable model that logs each update's events and, at each score call, checks that its state
    holds only events strictly earlier than every scored query."""

    def __init__(self, num_nodes: int, window: object = None) -> None:
        super().__init__(num_nodes)
        self.weight = nn.Parameter(torch.ones(()))
        self.seen = torch.zeros(num_nodes)
        self.log: list[torch.Tensor] = []
        self.latest = -float("inf")

    def score(self, src, dst, t):
        if t.numel():
            assert self.latest < float(t.min()), "scored by a state that has seen the query's time"
        return self.weight * self.seen[dst]

    def candidate_scorer(self, src, t, candidates):  # a lookup per pair
        return pairwise_scorer(self.score, src, t, candidates)

    def update(self, batch):
        self.log.append(torch.stack([batch.src, batch.dst, batch.t]))
        self.latest = max(self.latest, float(batch.t.max()))
        self.seen = self.seen.index_add(0, batch.dst, torch.ones(batch.dst.numel()))

    def reset_state(self):
        super().reset_state()
        self.log, self.latest = [], -float("inf")
        self.seen = torch.zeros(self.num_nodes)

    def snapshot(self):
        return (self.seen.clone(), list(self.log), self.latest)

    def restore(self, state):
        self.seen, self.log, self.latest = state[0].clone(), list(state[1]), state[2]


class RecordingSampler(UniformSampler):
    """A uniform sampler that logs what it observes (and claims history, so evaluation feeds it)."""

    history_free = False

    def __init__(self, catalog):
        super().__init__(catalog)
        self.log: list[torch.Tensor] = []

    def observe(self, batch):
        self.log.append(torch.stack([batch.src, batch.dst, batch.t, batch.position]))

    def reset_state(self):
        super().reset_state()
        self.log = []


def _stream():
    data = generate_events(num_events=400, num_nodes=30, seed=5)
    data.t = data.t // 15  # timestamp groups of several events
    shuffle = torch.randperm(data.num_events, generator=torch.Generator().manual_seed(2))
    shuffle = shuffle[torch.argsort(data.t[shuffle], stable=True)]  # simultaneous events in a random file order
    data = permute_events(data, shuffle)
    split = chronological_split(data)
    return data, split, build_catalog(data, "train", train_end=split.train.end)


def _same(logs):
    first = logs[0]
    for log in logs[1:]:
        assert len(log) == len(first)
        assert all(torch.equal(a, b) for a, b in zip(log, first))


def test_every_consumer_walks_the_same_batches_in_the_same_order():
    data, split, catalog = _stream()
    n, segment = 30, split.test
    models, samplers = {}, {}

    model, sampler = models["evaluate"], samplers["evaluate"] = Recording(n), RecordingSampler(catalog)
    evaluate(model, data, segment, Protocol(num_negatives=2, batch_size=BATCH, history="batch"), sampler=sampler,
             catalog=catalog)
    model, sampler = models["train_epoch"], samplers["train_epoch"] = Recording(n), RecordingSampler(catalog)
    train_epoch(model, data, segment, recipe=Recipe(sampler, "bce", batch_size=BATCH),
                optimizer=torch.optim.SGD(model.parameters(), lr=0.0))
    models["membership"] = Recording(n)
    membership_factorial(models["membership"], data, segment, catalog, num_negatives=2, batch_size=BATCH)
    samplers["draw_negatives"] = RecordingSampler(catalog)
    draw_negatives(samplers["draw_negatives"], data, segment, 2, batch_size=BATCH)
    samplers["beta_star"] = RecordingSampler(catalog)
    beta_star(data, segment, catalog, sampler=samplers["beta_star"], num_negatives=2, batch_size=BATCH, num_nodes=n)
    built: list[Recording] = []
    audit(lambda stream: built.append(Recording(n)) or built[-1], data, split, catalog=catalog,
          protocol=Protocol(batch_size=BATCH, history="batch"), checks=["order_invariance"])
    models["audit"] = built[0]

    walk = Walk(data, segment, batch_size=BATCH)
    expected = [torch.stack([walk.events.src[a:z], walk.events.dst[a:z], walk.events.t[a:z]])
                for a, z in zip(walk.boundaries[:-1], walk.boundaries[1:])]
    history = models["evaluate"].log[:len(models["evaluate"].log) - len(expected)]
    assert sum(part.size(1) for part in history) == segment.start
    for name, model in models.items():
        assert len(model.log) == len(history) + len(expected), name
    _same([model.log for model in models.values()] + [history + expected])
    _same([sampler.log for sampler in samplers.values()])
    segment_log = samplers["evaluate"].log[-len(expected):]
    assert all(torch.equal(a[:3], b) for a, b in zip(segment_log, expected))


def test_window_selection_warms_up_as_evaluate():
    data, split, catalog = _stream()
    made: list[Recording] = []
    select_window(lambda w: made.append(Recording(30, w)) or made[-1], data, split.val, catalog, windows=[None],
                  batch_size=BATCH)
    reference = Recording(30)
    evaluate(reference, data, split.val, Protocol(num_negatives=0, batch_size=BATCH, history="batch"),
             catalog=catalog)
    warm = len(made[0].log)
    _same([made[0].log, reference.log[:warm]])
    assert sum(part.size(1) for part in made[0].log) == split.val.start


def test_an_update_inside_scoring_is_refused():
    data, split, catalog = _stream()
    model, walk = Recording(30), Walk(data, split.test, batch_size=BATCH)
    walk.warm_up(model)
    step = next(walk.steps(model))
    with pytest.raises(LeakageError):
        with step.scoring():
            model.score(step.batch.src, step.batch.dst, step.batch.t)
            model.update(step.model_batch)


def test_the_walk_updates_only_after_the_consumer_is_done():
    data, split, _ = _stream()
    model, walk = Recording(30), Walk(data, split.test, batch_size=BATCH)
    walk.warm_up(model)
    before = len(model.log)
    for step in walk.steps(model):
        assert len(model.log) == before + step.index  # the previous steps only
        with step.scoring():
            model.score(step.batch.src, step.batch.dst, step.batch.t)
        assert "e_id" not in step.model_batch and "position" not in step.model_batch
        assert torch.equal(step.batch.position, torch.arange(step.start, step.end) + split.test.start)
    assert len(model.log) == before + walk.num_batches
    fixed = Recording(30)
    walk.warm_up(fixed)
    before = len(fixed.log)
    assert sum(1 for _ in walk.steps(fixed, online=False)) == walk.num_batches and len(fixed.log) == before


def test_a_walk_is_freed_by_reference_counting():
    """No step keeps its walk (and so the whole canonical stream) alive in a reference cycle: evaluate frees the
    stream before its metrics without waiting for the cycle collector."""
    import gc
    import weakref

    data, split, _ = _stream()
    model = Recording(30)
    gc.disable()
    try:
        walk = Walk(data, split.test, batch_size=BATCH)
        walk.warm_up(model)
        for step in walk.steps(model):
            with step.scoring():
                model.score(step.batch.src, step.batch.dst, step.batch.t)
        freed = weakref.ref(walk)
        del walk, step
        assert freed() is None
    finally:
        gc.enable()
