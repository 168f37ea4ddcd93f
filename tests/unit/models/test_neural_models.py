"""TGN, DyRep and GraphMixer: pure scoring, complete snapshots, the fast all-entity path, features.

Small widths (memory / embedding 12, 3 neighbours) keep every test fast on a CPU.
"""

import contextlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval import DataFormatError, LeakageError, ModelCapabilityError, TimestampBatchLoader, build_catalog, \
    chronological_split, deterministic, evaluate, no_state_change
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.data.synthetic import generate_events
from tgeval.models import DyRep, GraphMixer, message_dim, registry
from tgeval.models.base import pairwise_scorer
from tgeval.models.layers import LinkDecoder
from tgeval.models.neighbors import NeighborBuffer
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.stream.state import first_difference
from tgeval.training.train import Recipe, train_epoch
from tests.helpers import small_neural_model

N = 24
NAMES = registry.names("neural")


pytestmark = pytest.mark.usefixtures("one_thread")


def make(name, num_nodes=N, msg_dim=1, cls=None, **extra):
    """A small model of the named kind (``cls``: a subclass to build instead)."""
    return small_neural_model(name, num_nodes, msg_dim, subclass=cls, **extra)


def boundary(data, at):
    """First timestamp-group boundary at or after event ``at``."""
    t = data.t
    while 0 < at < data.num_events and t[at - 1] == t[at]:
        at += 1
    return at


def feed(model, data, batch_size=20):
    """Observe ``data`` through ``update`` in timestamp batches (no gradients)."""
    with torch.no_grad():
        for batch in TimestampBatchLoader(data, batch_size):
            model.update(batch)


@pytest.fixture(scope="module")
def stream():
    return generate_events(300, N, seed=0)


def queries(data, start=150, size=12):
    """``size`` events of ``data`` from ``start``: (src, dst, t)."""
    part = data[start:start + size]
    return part.src, part.dst, part.t


def warmed(name, data, upto=150, seed=0, **extra):
    torch.manual_seed(seed)
    model = make(name, **extra)
    feed(model, data[:upto])
    return model


def all_scores(model, src, dst, t, candidates):
    """Every scoring path: pairs, the expanded candidate pairs, and two chunks of the candidate scorer."""
    scorer = model.candidate_scorer(src, t, candidates)
    return [model.score(src, dst, t), pairwise_scorer(model.score, src, t, candidates)(slice(None), slice(None)),
            scorer(slice(1, 5), slice(0, 7)), scorer(slice(None), slice(3, None))]


def assert_all_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


# -- 1. scoring never mutates state ---------------------------------------------------------
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("name", NAMES)
def test_scoring_never_changes_state(name, training, stream):
    model = warmed(name, stream)
    state = model.snapshot()
    assert first_difference(make(name).snapshot(), state) is not None  # there is history to leak into
    model.train(training)
    src, dst, t = queries(stream)
    candidates = torch.arange(N)
    for deep in (None, True):
        with no_state_change(model, deep=deep):
            with torch.set_grad_enabled(training):
                out = all_scores(model, src, dst, t, candidates)
                if training:  # gradients through the lazily applied memory leave the state alone
                    out[0].sum().backward()
    assert first_difference(state, model.snapshot()) is None


def peeking(cls):
    """A subclass of the neural model ``cls`` that adds the scored pairs to its state while scoring."""

    def score(self, src, dst, t):
        out = cls.score(self, src, dst, t)
        self.ingest(src, dst, t, torch.zeros(src.numel(), self.msg_dim))
        return out
    return type(f"Peeking{cls.__name__}", (cls,), {"score": score})


class PeekingDyRep(DyRep):
    """Leaks only in the chunks of its candidate scorer: writes the candidates into the memory's
    message store (a registered buffer, replaced)."""

    def candidate_scorer(self, src, t, candidates):
        inner = super().candidate_scorer(src, t, candidates)

        def chunk(ev, cand):
            self.memory.pending_t = self.memory.pending_t + 1
            return inner(ev, cand)
        return chunk


class PeekingGraphMixer(GraphMixer):
    """Writes PyG's loader table in place (the neighbour buffer registers it)."""

    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        self.neighbors.loader.e_id[src, -1] = -1
        return out


