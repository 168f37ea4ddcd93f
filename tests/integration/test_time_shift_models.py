"""Time-shift invariance of the neural reference models (TGN, DyRep, GraphMixer).

Shifting every int64 timestamp of a stream by any int64-safe offset (2^62, the extremes of the
int64 range, negative offsets) changes no score, rank, metric, training loss or trained
parameter, **bit for bit**: every time a model encodes is a difference of two event times, or of
an event time and the memory's origin (the stream's start), taken in int64, so the floats that
enter the models are the same numbers whatever the offset. ``time_origin="zero"`` (PyG's recipe:
the first message of a node encodes its absolute time) is kept as an option and does move with the
calendar.
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval import evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment, chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.models import registry
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch
from tests.helpers import small_neural_model
from tests.strategies import segment_from, streams

N = 8
MAX_T = 12
LOW, HIGH = -2**63, 2**63 - 1
NAMES = registry.names("neural")
MEMORY_MODELS = ["tgn", "dyrep"]  # GraphMixer has no memory, no origin: only differences of event times
#: int64-safe offsets of times in [0, MAX_T]: 2^62, the extremes and everything between
offsets = st.one_of(st.sampled_from([2**62, 2**62 + 1, HIGH - MAX_T, LOW, -2**62]), st.integers(LOW, HIGH - MAX_T))

pytestmark = pytest.mark.usefixtures("one_thread")


def shifted(data: TemporalData, offset: int) -> TemporalData:
    out = data.clone()
    out.t = data.t + offset
    return out


def make(name, num_nodes=N, seed=0, **options):
    torch.manual_seed(seed)
    return small_neural_model(name, num_nodes, **options)


def run(name, data, start, offset, protocol="online", batch_size=3, model_seed=0, **options):
    """Metrics and per-event records of a fresh model on the events from ``start`` on: sampled
    (3 uniform negatives) and, for a model that ranks all entities, all-entity."""
    data = shifted(data, offset)
    t = data.t.tolist()
    model = make(name, seed=model_seed, **options)
    catalog = Catalog("custom", torch.arange(N), None, N)
    result = evaluate(model, data, Segment("test", start, len(t), t[start], t[-1]),
                      Protocol(replay=protocol, num_negatives=3, batch_size=batch_size, seed=1),
                      sampler=UniformSampler(catalog), catalog=catalog if model.capabilities.ranks_all_entities else None)
    return result.metrics, {key: value for key, value in result.records.items() if key != "t"}


def boundary(data, at):
    """First timestamp-group boundary at or after event ``at`` (``at`` < the number of events)."""
    t = data.t.tolist()
    while t[at - 1] == t[at]:
        at += 1
    return at


def assert_same(a, b):
    assert a[0] == b[0]
    assert a[1].keys() == b[1].keys()
    for key in a[1]:
        assert torch.equal(a[1][key], b[1][key]), key


@settings(max_examples=40, deadline=None)
@given(data=streams(min_events=4, max_events=30, max_nodes=N, max_time=MAX_T), name=st.sampled_from(NAMES),
       start=st.integers(1, 20), offset=offsets, batch_size=st.integers(1, 8),
       protocol=st.sampled_from(["online", "fixed"]), model_seed=st.integers(0, 3))
def test_scores_and_metrics_do_not_move_with_a_time_shift(data, name, start, offset, batch_size, protocol,
                                                          model_seed):
    """The same scores, ranks and metrics, bit for bit, at every offset (with PyG's origin 0 the
    memory models' first messages encoded absolute times: TGN's validation MRR on UCI moved)."""
    start = segment_from(data, start).start
    assert_same(run(name, data, start, 0, protocol, batch_size, model_seed),
                run(name, data, start, offset, protocol, batch_size, model_seed))


@pytest.mark.parametrize("name", MEMORY_MODELS)
@pytest.mark.parametrize("time_gap", ["latest", "query"])
def test_query_time_gaps_do_not_move_with_a_time_shift(name, time_gap):
    """TGN's DyGLib attention (``time_gap="query"``) and DyRep's stored partner embeddings, sampled metrics."""
    options = {"time_gap": time_gap} if name == "tgn" else {"partner_embedding": "event" if time_gap == "query"
                                                                              else "applied"}
    data = generate_events(120, N, seed=2)
    start = boundary(data, 60)
    assert_same(run(name, data, start, 0, batch_size=10, **options),
                run(name, data, start, 2**62, batch_size=10, **options))


@pytest.mark.parametrize("name", MEMORY_MODELS)
def test_pyg_origin_zero_moves_with_the_calendar_and_start_is_it_from_the_first_time(name):
    """``time_origin="zero"`` is PyG's recipe, so its scores depend on the offset; ``"start"`` equals
    ``"zero"`` on the stream shifted to begin at time 0 (the clock starts at the first time)."""
    data = generate_events(120, N, seed=3)
    data.t = data.t + 1_000  # a stream that does not start at 0
    start = boundary(data, 60)
    zero = run(name, data, start, 0, batch_size=10, time_origin="zero")
    moved = run(name, data, start, 2**62, batch_size=10, time_origin="zero")
    assert not torch.equal(zero[1]["score"], moved[1]["score"])
    assert_same(run(name, data, start, 0, batch_size=10),
                run(name, data, start, -int(data.t[0]), batch_size=10, time_origin="zero"))


def trained(name, data, offset, epochs=1):
    """``(losses, parameters)`` of a model trained ``epochs`` epochs on ``data`` shifted by ``offset``."""
    data = shifted(data, offset)
    split = chronological_split(data)
    model = make(name, num_nodes=30, seed=7)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    catalog = Catalog("custom", torch.arange(30), None, 30)
    recipe = Recipe(UniformSampler(catalog), "bce", batch_size=25, seed=5)
    losses = [train_epoch(model, data, split.train, recipe=recipe, optimizer=optimizer, epoch=epoch)["loss"]
              for epoch in range(epochs)]
    return losses, {key: p.detach() for key, p in model.named_parameters()}


@pytest.mark.parametrize("offset", [2**62, -2**62, HIGH - 10**6])
@pytest.mark.parametrize("name", NAMES)
def test_training_does_not_move_with_a_time_shift(name, offset):
    """One epoch (then a second, from the state the first left) on the shifted stream: the same losses and
    parameters, bit for bit."""
    data = generate_events(300, 30, seed=4)
    assert int(data.t[-1]) < 10**6
    losses, parameters = trained(name, data, 0, epochs=2)
    shifted_losses, shifted_parameters = trained(name, data, offset, epochs=2)
    assert losses == shifted_losses
    assert parameters.keys() == shifted_parameters.keys()
    for key in parameters:
        assert torch.equal(parameters[key], shifted_parameters[key]), key
