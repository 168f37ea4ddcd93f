"""history="exact": every event of a merged batch is scored from exactly the events before its
timestamp (brute force over the whole stream); "batch" scores from the batch's start; memory
models refuse "exact" and report their staleness; exact models warm up in one large batch."""

import dataclasses
from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.eval.tuning import Tuning
from tgeval.training.train import Recipe
from tgeval import chronological_split, evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.eval import engine
from tgeval.eval.engine import warm_up
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.models.heuristics import EdgeBank, NodeMemory, PairMembership, Popularity, PreferentialAttachment
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream
from tests.helpers import assert_matches_reference, small_neural_model
from tests.strategies import segment_from, streams

N = 10
CATALOG = Catalog("custom", torch.arange(N), None, N)


def _pairs_before(events, t, window=None, directed=True):
    pairs = set()
    for a, b, s in events:
        if s < t and (window is None or s >= t - window):
            pairs |= {(a, b)} if directed else {(a, b), (b, a)}
    return pairs


def _degree(events, t, node, roles=("src", "dst")):
    return sum((("src" in roles) and a == node) + (("dst" in roles) and b == node) for a, b, s in events if s < t)


#: the exact models and their brute-force score s(events, u, v, t) from every event before t
EXACT = {
    "edgebank": (lambda: EdgeBank(N), lambda ev, u, v, t: float((u, v) in _pairs_before(ev, t))),
    "edgebank-window": (lambda: EdgeBank(N, window=3), lambda ev, u, v, t: float((u, v) in _pairs_before(ev, t, 3))),
    "edgebank-undirected": (lambda: EdgeBank(N, directed=False),
                            lambda ev, u, v, t: float((u, v) in _pairs_before(ev, t, directed=False))),
    "membership": (lambda: PairMembership(N, beta=-1.0, bias=0.5),
                   lambda ev, u, v, t: 0.5 - float((u, v) in _pairs_before(ev, t))),
    "node-memory": (lambda: NodeMemory(N), lambda ev, u, v, t: float(_degree(ev, t, u) > 0 and _degree(ev, t, v) > 0)),
    "pa": (lambda: PreferentialAttachment(N), lambda ev, u, v, t: float(_degree(ev, t, u) * _degree(ev, t, v))),
    "popularity": (lambda: Popularity(N), lambda ev, u, v, t: float(_degree(ev, t, v, roles=("dst",)))),
}


@settings(max_examples=80, deadline=None)
@given(data=streams(min_events=6, max_events=36, max_nodes=8, max_time=8), name=st.sampled_from(sorted(EXACT)),
       start=st.integers(1, 20), batch_size=st.integers(1, 40), seed=st.integers(0, 20),
       step_events=st.sampled_from([0, 5, engine.EXACT_STEP_EVENTS]))
def test_exact_scores_equal_a_per_timestamp_brute_force(data, name, start, batch_size, seed, step_events):
    # step_events: 0 scores each batch in its own step; otherwise consecutive batches share steps
    make, reference = EXACT[name]
    segment = segment_from(data, min(start, data.num_events - 1))
    with mock.patch.object(engine, "EXACT_STEP_EVENTS", step_events):
        result = evaluate(make(), data, segment, Protocol(num_negatives=3, batch_size=batch_size, seed=seed),
                          sampler=UniformSampler(CATALOG, replace=True), catalog=CATALOG,
                          tuning=Tuning(candidate_budget=7))
    assert result.manifest["history"]["mode"] == "exact"
    if step_events == 0:
        assert result.performance["num_steps"] == result.performance["num_batches"]
    assert_matches_reference(result.records, data, reference, CATALOG.items, name)


