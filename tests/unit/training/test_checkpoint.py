import json
import random

import numpy as np
import pytest
import torch

from tgeval.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from tgeval import Protocol, evaluate
from tgeval.errors import InputPathError, LeakageError, UntrainedModelWarning
from tgeval.data.catalog import build_catalog
from tgeval.data.split import Segment, chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.models import TGN, DyRep, EdgeBank, GraphMixer, message_dim, registry
from tgeval.samplers import UniformSampler
from tgeval.stream.state import first_difference
from tgeval.training.train import Recipe, train_epoch
from tests.helpers import small_neural_model

NUM_NODES = 40


@pytest.fixture(scope="module")
def data():
    return generate_events(600, NUM_NODES, seed=1, feature_dim=3)


def trained(cls, data, **extra):
    """A small model after one epoch on the training segment, its optimizer, and the split."""
    torch.manual_seed(0)
    model = small_neural_model(cls, NUM_NODES, message_dim(data), **extra)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    split = chronological_split(data)
    sampler = UniformSampler(build_catalog(data, "train", train_end=split.train.end))
    train_epoch(model, data, split.train, recipe=Recipe(sampler, "bce", batch_size=100), optimizer=optimizer)
    return model, optimizer, split


def assert_same_tensors(a, b):
    assert first_difference(a, b) is None, first_difference(a, b)


@pytest.mark.parametrize("cls", [TGN, DyRep, GraphMixer])
def test_round_trip_restores_parameters_optimizer_state_and_rng(cls, data, tmp_path):
    model, optimizer, split = trained(cls, data)
    path = tmp_path / "ckpt.pt"
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    digest = save_checkpoint(path, model, optimizer, epoch=3, data=data, early_stopping={"best_epoch": 2},
                             history=[{"epoch": 0, "loss": 0.5}], training={"loss": "bce", "seed": 0})
    expected_draws = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(99)
    random.seed(99)
    np.random.seed(99)

    ckpt = load_checkpoint(path, data=data)
    assert ckpt.name == cls.__name__.lower() and ckpt.model.config == model.config
    assert ckpt.sha256 == digest and ckpt.epoch == 3 and ckpt.early_stopping == {"best_epoch": 2}
    assert ckpt.history == [{"epoch": 0, "loss": 0.5}] and ckpt.training == {"loss": "bce", "seed": 0}
    assert not ckpt.model.training  # ready for evaluation: no dropout, also in updates
    assert_same_tensors(ckpt.model.state_dict(), model.state_dict())
    assert_same_tensors(ckpt.model.snapshot(), model.snapshot())  # memory, pending messages, neighbours
    restored = torch.optim.Adam(ckpt.model.parameters(), lr=0.01)
    restored.load_state_dict(ckpt.optimizer)
    assert_same_tensors(restored.state_dict(), optimizer.state_dict())
    model.eval()
    ckpt.model.eval()
    src, dst, t = data.src[-50:], data.dst[-50:], data.t[-50:]
    assert torch.equal(ckpt.model.score(src, dst, t), model.score(src, dst, t))
    ckpt.restore_rng()
    draws = (torch.rand(3), random.random(), np.random.rand())
    assert torch.equal(draws[0], expected_draws[0]) and draws[1:] == expected_draws[1:]


def test_graphmixer_node_features_round_trip(data, tmp_path):
    features = torch.randn(NUM_NODES, 5, generator=torch.Generator().manual_seed(0))
    model, optimizer, _ = trained(GraphMixer, data, node_features=features)
    save_checkpoint(tmp_path / "gm.pt", model, optimizer, epoch=0, data=data)
    loaded = load_checkpoint(tmp_path / "gm.pt").model
    assert torch.equal(loaded.node_features, features) and loaded.config.node_dim == 5
    assert_same_tensors(loaded.state_dict(), model.state_dict())


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    model, optimizer, _ = trained(TGN, data)
    path = tmp_path_factory.mktemp("ckpt") / "tgn.pt"
    save_checkpoint(path, model, optimizer, epoch=0, data=data)
    return path, model