#: leaks of their own for some models; every registered model gets the one of :func:`peeking`
LEAKY = {"dyrep": PeekingDyRep, "graphmixer": PeekingGraphMixer}


@pytest.mark.parametrize("name", NAMES)
def test_guard_catches_a_leaky_subclass(name, stream):
    leaky = LEAKY.get(name) or peeking(registry.entry(name).model_class())
    torch.manual_seed(0)
    model = make(name, cls=leaky)
    feed(model, stream[:150])
    src, dst, t = queries(stream)
    assert model.capabilities.state_in_registered_tensors  # the version check alone covers the whole state
    for deep in (False, True):
        with pytest.raises(LeakageError, match=f"{leaky.__name__} changed"):
            with no_state_change(model, deep=deep):
                all_scores(model, src, dst, t, torch.arange(N))
    # and through the replay engine, which guards every scoring step
    torch.manual_seed(0)
    model = make(name, cls=leaky)
    end = boundary(stream, 200)
    segment = Segment("test", boundary(stream, 150), end, None, None)
    catalog = Catalog("custom", torch.arange(N), None, N)
    with pytest.raises(LeakageError, match=f"{leaky.__name__} changed"):
        evaluate(model, stream[:end], segment, Protocol(batch_size=10), catalog=catalog)


@pytest.mark.parametrize("name", ["tgn", "graphmixer"])
def test_guard_sees_the_count_of_inserted_events(name, stream):
    model = warmed(name, stream, upto=60)
    with pytest.raises(LeakageError):
        with no_state_change(model):  # the default (version) check: the count is a registered tensor
            model.neighbors.inserted += 1


@pytest.mark.parametrize("name", NAMES)
def test_state_updates_do_not_depend_on_the_mode(name, stream):
    """The state is a function of the history and the parameters: updating in train mode (dropout
    on, e.g. DyRep's neighbourhood attention) stores the same state as in eval mode, so results
    never depend on the mode a caller left the model in."""
    torch.manual_seed(0)
    a = make(name)
    b = make(name)
    b.load_state_dict(a.state_dict())
    a.train()
    b.eval()
    feed(a, stream[:150])
    feed(b, stream[:150])
    assert first_difference(a.snapshot(), b.snapshot()) is None
    segment = Segment("test", boundary(stream, 150), boundary(stream, 200), None, None)
    catalog = Catalog("custom", torch.arange(N), None, N)
    results = []
    for model in (a, b):
        torch.manual_seed(int(model.training))  # different dropout draws, if any were used
        results.append(evaluate(model, stream[:segment.end], segment, Protocol(batch_size=10), catalog=catalog).metrics)
    assert results[0] == results[1]


# -- 2. snapshots -----------------------------------------------------------------------
def trained(name, data, seed=0, epochs=1):
    """A model after ``epochs`` of training on the first 120 events, then fed up to event 150."""
    torch.manual_seed(seed)
    model = make(name)
    sampler = UniformSampler(build_catalog(data, "all"))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    end = boundary(data, 120)
    for epoch in range(epochs):
        train_epoch(model, data[:end], recipe=Recipe(sampler, "bce", batch_size=20), optimizer=optimizer, epoch=epoch)
    feed(model, data[end:boundary(data, 150)])
    return model


