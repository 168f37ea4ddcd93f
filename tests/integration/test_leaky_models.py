"""A zoo of natural first models that keep history where tgeval's state methods cannot see it,
or write while scoring: each is stopped with a typed error naming the attribute, in evaluation
and in training; scratch declared as such, and the three documented fixes, are not."""

import functools
import logging
import warnings
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from torch_geometric.data import TemporalData
from torch_geometric.nn.models.tgn import LastNeighborLoader

from tgeval.eval.tuning import Tuning
from tgeval import HiddenStateError, LeakageError, Protocol, SplitError, chronological_split, evaluate
from tgeval.data.catalog import build_catalog
from tgeval.data.synthetic import generate_events
from tgeval.errors import ModelCapabilityError, UntrainedModelWarning
from tgeval.models import GraphMixer
from tgeval.models.base import TemporalLinkModel
from tgeval.samplers import UniformSampler
from tgeval.cli.program import main
from tgeval.samplers.inductive import InductiveSampler
from tgeval.training.fitting import Validation, fit
from tgeval.training.train import Recipe, check_training_sampler, train_epoch
from tests.helpers import registered_adapter, small_neural_model, snap_text

NUM_NODES = 30
K5 = Protocol(num_negatives=5)


@pytest.fixture(scope="module")
def data():
    return generate_events(600, NUM_NODES, seed=3)


@pytest.fixture(scope="module")
def split(data):
    return chronological_split(data)


def sampler_for(data, split):
    return UniformSampler(build_catalog(data, "train", train_end=split.train.end))


class Slotted:
    __slots__ = ("pairs",)

    def __init__(self):
        self.pairs = {}


class Counts(nn.Module):
    """A module with a buffer, held in a plain dict instead of an nn.ModuleDict."""

    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(NUM_NODES))


class History:
    """A plain object holding a history (no module, no adapter)."""

    def __init__(self):
        self.pairs = {}


