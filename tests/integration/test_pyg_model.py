"""A TGN built from PyG's own modules (``PygTGN`` of docs/guide/pyg-models.md: ``TGNMemory``,
``LastNeighborLoader``, ``TransformerConv``) with no state code of its own (issue 11).

Its state is discovered: snapshots, restores and resets cover PyG's memory and message stores,
the neighbour loader's tables and counter and the model's growing buffers; the scoring guard
watches the same parts; the engine derives its blockwise all-entity scorer from ``embed`` and
``decode``; it checkpoints once registered.
"""

import pytest
import torch

import tgeval
from tgeval.eval.tuning import Tuning
from tgeval import LeakageError, Segment, TimestampBatchLoader, no_state_change
from tgeval.data.synthetic import generate_events
from tgeval.models import TGN, registry
from tgeval.models.base import pairwise_scorer
from tgeval.samplers import UniformSampler
from tgeval.stream.state import first_difference, state_parts
from tgeval.training.checkpoint import load_checkpoint, save_checkpoint
from tests.helpers import TableModel, readme_pyg_tgn, small_neural_model

PygTGN, PygTGNConfig = readme_pyg_tgn()
N = 30

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def stream():
    data = generate_events(900, N, seed=3)
    split = tgeval.chronological_split(data)
    catalog = tgeval.build_catalog(data, "train", train_end=split.train.end, num_nodes=N)
    return data, split, catalog


def build(seed=0):
    torch.manual_seed(seed)
    return PygTGN(PygTGNConfig(N, msg_dim=1, dim=8, num_neighbors=3))


def feed(model, events, batch_size=50):
    with torch.no_grad():
        for batch in TimestampBatchLoader(events, batch_size):
            model.update(batch)


def probe(model, data):
    """Scores of a fixed set of pairs (eval mode, no gradients)."""
    with torch.no_grad():
        return model.score(data.src[:40], data.dst[:40], data.t[:40])


def test_the_model_has_no_state_code_and_its_state_is_found():
    assert not {"snapshot", "restore", "reset_state"} & set(vars(PygTGN))
    found = {part.path: part.kind for part in state_parts(build())}
    assert found == {"": "buffers", "memory": "adapter", "neighbors": "adapter"}
    assert set(build().snapshot()) == set(found)


def test_snapshot_restore_and_reset_return_to_earlier_states(stream):
    data, split, _ = stream
    model = build()
    model.reset_state()  # PyG's loader leaves unused slots uninitialised at construction; a reset zeroes them
    initial = model.snapshot()  # before eval(): PyG's TGNMemory runs its GRU on every node on that switch
    model.eval()
    feed(model, data[:300])
    saved, before = model.snapshot(), probe(model, data)
    assert saved[""]["event_t"].numel() == 300
    feed(model, data[300:600])  # buffers grow, memory and loader change
    assert not torch.equal(probe(model, data), before)
    model.restore(saved)
    assert torch.equal(probe(model, data), before)
    assert first_difference(model.snapshot(), saved) is None
    model.reset_state()
    assert first_difference(model.snapshot(), initial) is None
    assert model.event_t.numel() == 0 and model.neighbors.cur_e_id == 0


def test_evaluate_with_the_guard_and_fixed_protocol_is_repeatable(stream):
    data, split, catalog = stream
    model = build().eval()
    feed(model, data[: split.test.start])
    saved = model.snapshot()
    runs = []
    for _ in range(2):
        model.restore(saved)
        result = tgeval.evaluate(model, data, split.test,
                                 tgeval.Protocol(replay="fixed", warm=False, num_negatives=5, batch_size=50),
                                 sampler=UniformSampler(catalog), catalog=catalog, tuning=Tuning(check_state=True))
        runs.append(result.metrics)
    assert runs[0] == runs[1]
    assert first_difference(model.snapshot(), saved) is None  # fixed protocol: nothing was added


def test_forward_is_score(stream):
    data, _, _ = stream
    model = build().eval()
    feed(model, data[:200])
    with torch.no_grad():
        assert torch.equal(model(data.src[:25], data.dst[:25], data.t[:25]),
                           model.score(data.src[:25], data.dst[:25], data.t[:25]))


class UpdatesMemoryWhileScoring(PygTGN):
    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        self.memory.update_state(src, dst, t, self.event_msg.new_zeros(src.numel(), 1))
        return out


class ForgetsNeighboursWhileScoring(PygTGN):
    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        self.neighbors.e_id[src] = -1
        return out


class CountsEventsWhileScoring(PygTGN):
    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        self.neighbors.cur_e_id += 1  # a Python value of PyG's loader
        return out


class GrowsBuffersWhileScoring(PygTGN):
    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        self.event_t = torch.cat([self.event_t, t])
        return out


@pytest.mark.parametrize("leaky", [UpdatesMemoryWhileScoring, ForgetsNeighboursWhileScoring,
                                   CountsEventsWhileScoring, GrowsBuffersWhileScoring])