def test_corrupted_files_raise_checkpoint_errors(saved, tmp_path):
    path, _ = saved
    content = path.read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(content[: len(content) // 2])
    with pytest.raises(CheckpointError, match="corrupted"):
        load_checkpoint(truncated)
    flipped = bytearray(content)
    flipped[-100] ^= 0xFF
    modified = tmp_path / "modified.pt"
    modified.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="corrupted.*train again"):
        load_checkpoint(modified)
    text = tmp_path / "notes.pt"
    text.write_text("hello\n")
    with pytest.raises(CheckpointError, match="not a tgeval checkpoint"):
        load_checkpoint(text)
    plain = tmp_path / "plain.pt"
    torch.save({"a": torch.ones(2)}, plain)
    with pytest.raises(CheckpointError, match="not a tgeval checkpoint"):
        load_checkpoint(plain)
    import hashlib

    body = b"not a torch archive"
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    with pytest.raises(CheckpointError, match="torch cannot read it"):
        load_checkpoint(garbage)
    newer = tmp_path / "newer.pt"
    newer.write_bytes(content.replace(b"TGEVAL-CHECKPOINT 2 ", b"TGEVAL-CHECKPOINT 9 ", 1))
    with pytest.raises(CheckpointError, match="format 9"):
        load_checkpoint(newer)
    with pytest.raises(InputPathError, match="checkpoint .*missing.pt' does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


@pytest.mark.parametrize("drop", ["parameters", "rng", "model.config", "everything"])
def test_a_valid_checksum_over_missing_keys_is_a_checkpoint_error(saved, tmp_path, drop):
    import hashlib
    import io

    path, _ = saved
    body = path.read_bytes().partition(b"\n")[2]
    payload = torch.load(io.BytesIO(body), weights_only=True)
    if drop == "model.config":
        del payload["model"]["config"]
    elif drop == "everything":
        payload = [payload]  # not even a dict
    else:
        del payload[drop]
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()
    edited = tmp_path / "edited.pt"
    edited.write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    with pytest.raises(CheckpointError, match="passed its checksum but lacks .*train again"):
        load_checkpoint(edited)


def _edit(edit, path, tmp_path):
    """``path``'s checkpoint with its payload edited by ``edit`` behind a valid checksum."""
    import hashlib
    import io

    payload = torch.load(io.BytesIO(path.read_bytes().partition(b"\n")[2]), weights_only=True)
    edit(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()
    edited = tmp_path / "edited.pt"
    edited.write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    return edited


EDITS = {
    "a wrong num_nodes": (lambda p: p["model"]["config"].update(num_nodes=5),
                          r"parameters or state do not fit the 'tgn' model its config describes \(num_nodes=5\): "
                          r".*size mismatch"),
    "a wrong parameter shape": (lambda p: p["parameters"].update({next(iter(p["parameters"])): torch.zeros(3, 3)}),
                                r"do not fit the 'tgn' model .*size mismatch for \w+.*torch.Size\(\[3, 3\]\)"),
    "an empty state": (lambda p: p.update(state={}), r"do not fit the 'tgn' model .*it holds no state of part"),
    "an RNG of another layout": (lambda p: p.update(rng=[{}]), r"but checkpoint.rng\[0\].torch is missing"),
    "an RNG that is text": (lambda p: p.update(rng="x"), r"but checkpoint.rng is text, expected a list"),
    "a config that is text": (lambda p: p["model"].update(config="x"), r"checkpoint.model.config is text"),
    "a history that is a number": (lambda p: p.update(history=5), r"checkpoint.history is a whole number"),
}


@pytest.mark.parametrize("how", list(EDITS))
def test_a_valid_checksum_over_values_that_do_not_fit_is_a_checkpoint_error(saved, tmp_path, how):
    """An edited payload (its checksum recomputed) is refused before anything of it is used, naming what does
    not fit and the fix: never a bare RuntimeError, KeyError or TypeError."""
    edit, message = EDITS[how]
    with pytest.raises(CheckpointError, match=message + r".*train again"):
        load_checkpoint(_edit(edit, saved[0], tmp_path))


def test_generator_states_that_torch_refuses_are_a_checkpoint_error(saved, tmp_path):
    def shorten(payload):
        payload["rng"][0]["torch"] = payload["rng"][0]["torch"][:10]
    checkpoint = load_checkpoint(_edit(shorten, saved[0], tmp_path))
    with pytest.raises(CheckpointError, match=r"holds generator states that cannot be restored .*Resume from another "
                                              r"checkpoint of the run"):
        checkpoint.restore_rng()


def test_other_data_model_or_registry_raise_checkpoint_errors(saved, data, monkeypatch):
    path, model = saved
    other = generate_events(600, NUM_NODES, seed=2, feature_dim=3)
    with pytest.raises(CheckpointError, match="trained on other data.*train a checkpoint on this data"):
        load_checkpoint(path, data=other)
    load_checkpoint(path, data=data)  # the same data passes
    different = small_neural_model(TGN, NUM_NODES, message_dim(data), memory_dim=4)
    with pytest.raises(CheckpointError, match="config"):
        load_checkpoint(path, model=different)
    monkeypatch.delitem(registry._REGISTRY, "tgn")
    with pytest.raises(CheckpointError, match="unknown model 'tgn'.*registry.register"):
        load_checkpoint(path)


def test_unregistered_models_cannot_be_saved_until_registered(data, tmp_path, monkeypatch):
    class MyTGN(TGN):
        pass

    model = small_neural_model(TGN, NUM_NODES, message_dim(data), subclass=MyTGN)
    with pytest.raises(CheckpointError, match="not a registered model.*registry.register"):
        save_checkpoint(tmp_path / "x.pt", model, None, epoch=0, data=data)
    monkeypatch.setattr(registry, "_REGISTRY", registry._REGISTRY.copy())
    registry.register("my_tgn", MyTGN, config=type(model.config))
    save_checkpoint(tmp_path / "x.pt", model, None, epoch=0, data=data)
    loaded = load_checkpoint(tmp_path / "x.pt")
    assert type(loaded.model) is MyTGN and loaded.optimizer is None
    with pytest.raises(ValueError, match="already registered"):
        registry.register("my_tgn", MyTGN, config=type(model.config))
    with pytest.raises(CheckpointError, match="'edgebank' is a heuristic"):
        save_checkpoint(tmp_path / "y.pt", EdgeBank(NUM_NODES), None, epoch=0, data=data)


def test_a_loaded_model_carries_its_checkpoint_record(data, tmp_path):
    """The checkpoint's provenance travels with its model (``checkpoint_record``, what a result of it records):
    the training specification, the data fingerprint and the training sampler's counts of the saved epoch."""
    model, optimizer, split = trained(TGN, data)
    path = tmp_path / "ckpt.pt"
    counts = {"num_events": split.train.num_events, "num_fallback_events": 7}
    spec = {"sampler": {"name": "historical"}, "loss": "bce", "num_negatives": 2, "epochs": 3, "seed": 0}
    save_checkpoint(path, model, optimizer, epoch=1, data=data, training=spec,
                    history=[{"epoch": 0, "sampler": {"num_events": 1}}, {"epoch": 1, "sampler": counts}])
    ckpt = load_checkpoint(path, data=data)
    record = ckpt.model.checkpoint_record
    assert record == ckpt.describe() and record["training"] == spec and record["sampler_counts"] == counts
    assert record["sha256"] == ckpt.sha256 and record["data_fingerprint"] == ckpt.data_fingerprint
    save_checkpoint(path, model, optimizer, epoch=1, data=data)  # no history: no counts, said as None
    assert load_checkpoint(path, model=small_neural_model(TGN, NUM_NODES, message_dim(data))).model.checkpoint_record[
        "sampler_counts"] is None


def test_evaluate_records_the_checkpoints_training(data, tmp_path):
    model, optimizer, split = trained(TGN, data)
    save_checkpoint(tmp_path / "c.pt", model, optimizer, epoch=0, data=data, training={"loss": "bce"},
                    trained_on=split.train)
    ckpt = load_checkpoint(tmp_path / "c.pt", data=data)
    sampler = UniformSampler(build_catalog(data, "train", train_end=split.train.end))
    result = evaluate(ckpt.model, data, split.test, Protocol(num_negatives=3), sampler=sampler)
    assert result.manifest["checkpoint"] == {**ckpt.model.checkpoint_record,
                                             "overlap": {"num_events": 0, "allowed": False}}
    assert result.manifest["checkpoint"]["training"] == {"loss": "bce"}
    assert ckpt.trained_on == json.loads(json.dumps(split.train.to_dict()))
    built = small_neural_model(TGN, NUM_NODES, message_dim(data))
    assert evaluate(built, data, split.test, Protocol(num_negatives=3), sampler=sampler).manifest["checkpoint"] is None


def test_a_checkpoint_on_its_training_events_is_refused_unless_allowed(data, tmp_path):
    """Trained on a 0.9 split and scored on the default test segment: its numbers measure training events."""
    model, optimizer, _ = trained(TGN, data)
    wide = chronological_split(data, (0.9, 0.05, 0.05))
    save_checkpoint(tmp_path / "c.pt", model, optimizer, epoch=0, data=data, trained_on=wide.train)
    save_checkpoint(tmp_path / "unknown.pt", model, optimizer, epoch=0, data=data)
    test = chronological_split(data).test
    sampler = UniformSampler(build_catalog(data, "all"))
    inside = int(((data.t[test.start:test.end] >= wide.train.t_first)
                  & (data.t[test.start:test.end] <= wide.train.t_last)).sum())  # brute force
    assert inside > 0
    loaded = load_checkpoint(tmp_path / "c.pt", data=data).model
    with pytest.raises(LeakageError, match=rf"c.pt was trained on events \[0, {wide.train.end}\) .* {inside} of the "
                                           rf"{test.num_events} events of the 'test' segment .*allow_trained_events"):
        evaluate(loaded, data, test, Protocol(num_negatives=3), sampler=sampler)
    allowed = evaluate(loaded, data, test, Protocol(num_negatives=3), sampler=sampler, allow_trained_events=True)
    assert allowed.manifest["checkpoint"]["overlap"] == {"num_events": inside, "allowed": True}
    after = Segment("late", wide.val.start, data.num_events, wide.val.t_first, wide.test.t_last)
    assert evaluate(loaded, data, after, Protocol(num_negatives=3), sampler=sampler).manifest["checkpoint"][
        "overlap"] == {"num_events": 0, "allowed": False}  # the segment right after its training: no event of it
    unknown = load_checkpoint(tmp_path / "unknown.pt", data=data).model
    with pytest.raises(LeakageError, match="does not record the events it was trained on"):
        evaluate(unknown, data, wide.test, Protocol(num_negatives=3), sampler=sampler)
    assert evaluate(unknown, data, wide.test, Protocol(num_negatives=3), sampler=sampler,
                    allow_trained_events=True).manifest["checkpoint"]["overlap"] == {"num_events": None,
                                                                                    "allowed": True}


def test_a_checkpoint_of_a_model_never_trained_warns_when_evaluated(data, tmp_path):
    torch.manual_seed(0)
    model = small_neural_model(TGN, NUM_NODES, message_dim(data))
    save_checkpoint(tmp_path / "c.pt", model, None, epoch=0, data=data)
    loaded = load_checkpoint(tmp_path / "c.pt", data=data).model
    assert loaded.as_built()
    split = chronological_split(data)
    sampler = UniformSampler(build_catalog(data, "train", train_end=split.train.end))
    with pytest.warns(UntrainedModelWarning, match="parameters unchanged since it was built"):
        evaluate(loaded, data, split.test, Protocol(num_negatives=3), sampler=sampler)
    trained_model, optimizer, _ = trained(TGN, data)
    save_checkpoint(tmp_path / "t.pt", trained_model, optimizer, epoch=0, data=data)
    assert not load_checkpoint(tmp_path / "t.pt", data=data).model.as_built()