# Where a first model keeps the pairs it has seen: (attribute named in the error, how to make it,
# how update writes a batch's pairs into it, how score reads a pair from it).
STORES = {
    "dict": ("seen", lambda m: setattr(m, "seen", {}),
             lambda m, s, d: m.seen.update(dict.fromkeys(zip(s, d), 1.0)),
             lambda m, s, d: m.seen.get((s, d), 0.0)),
    "set": ("seen", lambda m: setattr(m, "seen", set()),
            lambda m, s, d: m.seen.update(zip(s, d)),
            lambda m, s, d: float((s, d) in m.seen)),
    "list": ("seen", lambda m: setattr(m, "seen", []),
             lambda m, s, d: m.seen.extend(zip(s, d)),
             lambda m, s, d: float((s, d) in m.seen)),
    "numpy": ("seen", lambda m: setattr(m, "seen", np.zeros((NUM_NODES, NUM_NODES))),
              lambda m, s, d: m.seen.__setitem__((s, d), 1.0),
              lambda m, s, d: float(m.seen[s, d])),
    "tensor in place": ("seen", lambda m: setattr(m, "seen", torch.zeros(NUM_NODES, NUM_NODES)),
                        lambda m, s, d: m.seen.__setitem__((torch.tensor(s), torch.tensor(d)), 1.0),
                        lambda m, s, d: float(m.seen[s, d])),
    "tensor replaced": ("seen", lambda m: setattr(m, "seen", torch.zeros(NUM_NODES, NUM_NODES)),
                        lambda m, s, d: setattr(m, "seen", m.seen.index_put((torch.tensor(s), torch.tensor(d)),
                                                                            torch.tensor(1.0))),
                        lambda m, s, d: float(m.seen[s, d])),
    "number": ("count", lambda m: setattr(m, "count", 0),
               lambda m, s, d: setattr(m, "count", m.count + len(s)),
               lambda m, s, d: float(m.count > 100)),
    "plain object": ("history.pairs", lambda m: setattr(m, "history", History()),
                     lambda m, s, d: m.history.pairs.update(dict.fromkeys(zip(s, d), 1.0)),
                     lambda m, s, d: m.history.pairs.get((s, d), 0.0)),
    "submodule": ("inner.seen", lambda m: setattr(m.inner, "seen", {}),
                  lambda m, s, d: m.inner.seen.update(dict.fromkeys(zip(s, d), 1.0)),
                  lambda m, s, d: m.inner.seen.get((s, d), 0.0)),
    "TemporalData": ("events", lambda m: setattr(m, "events", TemporalData(src=torch.zeros(0, dtype=torch.long),
                                                                           dst=torch.zeros(0, dtype=torch.long))),
                     lambda m, s, d: setattr(m.events, "dst", torch.cat([m.events.dst, torch.tensor(d)])),
                     lambda m, s, d: float(bool((m.events.dst == d).any()))),
    "networkx graph": ("graph", lambda m: setattr(m, "graph", nx.Graph()),
                       lambda m, s, d: m.graph.add_edges_from(zip(s, d)),
                       lambda m, s, d: float(m.graph.has_edge(s, d))),
    "pandas": ("counts", lambda m: setattr(m, "counts", pd.Series(np.zeros(NUM_NODES))),
               lambda m, s, d: m.counts.__setitem__(d[0], m.counts[d[0]] + 1.0),
               lambda m, s, d: float(m.counts[d])),
    "slots object": ("slotted.pairs", lambda m: setattr(m, "slotted", Slotted()),
                     lambda m, s, d: m.slotted.pairs.update(dict.fromkeys(zip(s, d), 1.0)),
                     lambda m, s, d: m.slotted.pairs.get((s, d), 0.0)),
    "module in a dict": ("mems", lambda m: setattr(m, "mems", {"seen": Counts()}),
                         lambda m, s, d: m.mems["seen"].n.index_add_(0, torch.tensor(d), torch.ones(len(d))),
                         lambda m, s, d: float(m.mems["seen"].n[d] > 0)),
    "adapted object in a list": ("loaders", lambda m: setattr(m, "loaders", [LastNeighborLoader(NUM_NODES, 2)]),
                                 lambda m, s, d: m.loaders[0].insert(torch.tensor(s), torch.tensor(d)),
                                 lambda m, s, d: float(m.loaders[0].cur_e_id > 0)),
    "namespace in a list": ("log", lambda m: setattr(m, "log", [SimpleNamespace(n=0)]),
                            lambda m, s, d: setattr(m.log[0], "n", m.log[0].n + 1),
                            lambda m, s, d: float(m.log[0].n > 3)),
}


class PairModel(TemporalLinkModel):
    """``score = w * seen(src, dst) + b``: a learned weight over a history kept in ``store``;
    ``leak`` says where the history is written: in ``update`` (hidden state) or in ``score``."""

    def __init__(self, store, leak="update"):
        super().__init__(NUM_NODES)
        self.w, self.b = nn.Parameter(torch.ones(())), nn.Parameter(torch.zeros(()))
        self.inner = nn.Module()
        self.store, self.leak = store, leak
        STORES[store][1](self)

    def _write(self, src, dst):
        STORES[self.store][2](self, src.tolist(), dst.tolist())

    def score(self, src, dst, t):
        read = STORES[self.store][3]
        seen = torch.tensor([read(self, s, d) for s, d in zip(src.tolist(), dst.tolist())])
        if self.leak == "score":
            self._write(src, dst)
        return self.w * seen + self.b

    def update(self, batch):
        if self.leak == "update":
            self._write(batch.src, batch.dst)


def fresh(store, leak="update"):
    torch.manual_seed(0)
    return PairModel(store, leak)


def train_once(model, data, split):
    train_epoch(model, data, split.train, recipe=Recipe(sampler_for(data, split), "bce", batch_size=50),
                optimizer=torch.optim.SGD(model.parameters(), lr=0.1))


@pytest.mark.parametrize("store", sorted(STORES))
def test_history_outside_discovery_is_refused_in_evaluation(data, split, store):
    model = fresh(store)
    name = STORES[store][0]
    with pytest.raises(HiddenStateError, match=rf"PairModel\.update\(\) changed `{name}`") as raised:
        evaluate(model, data, split.test, K5, sampler=sampler_for(data, split))
    message = str(raised.value)  # the three fixes
    assert "register_buffer" in message and "register_state_adapter" in message
    assert "override snapshot(), restore() and reset_state()" in message