def test_snapshot_holds_the_whole_state(stream):
    keys = {"memory", "last_update", "origin", "pending_node", "pending_partner", "pending_t", "pending_msg",
            "pending_from_src"}
    buffer_keys = {"neighbors", "e_id", "event_t", "event_msg", "num_inserted"}
    tgn, dyrep, mixer = (warmed(name, stream).snapshot() for name in ("tgn", "dyrep", "graphmixer"))
    assert set(tgn) == {"memory", "neighbors"} and set(tgn["memory"]) == keys
    assert set(tgn["neighbors"]) == buffer_keys and tgn["neighbors"]["event_t"].numel() == 150
    assert set(dyrep) == {"memory"} and set(dyrep["memory"]) == keys | {"neighbors"}
    assert set(dyrep["memory"]["neighbors"]) == buffer_keys
    assert set(mixer) == {"neighbors"} and set(mixer["neighbors"]) == buffer_keys
    # Only the last batch of each node is pending: the messages of the last batch's nodes.
    last = stream[140:150]
    assert set(tgn["memory"]["pending_node"].tolist()) >= set(torch.cat([last.src, last.dst]).tolist())


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_snapshot_score_update_restore_score_is_bit_identical(name, training, stream):
    model = trained(name, stream)
    model.train(training)
    src, dst, t = queries(stream, 150)
    candidates = torch.arange(N)

    def scores():
        torch.manual_seed(7)  # dropout draws in training mode
        with torch.no_grad():
            return all_scores(model, src, dst, t, candidates)

    state = model.snapshot()
    before = scores()
    feed(model, stream[150:230])
    moved = scores()
    assert not torch.equal(before[1], moved[1])  # the state matters
    model.restore(state)
    assert_all_equal(scores(), before)
    assert first_difference(model.snapshot(), state) is None
    model.reset_state()
    assert not torch.equal(scores()[1], before[1])
    model.restore(state)
    assert_all_equal(scores(), before)
    # the snapshot is a copy: the updates above did not write into it
    feed(model, stream[150:230])
    model.restore(state)
    assert_all_equal(scores(), before)
    # a fresh model with the same parameters restored from the snapshot scores the same
    other = make(name).train(training)
    other.load_state_dict(model.state_dict())
    other.restore(state)
    torch.manual_seed(7)
    with torch.no_grad():
        assert_all_equal(all_scores(other, src, dst, t, candidates), before)


@pytest.mark.parametrize("name", NAMES)
def test_restored_state_continues_like_the_original(name, stream):
    """After restore, further updates evolve exactly as from the original state (pending
    stores, event store and its capacity, neighbour slots all restored)."""
    model = trained(name, stream)
    model.eval()
    src, dst, t = queries(stream, 260)
    state = model.snapshot()
    feed(model, stream[150:250], batch_size=15)
    with torch.no_grad():
        reference = all_scores(model, src, dst, t, torch.arange(N))
    model.reset_state()
    feed(model, stream[:40])
    model.restore(state)
    feed(model, stream[150:250], batch_size=15)
    with torch.no_grad():
        assert_all_equal(all_scores(model, src, dst, t, torch.arange(N)), reference)


@pytest.mark.parametrize("name", NAMES)
def test_to_keeps_state_and_scores(name, stream):
    model = warmed(name, stream).eval()
    src, dst, t = queries(stream)
    with torch.no_grad():
        before = all_scores(model, src, dst, t, torch.arange(N))
    state = model.snapshot()
    assert model.to("cpu") is model and model.to(torch.device("cpu")) is model
    assert first_difference(model.snapshot(), state) is None
    with torch.no_grad():
        assert_all_equal(all_scores(model, src, dst, t, torch.arange(N)), before)
    feed(model, stream[150:170])
    model.restore(state)
    with torch.no_grad():
        assert_all_equal(all_scores(model, src, dst, t, torch.arange(N)), before)


def _state_devices(state):
    if isinstance(state, torch.Tensor):
        return {state.device.type}
    if isinstance(state, dict):
        return set().union(*(_state_devices(v) for v in state.values())) if state else set()
    return set()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", NAMES)
def test_to_cuda_moves_the_whole_state(name, stream):
    """A model moved to CUDA scores like on the CPU within the tie tolerance; a CPU snapshot
    restores onto it; with deterministic kernels, snapshot -> update -> restore is bit-identical
    on CUDA too (without them, atomics in scatter sums add run-to-run noise below the band)."""
    model = warmed(name, stream).eval()
    src, dst, t = queries(stream)
    with torch.no_grad():
        expected = all_scores(model, src, dst, t, torch.arange(N))
    state = model.snapshot()
    model.to("cuda")
    assert _state_devices(model.snapshot()) == {"cuda"}
    loaders = [part.loader for part in model.modules() if isinstance(part, NeighborBuffer)]
    assert loaders and all(loader.e_id.is_cuda and loader.neighbors.is_cuda for loader in loaders)
    cuda_queries = (src.cuda(), dst.cuda(), t.cuda(), torch.arange(N, device="cuda"))
    with deterministic():
        with torch.no_grad():
            got = all_scores(model, *cuda_queries)
            for a, b in zip(got, expected):
                torch.testing.assert_close(a.cpu(), b, rtol=0, atol=1e-5)
        feed(model, stream[150:200].cuda())
        model.restore(state)  # a CPU snapshot restores onto the CUDA model
        assert _state_devices(model.snapshot()) == {"cuda"}
        with torch.no_grad():
            again = all_scores(model, *cuda_queries)
        assert_all_equal(again, got)
    model.restore(state)
    with torch.no_grad():
        default = all_scores(model, *cuda_queries)
    for a, b in zip(default, got):
        assert bool(((a - b).abs() <= 1e-5 * b.abs().clamp(min=1.0)).all())