def test_an_exact_pass_scores_consecutive_batches_in_one_step_unless_its_sampler_has_history():
    data = make_stream(torch.arange(120) % 7, (torch.arange(120) * 3) % 10, torch.arange(120) // 2)
    segment = Segment("test", 40, 120, 20, 60)
    protocol = Protocol(num_negatives=2, batch_size=6)

    def run(sampler, step_events=engine.EXACT_STEP_EVENTS, history=None):
        with mock.patch.object(engine, "EXACT_STEP_EVENTS", step_events):
            return evaluate(EdgeBank(N), data, segment, dataclasses.replace(protocol, history=history),
                            sampler=sampler, catalog=CATALOG)

    merged, alone = run(UniformSampler(CATALOG)), run(UniformSampler(CATALOG), step_events=0)
    assert merged.performance["num_batches"] == alone.performance["num_batches"] == alone.performance["num_steps"] == 14
    assert merged.performance["num_steps"] == 1  # 80 events <= EXACT_STEP_EVENTS
    assert run(UniformSampler(CATALOG), step_events=24).performance["num_steps"] == 4  # whole batches of 6
    for key in alone.records:
        assert torch.equal(merged.records[key], alone.records[key]), key  # "batch" keeps the protocol's batches
    assert run(_samplers()["historical"]()).performance["num_steps"] == 14  # it observes each batch before the next is drawn
    assert run(UniformSampler(CATALOG), history="batch").performance["num_steps"] == 14


def test_exact_and_batch_history_on_one_merged_batch():
    # (0, 1) at t=1 then again at t=2 in the same batch; (2, 3) at t=2 shares no node with an earlier event
    data = make_stream([5, 0, 0, 2], [6, 1, 1, 3], [0, 1, 2, 2])
    segment = Segment("test", 1, 4, 1, 2)
    run = lambda model, history: evaluate(model, data, segment,  # noqa: E731
                                          Protocol(history=history, batch_size=10), catalog=CATALOG)
    exact, batch = run(EdgeBank(N), None), run(EdgeBank(N), "batch")
    assert exact.records["score"].tolist() == [0.0, 1.0, 0.0]
    assert batch.records["score"].tolist() == [0.0, 0.0, 0.0]
    assert exact.manifest["history"] == {"mode": "exact", "same_batch_events": 1, "same_batch_fraction": 1 / 3,
                                         "stale_events": 0}
    assert batch.manifest["history"]["stale_events"] == 1
    assert evaluate(EdgeBank(N), data, segment, Protocol(replay="fixed"), catalog=CATALOG).manifest["history"] is None
    # a memory model is stale by design: "batch" by default, with the staleness counted, and "exact" is refused
    tgn = small_neural_model("tgn", N)
    assert not tgn.capabilities.exact_history
    assert run(tgn, None).manifest["history"] == {"mode": "batch", "same_batch_events": 1,
                                                  "same_batch_fraction": 1 / 3, "stale_events": 1}
    with pytest.raises(ValueError, match="cannot score from exact per-timestamp history.*history='batch'"):
        run(tgn, "exact")
    with pytest.raises(TypeError, match="exact_history is False"):
        with tgn.within_batch(data):
            pass
    with pytest.raises(ValueError, match="history must be one of"):
        run(EdgeBank(N), "timestamp")
    with pytest.raises(ValueError, match="applies to online replay"):
        evaluate(EdgeBank(N), data, segment, Protocol(replay="fixed", history="exact"), catalog=CATALOG)
    assert not Popularity(N, half_life=2.0).capabilities.exact_history and Popularity(N).capabilities.exact_history


@settings(max_examples=40, deadline=None)
@given(data=streams(min_events=2, max_events=40, max_nodes=8), name=st.sampled_from(sorted(EXACT)))
def test_exact_models_warm_up_in_one_batch_to_the_per_timestamp_state(data, name):
    make, _ = EXACT[name]
    warmed, fed = make(), make()
    warm_up(warmed, data, batch_size=1)  # fed in one large batch (exact_history)
    for batch in TimestampBatchLoader(data, batch_size=1):  # one timestamp group at a time
        fed.update(batch)
    for key, value in fed.snapshot().items():
        assert torch.equal(warmed.snapshot()[key], value), (name, key)


def _samplers():
    from tgeval.samplers import HistoricalSampler, MixtureSampler, PopularitySampler, SourceHistorySampler
    from tgeval.samplers.degree import TimeDegreeSampler

    return {"historical": lambda: HistoricalSampler(N, catalog=CATALOG),
            "source_history": lambda: SourceHistorySampler(N, catalog=CATALOG, directed=False),
            "degree_time": lambda: TimeDegreeSampler(N, catalog=CATALOG),
            "popularity": lambda: PopularitySampler(N, catalog=CATALOG),
            "mixture": lambda: MixtureSampler([HistoricalSampler(N, catalog=CATALOG), PopularitySampler(N, catalog=CATALOG)],
                                              [0.5, 0.5])}


@settings(max_examples=30, deadline=None)
@given(data=streams(min_events=2, max_events=40, max_nodes=8), name=st.sampled_from(sorted(_samplers())))
def test_batch_invariant_samplers_warm_up_in_one_batch_to_the_per_batch_history(data, name):
    make = _samplers()[name]
    warmed, fed = make(), make()
    assert warmed.observe_batch_invariant
    warm_up(EdgeBank(N), data, batch_size=1, sampler=warmed)
    for batch in TimestampBatchLoader(data, batch_size=1):
        fed.observe(batch)
    flat = lambda state: torch.cat([v.double().flatten() for v in _tensors(state)])  # noqa: E731
    assert torch.equal(flat(warmed.snapshot()), flat(fed.snapshot())), name


def _tensors(state):
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, dict):
        return [x for key in sorted(state) for x in _tensors(state[key])]
    if isinstance(state, (list, tuple)):
        return [x for item in state for x in _tensors(item)]
    return []