@pytest.mark.parametrize("store", ["dict", "tensor replaced", "plain object"])
def test_history_outside_discovery_is_refused_in_training(data, split, store):
    with pytest.raises(HiddenStateError, match=rf"changed `{STORES[store][0]}`"):
        train_once(fresh(store), data, split)


@pytest.mark.parametrize("store", sorted(STORES))
@pytest.mark.parametrize("check", [True, "deep"])
def test_writes_while_scoring_are_refused_in_evaluation(data, split, store, check):
    model = fresh(store, leak="score")
    with pytest.raises(LeakageError, match=rf"PairModel changed `{STORES[store][0]}` while scoring"):
        evaluate(model, data, split.test, Protocol(replay="fixed", num_negatives=5), sampler=sampler_for(data, split),
                 tuning=Tuning(check_state=check))


@pytest.mark.parametrize("store", sorted(STORES))
def test_writes_while_scoring_are_refused_in_training(data, split, store):
    with pytest.raises(LeakageError, match=rf"changed `{STORES[store][0]}` while computing a training batch"):
        train_once(fresh(store, leak="score"), data, split)


def test_a_reset_that_clears_hidden_state_is_refused(data, split):
    class Resetting(PairModel):
        def reset_state(self):
            self.seen.clear()

    model = Resetting("dict")
    model.seen[(0, 1)] = 1.0  # left over from an earlier run
    with pytest.raises(HiddenStateError, match=r"Resetting\.reset_state\(\) changed `seen`"):
        evaluate(model, data, split.test, K5, sampler=sampler_for(data, split))


# -- the three fixes, and scratch --------------------------------------------------------------
class BufferModel(PairModel):
    """Fix 1: the history in a registered buffer."""

    def __init__(self):
        super().__init__("tensor in place")
        seen = self.__dict__.pop("seen")
        self.register_buffer("seen", seen, persistent=False)


class Bank:
    def __init__(self):
        self.pairs = {}


class AdaptedModel(PairModel):
    """Fix 2: the history in an object whose class has a registered StateAdapter."""

    def __init__(self):
        super().__init__("plain object")
        self.history = Bank()


@pytest.fixture
def bank_adapter():
    with registered_adapter(Bank, view=lambda o: {"pairs": o.pairs},
                            load=lambda o, s: setattr(o, "pairs", dict(s["pairs"])), reset=lambda o: o.pairs.clear()):
        yield


class OwnStateModel(PairModel):
    """Fix 3: its own snapshot, restore and reset_state."""

    def __init__(self):
        super().__init__("dict")

    def snapshot(self):
        return {"seen": dict(self.seen)}

    def restore(self, state):
        self.seen = dict(state["seen"])

    def reset_state(self):
        self.seen = {}


@pytest.mark.parametrize("build", [BufferModel, AdaptedModel, OwnStateModel])
def test_each_fix_gives_the_same_metrics_twice(data, split, build, bank_adapter):
    model = build()
    train_once(model, data, split)
    first = evaluate(model, data, split.test, K5, sampler=sampler_for(data, split))
    again = evaluate(model, data, split.test, K5, sampler=sampler_for(data, split))
    assert first.metrics == again.metrics
    assert first.metrics["sampled"]["mrr"]["micro"] > 0.3  # the history is read: repeats rank first


class AssocModel(TemporalLinkModel):
    """PyG's example pattern: an ``assoc`` index vector written inside every lookup."""

    def __init__(self, registered, declared):
        super().__init__(NUM_NODES)
        if declared:
            self.state_scratch = ("assoc",)
        if registered:
            self.register_buffer("assoc", torch.empty(NUM_NODES, dtype=torch.long))
        else:
            self.assoc = torch.empty(NUM_NODES, dtype=torch.long)
        self.register_buffer("degree", torch.zeros(NUM_NODES))

    def score(self, src, dst, t):
        nodes = torch.cat([src, dst]).unique()
        self.assoc[nodes] = torch.arange(nodes.numel())
        return self.degree[nodes][self.assoc[dst]]

    def update(self, batch):
        self.degree.index_add_(0, batch.dst, torch.ones(batch.num_events))