def test_state_written_while_scoring_is_a_leak(stream, leaky):
    data, split, catalog = stream
    torch.manual_seed(0)
    model = leaky(PygTGNConfig(N, msg_dim=1, dim=8, num_neighbors=3))
    with pytest.raises(LeakageError, match="while scoring"):
        tgeval.evaluate(model, data, split.test, tgeval.Protocol(num_negatives=5, batch_size=50),
                        sampler=UniformSampler(catalog), catalog=catalog)


def test_writes_behind_the_version_counter_are_caught_by_the_deep_check(stream):
    data, _, _ = stream
    model = build().eval()
    feed(model, data[:200])
    with no_state_change(model):  # PyG's message stores and tables: covered by identity and versions
        model.score(data.src[:10], data.dst[:10], data.t[:10])
    with pytest.raises(LeakageError, match="memory"):
        with no_state_change(model, deep=True):
            model.memory.memory.data[0] += 1.0  # `.data` does not bump the version counter


def test_pyg_scratch_space_written_in_training_mode_is_not_state(stream):
    data, _, _ = stream
    model = build().train()
    feed(model, data[:200])
    with no_state_change(model, deep=True):  # TGNMemory and the loader write their `_assoc` maps
        model.score(data.src[:10], data.dst[:10], data.t[:10])


@pytest.mark.parametrize("broadcasting", [True, False])
def test_derived_candidate_scorer_equals_pairwise_scores(stream, monkeypatch, broadcasting):
    data, _, catalog = stream
    model = build().eval()
    if not broadcasting:  # a decoder that needs equal shapes gets expanded pairs
        model.decode = lambda z_src, z_dst: model.lin_out(torch.cat([z_src, z_dst], -1)[..., :8].relu()).squeeze(-1)
    feed(model, data[:300])
    src, t, candidates = data.src[300:340], data.t[300:340], catalog.items
    with torch.no_grad():
        pairwise = pairwise_scorer(model.score, src, t, candidates)(slice(None), slice(None))
        monkeypatch.setattr("tgeval.models.base.EMBEDDING_BLOCK", 64)  # many blocks
        derived = model.candidate_scorer(src, t, candidates)
        full = derived(slice(None), slice(None))
        part = derived(slice(5, 17), slice(3, 11))
    torch.testing.assert_close(full, pairwise, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(part, full[5:17, 3:11], rtol=1e-5, atol=1e-6)


def test_replay_then_evaluate_equals_a_warm_evaluation(stream):
    data, split, catalog = stream
    history = Segment("history", 0, split.test.start, None, None)  # the events a warm evaluation replays
    for model in (build(), small_neural_model(TGN, N)):
        warm = tgeval.evaluate(model.eval(), data, split.test, tgeval.Protocol(num_negatives=5, batch_size=50),
                               sampler=UniformSampler(catalog), catalog=catalog)
        model.reset_state()
        tgeval.replay(model, data, history, batch_size=50)
        continued = tgeval.evaluate(model, data, split.test,
                                    tgeval.Protocol(num_negatives=5, batch_size=50, warm=False),
                                    sampler=UniformSampler(catalog), catalog=catalog)
        assert continued.metrics == warm.metrics, type(model).__name__


def test_replay_keeps_the_mode_and_advances_a_sampler(stream):
    data, split, catalog = stream
    from tgeval.samplers import HistoricalSampler
    model, sampler = build().train(), HistoricalSampler(N, catalog=catalog)
    tgeval.replay(model, data, split.train, sampler=sampler)
    assert model.training and model.event_t.numel() == split.train.end
    reference = HistoricalSampler(N, catalog=catalog)
    reference.observe(data[: split.train.end])
    assert first_difference(sampler.snapshot(), reference.snapshot()) is None


def test_evaluating_a_training_mode_pyg_memory_from_its_state_warns(stream):
    data, split, catalog = stream
    with pytest.warns(UserWarning, match="TGNMemory"):
        tgeval.evaluate(build().train(), data, split.test, tgeval.Protocol(warm=False, batch_size=100), catalog=catalog)
    tgeval.evaluate(small_neural_model(TGN, N).train(), data, split.test, tgeval.Protocol(warm=False, batch_size=100),
                    catalog=catalog)
    table = TableModel(torch.rand(N, N))  # a model of one's own: its train() is TemporalLinkModel's, no warning
    tgeval.evaluate(table.train(), data, split.test, tgeval.Protocol(warm=False, batch_size=100), catalog=catalog)


def test_checkpoint_of_the_registered_model_restores_scores(stream, tmp_path):
    data, split, _ = stream
    registry.register("test-pyg-tgn", PygTGN, config=PygTGNConfig)
    try:
        model = build().eval()
        feed(model, data[:400])
        save_checkpoint(tmp_path / "m.pt", model, None, epoch=0, data=data)
        loaded = load_checkpoint(tmp_path / "m.pt", data=data).model
        assert type(loaded) is PygTGN and loaded.config == model.config
        assert torch.equal(probe(loaded, data), probe(model, data))
        assert first_difference(loaded.snapshot(), model.snapshot()) is None
    finally:
        registry.unregister("test-pyg-tgn")