def test_decayed_popularity_is_not_batch_invariant():
    from tgeval.samplers import MixtureSampler, PopularitySampler

    assert not PopularitySampler(N, catalog=CATALOG, half_life=2.0).observe_batch_invariant
    assert not MixtureSampler([PopularitySampler(N, catalog=CATALOG, half_life=2.0)], [1.0]).observe_batch_invariant


def test_a_bulk_warm_up_leaves_edgebank_at_its_usual_capacity():
    class SmallBank(EdgeBank):  # small thresholds, so that a short stream is a bulk update
        min_capacity, bulk_events = 4, 8

    data = make_stream(torch.arange(60) % 5, torch.arange(60) % 3, torch.arange(60))  # 15 distinct pairs
    bulk = SmallBank(N)
    warm_up(bulk, data)  # one update of 60 events: reserves room for 60 new keys, then compacts
    assert bulk.keys.numel() == 2 * (15 + 1)
    assert torch.equal(bulk.snapshot()["keys"], torch.unique(data.src * N + data.dst))
    online = SmallBank(N)
    for batch in TimestampBatchLoader(data, batch_size=4):  # small batches: no compaction
        online.update(batch)
    assert torch.equal(online.snapshot()["keys"], bulk.snapshot()["keys"])


def _query_graphmixer(num_nodes=N, msg_dim=1):
    torch.manual_seed(0)
    return small_neural_model("graphmixer", num_nodes, msg_dim, time_gap="query").eval()


@settings(max_examples=25, deadline=None)
@given(data=streams(min_events=6, max_events=36, max_nodes=8, max_time=8), start=st.integers(1, 20),
       batch_size=st.integers(2, 40), seed=st.integers(0, 20))
def test_query_graphmixer_exact_history_equals_one_timestamp_group_per_batch(data, start, batch_size, seed):
    """GraphMixer with DyGLib's time gaps reads every interaction before the scored time, inside a
    merged batch too (as DyGLib's neighbour sampler): the same scores as the per-timestamp reference."""
    segment = segment_from(data, min(start, data.num_events - 1))
    sampler = UniformSampler(CATALOG, replace=True)
    model = _query_graphmixer()
    assert model.capabilities.exact_history and not small_neural_model("graphmixer", N).capabilities.exact_history
    exact = evaluate(model, data, segment, Protocol(num_negatives=3, batch_size=batch_size, seed=seed), sampler=sampler)
    reference = evaluate(model, data, segment, Protocol(num_negatives=3, batch_size=1, seed=seed, history="batch"),
                         sampler=sampler)
    assert exact.manifest["history"]["mode"] == "exact"
    for key in ("score", "neg_score"):
        torch.testing.assert_close(exact.records[key], reference.records[key], rtol=1e-5, atol=1e-6)
    stale = evaluate(model, data, segment, Protocol(num_negatives=3, batch_size=batch_size, seed=seed, history="batch"),
                     sampler=sampler)
    if stale.manifest["history"]["same_batch_events"] == 0:  # no history inside a batch: nothing to differ
        torch.testing.assert_close(stale.records["score"], exact.records["score"], rtol=1e-5, atol=1e-6)