@pytest.mark.parametrize("registered", [True, False])
def test_declared_scratch_is_not_state(data, split, registered):
    model = AssocModel(registered, declared=True)
    assert "assoc" not in model.snapshot().get("", {})
    for check in (True, "deep"):
        evaluate(model, data, split.test, K5, sampler=sampler_for(data, split), tuning=Tuning(check_state=check))
    with pytest.raises(LeakageError, match=r"AssocModel changed `assoc` while scoring.*state_scratch = \('assoc',\)"):
        evaluate(AssocModel(registered, declared=False), data, split.test, K5, sampler=sampler_for(data, split))


class MemoryInScore(TemporalLinkModel):
    """Updates its memory while scoring (the batch's own events), with gradients."""

    def __init__(self):
        super().__init__(NUM_NODES)
        self.lin = nn.Linear(1, 1)
        self.register_buffer("memory", torch.zeros(NUM_NODES, 1), persistent=False)

    def score(self, src, dst, t):
        out = self.lin(self.memory[src] + self.memory[dst]).squeeze(-1)
        self.memory = self.memory.index_add(0, dst, torch.sigmoid(out[:, None]))
        return out

    def update(self, batch):
        pass


def test_memory_written_while_scoring_stops_training_with_a_named_leak(data, split):
    with pytest.raises(LeakageError, match=r"MemoryInScore changed `memory` while computing a training batch"):
        train_once(MemoryInScore(), data, split)
    # unguarded, PyTorch's own error names neither the cause nor the fix
    model = MemoryInScore()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        train_epoch(model, data, split.train, recipe=Recipe(sampler_for(data, split), "bce", batch_size=50),
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), check_state=False)


class Normalised(TemporalLinkModel):
    """A BatchNorm in the scoring path: its running statistics are trained, not history."""

    def __init__(self):
        super().__init__(NUM_NODES)
        self.emb = nn.Embedding(NUM_NODES, 4)
        self.norm = nn.BatchNorm1d(4)
        self.register_buffer("degree", torch.zeros(NUM_NODES))

    def score(self, src, dst, t):
        return (self.norm(self.emb(src)) * self.norm(self.emb(dst))).sum(-1) + self.degree[dst]

    def update(self, batch):
        self.degree.index_add_(0, batch.dst, torch.ones(batch.num_events))


def test_normalisation_statistics_are_trained_not_state(data, split):
    model = Normalised()
    train_once(model, data, split)  # the guard lets training update them
    trained = model.norm.running_mean.clone()
    assert not torch.equal(trained, torch.zeros(4))
    assert "norm" not in model.snapshot()
    model.reset_state()
    assert torch.equal(model.norm.running_mean, trained) and model.degree.sum() == 0
    evaluate(model, data, split.test, K5, sampler=sampler_for(data, split), tuning=Tuning(check_state="deep"))
    assert torch.equal(model.norm.running_mean, trained)


# -- every suggested fix works, and typed errors -------------------------------------------------
def test_a_split_where_a_segment_belongs_is_a_typed_error(data, split):
    with pytest.raises(SplitError, match=r"got Split: a Split holds three segments.*split\.test"):
        evaluate(Normalised(), data, split, K5, sampler=sampler_for(data, split))
    with pytest.raises(SplitError, match=r"got tuple"):
        evaluate(Normalised(), data, (0, 10), K5, sampler=sampler_for(data, split))


def test_a_model_as_built_warns_once_per_evaluation(data, split):
    model = Normalised()
    with pytest.warns(UntrainedModelWarning, match="parameters unchanged since it was built") as caught:
        evaluate(model, data, split.test, K5, sampler=sampler_for(data, split))
    assert len([w for w in caught if issubclass(w.category, UntrainedModelWarning)]) == 1
    train_once(model, data, split)
    trained = Normalised()
    trained.load_state_dict(model.state_dict())  # loaded weights are not the ones it was built with
    for ready in (model, trained):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UntrainedModelWarning)
            evaluate(ready, data, split.test, K5, sampler=sampler_for(data, split))


