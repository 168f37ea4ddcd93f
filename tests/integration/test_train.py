import textwrap

import pytest
import torch
from torch import nn

import tgeval.training.train
from tgeval import SplitError, TemporalDataError
from tgeval.data.catalog import build_catalog
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.training.losses import bpr_loss
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch
from tests.helpers import StatelessModel
from tests.conftest import make_stream

NUM_NODES = 60


@pytest.fixture(scope="module")
def data():
    return generate_events(1500, NUM_NODES, seed=0)


def uniform(data):
    return UniformSampler(build_catalog(data, "all"))


class DotModel(StatelessModel):
    """Learnable and stateless: separate source / destination embeddings, dot-product score."""

    def __init__(self, num_nodes=NUM_NODES, dim=8, seed=0):
        super().__init__(num_nodes)
        g = torch.Generator().manual_seed(seed)
        self.src_emb = nn.Parameter(0.1 * torch.randn(num_nodes, dim, generator=g))
        self.dst_emb = nn.Parameter(0.1 * torch.randn(num_nodes, dim, generator=g))

    def score(self, src, dst, t):
        return (self.src_emb[src] * self.dst_emb[dst]).sum(-1)


class RecordingModel(DotModel):
    """Stateful: counts the events it was updated with (its own state methods cover the count)
    and logs every call (scratch: a record for the test, never read by the model)."""

    state_scratch = ("log",)

    def __init__(self, log):
        super().__init__()
        self.log = log
        self.seen = 0
        self.last_t = None

    def score(self, src, dst, t):
        self.log.append(("score", self.seen, int(t.min()), self.last_t))
        return super().score(src, dst, t)

    def update(self, batch):
        self.log.append(("update", batch.num_events, torch.is_grad_enabled()))
        self.seen += batch.num_events
        self.last_t = int(batch.t.max())

    def reset_state(self):
        self.log.append(("reset",))
        self.seen, self.last_t = 0, None

    def snapshot(self):
        return {"seen": self.seen, "last_t": self.last_t}

    def restore(self, state):
        self.seen, self.last_t = state["seen"], state["last_t"]


class RecordingSampler(UniformSampler):
    def __init__(self, catalog, log):
        super().__init__(catalog)
        self.log = log

    def sample(self, batch, num_negatives, generator=None):
        neg = super().sample(batch, num_negatives, generator)
        self.log.append(("sample", batch.position.clone(), neg.dst.clone()))
        return neg

    def observe(self, batch):
        self.log.append(("observe", batch.num_events))

    def reset_state(self):
        self.log.append(("sampler_reset",))


def recording_loss(model, log):
    def loss(pos, neg):
        log.append(("loss", model.seen))
        return bpr_loss(pos, neg)
    return loss


def test_loss_decreases_over_epochs(data):
    model = DotModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    sampler = uniform(data)
    stats = [train_epoch(model, data, recipe=Recipe(sampler, "bce", batch_size=100), optimizer=optimizer, epoch=e)
             for e in range(3)]
    losses = [s["loss"] for s in stats]
    assert losses[0] > losses[1] > losses[2]
    assert losses[2] < 0.8 * losses[0]
    assert stats[0]["num_batches"] == len(TimestampBatchLoader(data, 100))
    assert stats[0]["num_events"] == data.num_events and stats[0]["events_per_second"] > 0
    assert [s["seed"] for s in stats] == [0, 1, 2]  # seed + epoch
    assert "position" not in data.keys()  # input not modified


@pytest.mark.parametrize("loss", ["bpr", "sampled_softmax", "bce"])
def test_same_seed_same_parameters(data, loss):
    def run(seed):
        model = DotModel()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        sampler = uniform(data)
        for epoch in range(2):
            train_epoch(model, data, recipe=Recipe(sampler, loss, num_negatives=3, batch_size=150, seed=seed),
                        optimizer=optimizer, epoch=epoch)
        return model.state_dict()

    first, second, other = run(7), run(7), run(8)
    for name in first:
        assert torch.equal(first[name], second[name])
    assert not all(torch.equal(first[name], other[name]) for name in first)


def test_negatives_fresh_per_epoch_and_independent_of_batch_size(data):
    def draws(batch_size, epoch):
        log = []
        model = DotModel()
        train_epoch(model, data,
                    recipe=Recipe(RecordingSampler(build_catalog(data, "all"), log), "bpr", num_negatives=2,
                                  batch_size=batch_size),
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), epoch=epoch)
        rows = [(pos, neg) for kind, *rest in log if kind == "sample" for pos, neg in [rest]]
        position = torch.cat([pos for pos, _ in rows])
        assert torch.equal(position, torch.arange(data.num_events))  # global event index
        return torch.cat([neg for _, neg in rows])

    epoch0 = draws(100, 0)
    assert torch.equal(epoch0, draws(333, 0))  # keyed by (seed, event), not by batching
    assert (epoch0 != draws(100, 1)).float().mean() > 0.5  # a new epoch draws new negatives