# -- 4. the fast all-entity path ------------------------------------------------------------
@pytest.fixture(scope="module")
def warmed_models(stream):
    return {name: warmed(name, stream).eval() for name in NAMES}


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 1000), num_events=st.integers(1, 9),
       num_candidates=st.integers(1, N), bounds=st.lists(st.integers(0, N), min_size=4, max_size=4),
       max_elements=st.sampled_from([1, 7, 100, 2**24]), embed_chunk=st.sampled_from([1, 5, 8192]))
def test_fast_path_equals_pairwise_score(warmed_models, stream, name, seed, num_events, num_candidates, bounds,
                                         max_elements, embed_chunk):
    model = warmed_models[name]
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (num_events,), generator=gen)
    t = torch.full((num_events,), int(stream.t[150]))
    candidates = torch.randperm(N, generator=gen)[:num_candidates]
    pairwise = pairwise_scorer(model.score, src, t, candidates)(slice(None), slice(None))
    old = model.decoder.max_elements
    model.decoder.max_elements = max_elements  # small values: combine() works in row blocks
    model.embed_chunk = embed_chunk  # small values: candidates are embedded in several calls
    try:
        with no_state_change(model, deep=True), torch.no_grad():
            full = model.candidate_scorer(src, t, candidates)(slice(None), slice(None))
            scorer = model.candidate_scorer(src, t, candidates)
            ev = slice(*sorted(b % (num_events + 1) for b in bounds[:2]))
            cand = slice(*sorted(b % (num_candidates + 1) for b in bounds[2:]))
            chunk = scorer(ev, cand)
    finally:
        model.decoder.max_elements = old
        del model.embed_chunk  # back to the class default
    assert full.shape == (num_events, num_candidates)
    torch.testing.assert_close(full, pairwise, rtol=0, atol=1e-5)
    assert chunk.shape == pairwise[ev, cand].shape
    torch.testing.assert_close(chunk, pairwise[ev, cand], rtol=0, atol=1e-5)


@pytest.mark.parametrize("max_elements", [1, 5, 16, 40, 2**24])
@pytest.mark.parametrize("rows", [0, 1, 3, 7])
def test_link_decoder_combine_in_row_blocks(max_elements, rows):
    torch.manual_seed(0)
    decoder = LinkDecoder(4)
    decoder.max_elements = max_elements  # 5 candidates x 4 hidden = 20 per row
    z_src, z_dst = torch.randn(rows, 4), torch.randn(5, 4)
    with torch.no_grad():
        combined = decoder.combine(decoder.source_terms(z_src), decoder.target_terms(z_dst))
        pairwise = decoder(z_src.repeat_interleave(5, 0), z_dst.repeat(rows, 1)).view(rows, 5)
    assert combined.shape == (rows, 5)
    torch.testing.assert_close(combined, pairwise, rtol=0, atol=1e-6)


# -- 7. features ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def featured():
    return generate_events(200, N, seed=3, feature_dim=4)