def test_training_with_a_whole_stream_sampler_is_refused_everywhere_and_allowed_where_suggested(data, split,
                                                                                                  tmp_path, capsys):
    inductive = InductiveSampler(data, train_end=split.train.end,
                                 catalog=build_catalog(data, "train", train_end=split.train.end))
    with pytest.raises(LeakageError, match="allow_whole_stream=True"):
        check_training_sampler(inductive)  # the hand-written loop's check
    with pytest.raises(LeakageError, match="allow_whole_stream=True"):
        Recipe(inductive, "bce")  # the recipe of fit and train_epoch, when built
    model = Normalised()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    done = fit(model, data, split, recipe=Recipe(inductive, "bce", allow_whole_stream=True), optimizer=optimizer,
               epochs=1)  # the suggested fix works where it is suggested
    assert done["training"]["allow_whole_stream"] is True and done["epochs_run"] == 1
    path = tmp_path / "events.txt"
    path.write_text(snap_text(data))
    command = ["train", str(path), "--format", "snap", "--sampler", "inductive", "--epochs", "1"]
    assert main(command) == 2
    assert "--allow-whole-stream" in capsys.readouterr().err
    assert main([*command, "--allow-whole-stream", "--out", str(tmp_path / "r.json")]) == 0


def test_fit_refuses_all_entity_validation_of_a_pair_dependent_model_with_a_typed_error(data, split):
    model = small_neural_model(GraphMixer, NUM_NODES, time_gap="query")
    with pytest.raises(ModelCapabilityError, match="cannot rank a whole catalog"):
        fit(model, data, split, recipe=Recipe(sampler_for(data, split), "bce"), epochs=1,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            validation=Validation("all_entity_mrr", catalog=build_catalog(data, "train", train_end=split.train.end)))


class Harmless(TemporalLinkModel):
    """Plain attributes that are not history: a NaN constant, a cached property, a logger, a
    doubly linked window, read-only features, a lazy layer, spectral normalisation, a generator."""

    def __init__(self):
        super().__init__(NUM_NODES)
        self.fill = float("nan")
        self.log = logging.getLogger("tgeval.tests.harmless")
        nodes = [SimpleNamespace(v=i, prev=None, next=None) for i in range(16)]
        for a, b in zip(nodes, nodes[1:]):
            a.next, b.prev = b, a
        self.window = nodes
        self.features = np.random.default_rng(0).random((NUM_NODES, 2))
        self.features.setflags(write=False)
        self.lazy = nn.LazyLinear(1)
        self.spectral = nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2))
        self.old_spectral = nn.utils.spectral_norm(nn.Linear(2, 2))
        self.generator = torch.Generator().manual_seed(0)
        self.register_buffer("degree", torch.zeros(NUM_NODES))

    @functools.cached_property
    def feature_tensor(self):
        return torch.tensor(self.features, dtype=torch.float32)

    def score(self, src, dst, t):
        x = self.feature_tensor[dst]
        self.log.debug("scoring %d pairs", src.numel())
        h = self.spectral(x) + self.old_spectral(x)
        return self.lazy(h).squeeze(-1) + self.degree[dst]

    def update(self, batch):
        self.degree.index_add_(0, batch.dst, torch.ones(batch.num_events))


def test_harmless_attributes_are_not_refused(data, split):
    model = Harmless()
    assert model.as_built()  # built with a lazy layer (reading its parameters used to fail here)
    train_once(model, data, split)
    assert "spectral" not in str(sorted(model.snapshot()))  # trained buffers are not state
    for check in (True, "deep"):
        evaluate(model, data, split.test, K5, sampler=sampler_for(data, split), tuning=Tuning(check_state=check))


def test_scratch_names_are_a_tuple(data, split):
    model = AssocModel(True, declared=False)
    model.state_scratch = "assoc"
    with pytest.raises(TypeError, match=r"state_scratch = \('assoc',\)"):
        model.snapshot()