def test_order_and_state_reset_at_each_epoch_start(data):
    split = chronological_split(data)
    start, end = split.val.start, split.val.end  # a range with history before it
    log = []
    model = RecordingModel(log)
    sampler = RecordingSampler(build_catalog(data, "all"), log)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    num_batches = len(TimestampBatchLoader(split.val.select(data), 50))
    for epoch in range(2):
        log.clear()
        stats = train_epoch(model, data, split.val, recipe=Recipe(sampler, recording_loss(model, log), batch_size=50),
                            optimizer=optimizer, epoch=epoch)
        assert stats["num_batches"] == num_batches and stats["num_events"] == end - start
        # state reset, then the events before the range replayed through update without gradients
        assert log[0] == ("reset",) and log[1] == ("sampler_reset",)
        warm = [entry for entry in log[2:] if entry[0] == "update"][: len(TimestampBatchLoader(data[:start], 50))]
        assert sum(entry[1] for entry in warm) == start and not any(entry[2] for entry in warm)
        body = log[log.index(next(e for e in log if e[0] == "sample")):]
        kinds = [entry[0] for entry in body]
        assert kinds == ["sample", "score", "loss", "update", "observe"] * num_batches
        seen = start
        for i in range(num_batches):
            _, position, _ = body[5 * i]
            _, at_score, t_min, last_t = body[5 * i + 1]
            _, at_loss = body[5 * i + 2]
            _, size, _ = body[5 * i + 3]
            # the state that scores a batch has seen exactly the strictly earlier events
            assert at_score == at_loss == seen == int(position[0])
            assert last_t is None or last_t < t_min
            seen += size
        assert seen == end


class MemoryModel(DotModel):
    """Memory (a registered buffer) computed by a learned module in ``update``; ``detach_state`` optional."""

    state_scratch = ("log",)

    def __init__(self, log, with_detach):
        super().__init__()
        self.log = log
        self.lin = nn.Linear(8, 8)
        self.register_buffer("memory", torch.zeros(NUM_NODES, 8), persistent=False)
        if with_detach:
            self.detach_state = self._detach

    def score(self, src, dst, t):
        return ((self.src_emb[src] + self.memory[src]) * self.dst_emb[dst]).sum(-1)

    def update(self, batch):
        self.log.append(("update", torch.is_grad_enabled()))
        self.memory = self.memory.index_put((batch.src,), torch.tanh(self.lin(self.dst_emb[batch.dst])))

    def reset_state(self):
        self.memory = torch.zeros(NUM_NODES, 8)

    def _detach(self):
        self.log.append(("detach",))
        self.memory = self.memory.detach()


@pytest.mark.parametrize("with_detach", [True, False])
def test_memory_detached_between_batches(data, with_detach):
    log = []
    model = MemoryModel(log, with_detach)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):  # a graph crossing a batch would fail the next backward
        stats = train_epoch(model, data, recipe=Recipe(uniform(data), "bpr", batch_size=100), optimizer=optimizer,
                            epoch=epoch)
        assert torch.isfinite(torch.tensor(stats["loss"]))
    assert model.memory.grad_fn is None and model.memory.abs().sum() > 0
    if with_detach:  # update with autograd, detach right after
        assert log[:4] == [("update", True), ("detach",), ("update", True), ("detach",)]
    else:  # no hook: update runs without autograd
        assert set(log) == {("update", False)}


def test_docstring_example_runs_and_matches_train_epoch():
    doc = tgeval.training.train.__doc__
    code = textwrap.dedent(doc[doc.rindex("::\n") + 3:])
    assert 20 <= len(code.strip().splitlines()) <= 45
    with torch.random.fork_rng():
        torch.manual_seed(123)
        namespace: dict = {}
        exec(compile(code, "tgeval.training.train docstring", "exec"), namespace)
    with torch.random.fork_rng():
        torch.manual_seed(123)
        model = namespace["DotModel"](100)
    data = namespace["data"]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    sampler = UniformSampler(build_catalog(data, "train", train_end=data.num_events))
    for epoch in range(3):
        train_epoch(model, data, recipe=Recipe(sampler, "bce", batch_size=200), optimizer=optimizer, epoch=epoch)
    torch.testing.assert_close(model.state_dict(), namespace["model"].state_dict())


def test_bad_arguments_are_named(data):
    model = DotModel()
    kwargs = dict(recipe=Recipe(uniform(data), "bpr"), optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    cut = int(torch.nonzero(data.t[1:] == data.t[:-1])[0, 0]) + 1  # inside a timestamp group
    with pytest.raises(SplitError, match="cuts a timestamp group"):
        train_epoch(model, data, (0, cut), **kwargs)
    with pytest.raises(SplitError, match="non-empty"):
        train_epoch(model, data, (5, 5), **kwargs)
    with pytest.raises(ValueError, match="num_negatives"):
        Recipe(uniform(data), "bpr", num_negatives=0)  # the recipe checks itself (tests/unit/training/test_recipe.py)
    with pytest.raises(TemporalDataError, match="num_nodes"):
        train_epoch(DotModel(num_nodes=10), data, **kwargs)
    unsorted = make_stream([0, 1], [1, 2], [5, 3])
    with pytest.raises(TemporalDataError, match="non-decreasing"):
        train_epoch(model, unsorted, **kwargs)


def test_training_refuses_whole_stream_samplers(data):
    from tgeval import LeakageError, chronological_split
    from tgeval.samplers import InductiveSampler

    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end)
    sampler = InductiveSampler(data, train_end=split.train.end, num_nodes=NUM_NODES, catalog=catalog)
    with pytest.raises(LeakageError, match="whole stream"):
        Recipe(sampler, "bce")  # when built, before any epoch