@pytest.mark.parametrize("name", NAMES)
def test_event_features_change_scores(name, featured):
    assert message_dim(featured) == 4
    torch.manual_seed(0)
    a = make(name, msg_dim=4)
    b = make(name, msg_dim=4)
    b.load_state_dict(a.state_dict())
    a.eval()
    b.eval()
    altered = TemporalData(src=featured.src, dst=featured.dst, t=featured.t, msg=featured.msg.flip(1) * 2.0)
    feed(a, featured[:150])
    feed(b, altered[:150])
    src, dst, t = queries(featured)
    with torch.no_grad():
        assert not torch.allclose(a.score(src, dst, t), b.score(src, dst, t), rtol=0, atol=1e-4)
        b.reset_state()
        feed(b, featured[:150])  # same features: same scores
        assert torch.equal(a.score(src, dst, t), b.score(src, dst, t))


@pytest.mark.parametrize("name", NAMES)
def test_feature_width_mismatch_is_a_data_format_error(name, featured):
    model = make(name, msg_dim=3)
    with pytest.raises(DataFormatError, match=r"expects \[10, 3\].*msg_dim=4"):
        model.update(featured[:10])
    bare = TemporalData(src=featured.src[:10], dst=featured.dst[:10], t=featured.t[:10])
    assert message_dim(bare) == 1
    model.update(bare)  # no features: zero messages of the model's width
    empty = TemporalData(src=bare.src, dst=bare.dst, t=bare.t, msg=torch.zeros(10, 0))
    model.update(empty)
    with pytest.raises(DataFormatError, match="event messages have shape"):
        model.update(TemporalData(src=bare.src, dst=bare.dst, t=bare.t, msg=torch.zeros(10)))
    with pytest.raises(ValueError, match="msg_dim must be >= 1"):
        make(name, msg_dim=0)


def test_graphmixer_node_features(stream):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, 5, generator=gen)
    torch.manual_seed(0)
    model = make("graphmixer", node_features=x)
    assert model.config.node_dim == 5 and model.describe()["node_dim"] == 5
    feed(model, stream[:150])
    model.eval()
    # a node without history (`quiet`), and a node `u` with a recent neighbour `v`
    history = stream[:150]
    seen = set(torch.cat([history.src, history.dst]).tolist())
    quiet = next(w for w in range(N - 1, -1, -1) if w not in seen)
    neighbor, _, _, valid = model.neighbors.recent(torch.arange(N))
    recent = [set(neighbor[w][valid[w]].tolist()) - {w} for w in range(N)]
    u = next(w for w in range(N) if recent[w])
    v = min(recent[u])
    # nodes that have neither u nor v among their recent neighbours, and are neither
    others = torch.tensor([w for w in range(N) if w not in {u, v} and not recent[w] & {u, v}])
    assert others.numel() > 0

    def embed(features):
        changed = make("graphmixer", node_features=x)
        changed.load_state_dict(model.state_dict())
        changed.node_features.copy_(features)
        changed.restore(model.snapshot())
        with torch.no_grad():
            return changed.eval().embed(torch.arange(N))

    base = embed(x)
    with torch.no_grad():
        assert torch.equal(base, model.embed(torch.arange(N)))
    bumped = x.clone()
    bumped[v] += 1.0  # a neighbour's features reach u through the node encoder
    out = embed(bumped)
    assert not torch.allclose(out[u], base[u]) and not torch.allclose(out[v], base[v])
    torch.testing.assert_close(out[others], base[others], rtol=0, atol=0)
    bumped = x.clone()
    bumped[quiet] += 1.0  # a node without history: only its own embedding changes
    out = embed(bumped)
    assert not torch.allclose(out[quiet], base[quiet])
    rest = torch.tensor([w for w in range(N) if w != quiet])
    torch.testing.assert_close(out[rest], base[rest], rtol=0, atol=0)
    with pytest.raises(ValueError, match="node_features must be"):
        make("graphmixer", node_features=torch.randn(N - 1, 5))


def test_graphmixer_copies_the_callers_node_features():
    x = torch.randn(N, 3)
    kept = x.clone()
    model = make("graphmixer", node_features=x)
    other = make("graphmixer", node_features=torch.zeros(N, 3))
    model.load_state_dict(other.state_dict())  # copies zeros into the model's buffer in place
    assert torch.equal(x, kept) and model.node_features.eq(0).all()