def test_query_graphmixer_warms_up_in_one_batch_and_trains_from_exact_history():
    from tgeval.data.synthetic import generate_events
    from tgeval.training.train import train_epoch

    data = generate_events(400, N, seed=2, feature_dim=2)
    warmed, fed = _query_graphmixer(msg_dim=2), _query_graphmixer(msg_dim=2)
    warm_up(warmed, data, batch_size=1)  # one large batch (exact_history)
    for batch in TimestampBatchLoader(data, batch_size=1):
        fed.update(batch)
    for key, value in fed.snapshot()["neighbors"].items():
        assert torch.equal(torch.as_tensor(warmed.snapshot()["neighbors"][key]), torch.as_tensor(value)), key
    sampler, split = UniformSampler(CATALOG), chronological_split(data)
    trained = {}
    for history in ("exact", "batch"):
        model = _query_graphmixer(msg_dim=2).train()
        train_epoch(model, data, split.train, recipe=Recipe(sampler, "bce", batch_size=100, history=history),
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.5))
        trained[history] = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert not torch.equal(trained["exact"], trained["batch"])  # the batch's earlier events were read
    with pytest.raises(ValueError, match="cannot be trained from exact per-timestamp history"):
        tgn = small_neural_model("tgn", N)
        train_epoch(tgn, data, split.train, recipe=Recipe(sampler, "bce", history="exact"),
                    optimizer=torch.optim.SGD(tgn.parameters(), lr=0.1))


def test_tgn_with_query_time_gaps_reads_the_batch_as_neighbours_with_a_stale_memory():
    """history="neighbors" (DyGLib's TGN): a batch's earlier events are neighbours, the memory stays
    as of the batch start. The manifest counts those events as stale; with one timestamp group per
    batch it is the "batch" pass; training reads them too; every other model refuses it."""
    from tgeval.data.synthetic import generate_events
    from tgeval.training.train import train_epoch

    data = generate_events(400, N, seed=2, feature_dim=2)
    split, sampler = chronological_split(data), UniformSampler(CATALOG)
    torch.manual_seed(0)
    model = small_neural_model("tgn", N, 2, time_gap="query").eval()
    assert model.capabilities.batch_neighbors and not model.capabilities.exact_history and not model.capabilities.ranks_all_entities

    def run(history, batch_size=200, on=model):
        return evaluate(on, data, split.test, Protocol(num_negatives=3, batch_size=batch_size, history=history),
                        sampler=sampler)

    neighbors = run("neighbors")
    same = neighbors.manifest["history"]["same_batch_events"]
    assert same > 0 and neighbors.manifest["history"] == {
        "mode": "neighbors", "same_batch_events": same,
        "same_batch_fraction": same / (split.test.end - split.test.start), "stale_events": same}
    assert not torch.equal(neighbors.records["score"], run("batch").records["score"])  # the batch was read
    assert run(None).manifest["history"]["mode"] == "batch"  # not exact: "batch" unless asked
    for key in ("score", "neg_score"):  # nothing earlier inside a one-timestamp batch
        assert torch.equal(run("neighbors", batch_size=1).records[key], run("batch", batch_size=1).records[key])
    with pytest.raises(ValueError, match="cannot score from exact per-timestamp history"):
        run("exact")
    for other in (small_neural_model("tgn", N, 2), _query_graphmixer(msg_dim=2), EdgeBank(N)):
        with pytest.raises(ValueError, match="batch_neighbors is False"):
            run("neighbors", on=other)

    trained = {}
    for history in ("neighbors", "batch"):
        torch.manual_seed(0)
        tgn = small_neural_model("tgn", N, 2, time_gap="query")
        train_epoch(tgn, data, split.train, recipe=Recipe(sampler, "bce", batch_size=100, history=history),
                    optimizer=torch.optim.SGD(tgn.parameters(), lr=0.5))
        trained[history] = torch.cat([p.detach().flatten() for p in tgn.parameters()])
    assert not torch.equal(trained["neighbors"], trained["batch"])
    mixer = _query_graphmixer(msg_dim=2)
    with pytest.raises(ValueError, match="batch_neighbors is False"):
        train_epoch(mixer, data, split.train, recipe=Recipe(sampler, "bce", history="neighbors"),
                    optimizer=torch.optim.SGD(mixer.parameters(), lr=0.1))
