"""Models keep time in the stream's kind and round only deltas (issue 13, part 3): float time is
stored exactly (never truncated to int64), integer time stays exact beyond 2^53."""

import pytest
import torch

from tgeval.data.synthetic import generate_events
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.models.heuristics import EdgeBank, Popularity
from tests.helpers import small_neural_model

N = 20
BIG = 2**60


@pytest.fixture(scope="module")
def stream():
    data = generate_events(200, N, seed=3)
    data.msg = torch.randn(200, 1, generator=torch.Generator().manual_seed(0))
    return data


def with_times(data, t):
    out = data.clone()
    out.t = t
    return out


def scores_after(model, data, upto=150):
    """All-candidate scores of the events ``[upto, upto + 10)`` after feeding ``[0, upto)``."""
    torch.manual_seed(0)
    model.eval()
    with torch.no_grad():
        for batch in TimestampBatchLoader(data[:upto], 20):
            model.update(batch)
        part = data[upto:upto + 10]
        return model.candidate_scorer(part.src, part.t, torch.arange(N))(slice(None), slice(None))


@pytest.mark.parametrize("name", ["tgn", "dyrep", "graphmixer"])
def test_float_time_is_stored_exactly(name, stream):
    fractional = with_times(stream, stream.t.double() / 4)  # quarter steps: truncation would merge them
    torch.manual_seed(0)
    model = small_neural_model(name, N)
    scores_after(model, fractional)
    fed = fractional[:150]
    if name != "graphmixer":  # memory: each node's last update is the time of its latest event
        latest = torch.zeros(N, dtype=torch.float64)
        for s, d, t in zip(fed.src.tolist(), fed.dst.tolist(), fed.t.tolist()):
            latest[s], latest[d] = max(latest[s], t), max(latest[d], t)
        pending = torch.zeros(N, dtype=torch.bool)  # the latest batch's events are still pending messages
        pending[model.memory.pending_node] = True
        assert torch.equal(model.memory.last_update[~pending], latest[~pending])
        assert model.memory.pending_t.dtype == torch.float64
    if name != "dyrep":
        assert torch.equal(model.neighbors.event_t[:150], fed.t)


@pytest.mark.parametrize("name", ["tgn", "dyrep", "graphmixer"])
def test_integral_float_time_scores_as_integer_time(name, stream):
    torch.manual_seed(1)
    model = small_neural_model(name, N)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    as_int = scores_after(model, stream)
    model.load_state_dict(state)
    model.reset_state()
    as_float = scores_after(model, with_times(stream, stream.t.double()))
    assert torch.equal(as_int, as_float)
    model.load_state_dict(state)
    model.reset_state()
    quarter = scores_after(model, with_times(stream, stream.t.double() / 4))
    assert not torch.equal(quarter, as_int)  # the deltas reached the model


@pytest.mark.parametrize("make", [lambda: small_neural_model("graphmixer", N), lambda: Popularity(N, half_life=7.0),
                                  lambda: EdgeBank(N, window=5)], ids=["graphmixer", "popularity", "edgebank"])
def test_integer_time_beyond_2_53_is_exact(make, stream):
    """These models see time only through differences: shifting every time by 2^60 changes
    nothing when deltas are taken in int64 (float64 rounds 2^60 + t to multiples of 256)."""
    torch.manual_seed(2)
    model = make()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    base = scores_after(model, stream)
    model.load_state_dict(state)
    model.reset_state()
    shifted = scores_after(model, with_times(stream, stream.t + BIG))
    assert torch.equal(base, shifted)