def test_dyrep_partner_embedding_at_the_event(stream):
    """DyRep(partner_embedding="event") (DyGLib's): the partner's attention embedding is computed
    when the event is observed and stored with the message, so a node's embedding no longer moves
    when its partner's neighbourhood changes later, as it does when the embedding is computed on
    applying the message; no gradient reaches the attention. The state contract holds: scoring
    changes nothing, the state does not depend on the mode, and a restored state scores alike
    (the evaluation cache: tests/integration/test_incremental_scoring.py)."""
    torch.manual_seed(0)
    event = make("dyrep", partner_embedding="event")
    applied = make("dyrep")
    applied.load_state_dict(event.state_dict())
    width = event.config.msg_dim + event.config.memory_dim
    u, v, w = 0, 1, 2
    first = TemporalData(src=torch.tensor([u]), dst=torch.tensor([v]), t=torch.tensor([10]))
    later = TemporalData(src=torch.tensor([v, w]), dst=torch.tensor([w, 3]), t=torch.tensor([20, 20]))  # v moves on
    moved = {}
    with torch.no_grad():
        for name, model in (("event", event), ("applied", applied)):
            feed(model, stream[:100])
            model.update(first)
            before = model.embed(torch.tensor([u]))
            model.update(later)  # u is not in it: its pending message from `first` is still to apply
            moved[name] = not torch.equal(before, model.embed(torch.tensor([u])))
    assert moved == {"event": False, "applied": True}
    assert event.memory.pending_msg.size(1) == width and applied.memory.pending_msg.size(1) == event.config.msg_dim

    model = warmed("dyrep", stream, partner_embedding="event")
    src, dst, t = queries(stream)
    with no_state_change(model, deep=True):
        model.train()
        model.score(src, dst, t).sum().backward()
    assert all(p.grad is None or not p.grad.any() for p in model.memory.attention.conv.parameters())
    other = make("dyrep", partner_embedding="event")
    other.load_state_dict(model.state_dict())
    model.reset_state()
    other.reset_state()
    model.train()
    other.eval()
    feed(model, stream[:150])
    feed(other, stream[:150])
    assert first_difference(model.snapshot(), other.snapshot()) is None
    model.eval()
    state = model.snapshot()
    with torch.no_grad():
        scores = model.score(src, dst, t)
        feed(model, stream[150:200])
        model.restore(state)
        assert first_difference(state, model.snapshot()) is None
        torch.testing.assert_close(model.score(src, dst, t), scores)


def test_graphmixer_query_time_gaps(stream):
    """time_gap="query" (DyGLib's): a token's time is the gap to the scored event's time. When both
    endpoints' latest interaction is the scored time itself, the gaps, and so the scores, are those
    of time_gap="latest"; later query times change the query scores only; a pair's score does not
    depend on the other pairs of the call; all-entity ranking is refused."""
    torch.manual_seed(0)
    latest = make("graphmixer").eval()
    query = make("graphmixer", time_gap="query").eval()
    query.load_state_dict(latest.state_dict())
    feed(latest, stream[:150])
    feed(query, stream[:150])
    _, t, _, valid = latest.neighbors.recent(torch.arange(N))
    last = torch.where(valid, t, -1).max(1).values
    # pairs whose endpoints share their latest interaction time s, scored at s
    pairs = [(u, v) for u in range(N) for v in range(N) if u != v and last[u] >= 0 and last[u] == last[v]]
    assert pairs
    src, dst = torch.tensor([u for u, _ in pairs]), torch.tensor([v for _, v in pairs])
    at = last[src]
    with torch.no_grad():
        torch.testing.assert_close(query.score(src, dst, at), latest.score(src, dst, at + 5), rtol=1e-6, atol=1e-6)
        later = at + 1000
        assert not torch.allclose(query.score(src, dst, later), query.score(src, dst, at))
        assert torch.equal(latest.score(src, dst, later), latest.score(src, dst, at))
        one = torch.stack([query.score(src[i:i + 1], dst[i:i + 1], later[i:i + 1]) for i in range(len(pairs))])
        torch.testing.assert_close(one.flatten(), query.score(src, dst, later), rtol=1e-6, atol=1e-6)
    catalog, test = Catalog("custom", torch.arange(N), None, N), chronological_split(stream).test
    assert latest.capabilities.ranks_all_entities and not query.capabilities.ranks_all_entities
    with pytest.raises(ModelCapabilityError, match="cannot rank a whole catalog.*catalog=None"):
        evaluate(query, stream, test, catalog=catalog)  # refused before any work
    with pytest.raises(ModelCapabilityError, match="time_gap='query'.*catalog=None"):
        query.embed(torch.arange(N))
    result = evaluate(query, stream, test, Protocol(num_negatives=3), sampler=UniformSampler(catalog))
    assert result.metrics["sampled"]["mrr"]["micro"] > 0
    with pytest.raises(ValueError, match=r"time_gap must be one of \['latest', 'query'\]"):
        make("graphmixer", time_gap="now")


