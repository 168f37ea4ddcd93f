"""The memory's time origin is state: set by the first update after a reset, snapshot, restored, reset
and saved in checkpoints; a snapshot written before the origin was state restores PyG's origin 0."""

import hashlib
import io

import pytest
import torch

from tgeval import TimestampBatchLoader, evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.data.synthetic import generate_events
from tgeval.eval.protocol import Protocol
from tgeval.training.checkpoint import load_checkpoint, save_checkpoint
from tests.helpers import small_neural_model

N = 12
T0 = 2**62 + 7

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def stream():
    data = generate_events(160, N, seed=1)
    data.t = data.t - data.t[0] + T0  # starts at T0
    return data


def fed(name, data, **options):
    torch.manual_seed(0)
    model = small_neural_model(name, N, **options)
    with torch.no_grad():
        for batch in TimestampBatchLoader(data, 20):
            model.update(batch)
    return model


def scores(model, data, start=120):
    t = data.t.tolist()
    while t[start - 1] == t[start]:
        start += 1
    result = evaluate(model, data, Segment("test", start, len(t), t[start], t[-1]), Protocol(warm=False, batch_size=10),
                      catalog=Catalog("custom", torch.arange(N), None, N))
    return result.records["score"]


@pytest.mark.parametrize("name", ["tgn", "dyrep"])
def test_the_origin_is_the_first_time_and_part_of_the_state(name, stream):
    model = fed(name, stream[:60])
    memory = model.memory
    assert memory.origin.tolist() == [T0]
    assert int(memory.last_update.min()) >= T0  # never-updated nodes start at the origin, not at 0
    state = model.snapshot()
    assert state["memory"]["origin"].tolist() == [T0]
    model.reset_state()
    assert memory.origin.numel() == 0 and memory.last_update.eq(0).all()
    model.restore(state)
    assert memory.origin.tolist() == [T0]
    again = fed(name, stream[:60])
    assert torch.equal(scores(model, stream), scores(again, stream))
    zero = fed(name, stream[:60], time_origin="zero")
    assert zero.memory.origin.tolist() == [0] and int(zero.memory.last_update.min()) == 0


@pytest.mark.parametrize("name", ["tgn", "dyrep"])
def test_a_snapshot_without_an_origin_keeps_time_from_zero(name, stream):
    """Such a snapshot (of a checkpoint written before the origin was state) measured time from 0: restored,
    the model continues exactly as one with ``time_origin="zero"``."""
    zero = fed(name, stream[:60], time_origin="zero")
    state = zero.snapshot()
    del state["memory"]["origin"]
    model = fed(name, stream[:0])
    model.restore(state)
    assert model.memory.origin.tolist() == [0]
    assert torch.equal(scores(model, stream), scores(zero, stream))


@pytest.mark.parametrize("name", ["tgn", "dyrep"])
def test_a_checkpoint_keeps_the_origin(name, stream, tmp_path):
    model = fed(name, stream[:100])
    save_checkpoint(tmp_path / "last.pt", model, None, epoch=0, data=stream)
    loaded = load_checkpoint(tmp_path / "last.pt", data=stream).model
    assert loaded.config.time_origin == "start" and loaded.memory.origin.tolist() == [T0]
    assert torch.equal(scores(model.eval(), stream), scores(loaded, stream))


@pytest.mark.parametrize("name", ["tgn", "dyrep"])
def test_a_checkpoint_from_before_the_origin_is_rebuilt_measuring_time_from_zero(name, stream, tmp_path):
    """Its config has no ``time_origin``: the model it was trained as measured time from 0."""
    zero = fed(name, stream[:100], time_origin="zero")
    save_checkpoint(tmp_path / "last.pt", zero, None, epoch=0, data=stream)
    header, body = (tmp_path / "last.pt").read_bytes().split(b"\n", 1)
    payload = torch.load(io.BytesIO(body), weights_only=True)
    del payload["model"]["config"]["time_origin"]
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()  # the header names the body's sha256
    (tmp_path / "old.pt").write_bytes(header.rsplit(b" ", 1)[0] + f" sha256:{hashlib.sha256(body).hexdigest()}\n".encode()
                                      + body)
    loaded = load_checkpoint(tmp_path / "old.pt", data=stream).model
    assert loaded.config.time_origin == "zero"
    assert torch.equal(scores(zero.eval(), stream), scores(loaded, stream))