def _interactions(events, node):
    """``(neighbour, t, msg)`` of every interaction of ``node`` in ``events`` (canonical order
    ``(t, src, dst, msg)``, an event of two roles once per role), most recent first."""
    order = sorted(range(events.num_events), key=lambda i: (int(events.t[i]), int(events.src[i]), int(events.dst[i]),
                                                            events.msg[i].tolist()))
    found = []
    for i in order:
        for centre, other in ((int(events.dst[i]), int(events.src[i])), (int(events.src[i]), int(events.dst[i]))):
            if centre == node:
                found.append((other, int(events.t[i]), events.msg[i]))
    return found[::-1]


def test_tgn_query_time_gaps_attend_to_the_interactions_before_the_query_time():
    """TGN with time_gap="query" (DyGLib's TGN): a node at time t attends to its K most recent
    interactions strictly before t, inside within_batch the batch's earlier ones too, with time
    gaps t - t_e and the memories as of the batch start: the attention built by hand from the raw
    events, one query at a time. A pair's score does not depend on the other pairs of the call."""
    data = generate_events(300, N, seed=0, feature_dim=2)
    torch.manual_seed(0)
    model = make("tgn", msg_dim=2, time_gap="query").eval()
    feed(model, data[:150])
    batch = data[150:200]
    k = model.config.num_neighbors
    ids = torch.cat([batch.src, batch.dst, torch.arange(N)])
    at = torch.cat([batch.t, batch.t, torch.full((N,), int(batch.t[0]))])
    everyone = torch.ones(N, dtype=torch.bool)
    with torch.no_grad():
        sizes = [int(v) for v in model.memory.message_sizes(everyone)]
        memory = model.memory._get_updated_memory(torch.arange(N), sizes)[0]  # as of the batch start
        for inside in (False, True):
            with model.within_batch(batch) if inside else contextlib.nullcontext():
                got = model.embed_at(ids, at)
            seen = data[:200] if inside else data[:150]  # the stored events, and the batch's
            for i in range(ids.numel()):
                recent = [e for e in _interactions(seen, int(ids[i])) if e[1] < int(at[i])][:k]
                x = torch.cat([memory, memory[ids[i]][None]])
                edges = torch.tensor([[v for v, _, _ in recent], [N] * len(recent)], dtype=torch.long).view(2, -1)
                gaps = torch.tensor([int(at[i]) - s for _, s, _ in recent], dtype=torch.float32)
                msg = torch.stack([m for _, _, m in recent]) if recent else torch.zeros(0, 2)
                edge_attr = torch.cat([model.gnn.time_enc(gaps), msg], dim=-1)
                expected = model.gnn.conv(x, edges, edge_attr)[N]
                torch.testing.assert_close(got[i], expected, rtol=1e-5, atol=1e-6)
        src, dst, t = batch.src, batch.dst, batch.t
        with model.within_batch(batch):
            whole = model.score(src, dst, t)
            one = torch.cat([model.score(src[i:i + 1], dst[i:i + 1], t[i:i + 1]) for i in range(src.numel())])
        torch.testing.assert_close(one, whole, rtol=1e-5, atol=1e-6)
    assert model.capabilities.batch_neighbors and not model.capabilities.exact_history and not model.capabilities.ranks_all_entities
    with pytest.raises(ModelCapabilityError, match="time_gap='query'.*catalog=None"):
        model.embed(torch.arange(N))
