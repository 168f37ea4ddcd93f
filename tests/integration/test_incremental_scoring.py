"""Incremental all-entity scoring of the neural models (issue 10).

In evaluation, TGN, DyRep and GraphMixer keep every node's embedding and the catalog's decoder
terms across batches and recompute only the nodes an update marked dirty. Properties:

* incremental scores equal a full recomputation (the cache dropped before every batch) within
  the tie tolerance, over random streams, batch sizes and catalogs;
* the cache is part of no snapshot and is dropped by ``reset_state``, ``restore``, ``.to()``,
  a parameter change (an optimizer step) and a state buffer written behind its back.
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval import TimestampBatchLoader
from tgeval.data.synthetic import generate_events
from tgeval.eval.metrics import tie_band
from tgeval.stream.state import first_difference
from tests.helpers import small_neural_model

N = 20
NAMES = ["tgn", "dyrep", "graphmixer"]

pytestmark = pytest.mark.usefixtures("one_thread")


def _scores(model, batch, candidates):
    """The engine's two scoring calls of a batch: pairs, then the candidate scorer over the catalog."""
    with torch.no_grad():
        pairs = model.score(batch.src, batch.dst, batch.t)
        block = model.candidate_scorer(batch.src, batch.t, candidates)(slice(None), slice(None))
    return pairs, block


def _assert_within_band(got, expected, tolerance):
    band = tie_band(expected, tolerance)
    assert bool(((got - expected).abs() <= band).all()), float((got - expected).abs().max())


#: the models and the variants whose dirty sets differ (DyRep's stored partner embedding)
VARIANTS = [(name, {}) for name in NAMES] + [("dyrep", {"partner_embedding": "event"})]


@settings(max_examples=30, deadline=None)
@given(variant=st.sampled_from(VARIANTS), seed=st.integers(0, 10_000), batch_size=st.integers(1, 30),
       num_candidates=st.integers(1, N), start=st.integers(0, 60))
def test_incremental_scores_equal_full_recomputation(variant, seed, batch_size, num_candidates, start):
    name, options = variant
    data = generate_events(160, N, seed=seed, feature_dim=2 if seed % 2 else 0)
    torch.manual_seed(seed)
    incremental = small_neural_model(name, N, msg_dim=2 if seed % 2 else 1, **options).eval()
    full = small_neural_model(name, N, msg_dim=2 if seed % 2 else 1, **options).eval()
    full.load_state_dict(incremental.state_dict())
    items = torch.randperm(N, generator=torch.Generator().manual_seed(seed))[:num_candidates]
    catalog = items.clone()
    candidates = catalog[: max(1, num_candidates - 1)]  # a prefix view of the kept list, as the engine passes
    with torch.no_grad():
        for model in (incremental, full):
            for batch in TimestampBatchLoader(data[:start], batch_size):
                model.update(batch)
    compared = 0
    for batch in TimestampBatchLoader(data[start:], batch_size):
        full._cache = None  # a full recomputation of every node asked for
        got, want = _scores(incremental, batch, candidates), _scores(full, batch, candidates)
        for a, b in zip(got, want):
            _assert_within_band(a, b, incremental.capabilities.tie_tolerance)
        compared += 1
        with torch.no_grad():
            incremental.update(batch)
            full.update(batch)
    assert compared > 0 and incremental._cache is not None  # the cache was kept across batches


@pytest.fixture(scope="module")
def stream():
    return generate_events(200, N, seed=1)


def _warmed(name, stream, upto=120):
    torch.manual_seed(0)
    model = small_neural_model(name, N).eval()
    with torch.no_grad():
        for batch in TimestampBatchLoader(stream[:upto], 20):
            model.update(batch)
    return model


def _fresh_scores(model, src, dst, t):
    """Scores with the cache dropped first: what every scoring path must agree with."""
    model._cache = None
    with torch.no_grad():
        return model.score(src, dst, t)


@pytest.mark.parametrize("name", NAMES)
def test_cache_is_not_state_and_is_dropped_with_it(name, stream):
    model = _warmed(name, stream)
    part = stream[150:160]
    state = model.snapshot()
    with torch.no_grad():
        model.score(part.src, part.dst, part.t)
        model.candidate_scorer(part.src, part.t, torch.arange(N))
    assert model._cache is not None and model._cache.target is not None
    assert first_difference(model.snapshot(), state) is None  # filling the cache changed no snapshot
    # reset_state / restore drop it
    model.reset_state()
    assert model._cache is None
    model.restore(state)
    assert model._cache is None
    with torch.no_grad():
        before = model.score(part.src, part.dst, part.t)
        model.update(stream[120:140])  # the cache follows the update (dirty nodes recomputed)
        moved = model.score(part.src, part.dst, part.t)
    assert not torch.equal(before, moved)
    _assert_within_band(moved, _fresh_scores(model, part.src, part.dst, part.t), model.capabilities.tie_tolerance)
    model.restore(state)
    with torch.no_grad():
        again = model.score(part.src, part.dst, part.t)
    assert torch.equal(again, before)
    assert first_difference(model.snapshot(), state) is None
    # .to() drops it (a new device gets a new cache)
    with torch.no_grad():
        model.score(part.src, part.dst, part.t)
    model.to("cpu")
    assert model._cache is None


@pytest.mark.parametrize("name", NAMES)
def test_cache_is_dropped_when_parameters_change(name, stream):
    model = _warmed(name, stream)
    part = stream[150:160]
    with torch.no_grad():
        before = model.score(part.src, part.dst, part.t)
        model.candidate_scorer(part.src, part.t, torch.arange(N))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model.train()
    loss = model.score(part.src, part.dst, part.t).sum()  # no cache in training mode
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        after = model.score(part.src, part.dst, part.t)
        block = model.candidate_scorer(part.src, part.t, torch.arange(N))(slice(None), slice(None))
    assert not torch.allclose(after, before)  # the step changed the scores: nothing stale was used
    _assert_within_band(after, _fresh_scores(model, part.src, part.dst, part.t), model.capabilities.tie_tolerance)
    with torch.no_grad():
        pairwise = model.score(part.src.repeat_interleave(N), torch.arange(N).repeat(part.src.numel()),
                               part.t.repeat_interleave(N)).view(-1, N)
    torch.testing.assert_close(block, pairwise, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_cache_is_dropped_when_state_changes_behind_its_back(name, stream):
    model = _warmed(name, stream)
    part = stream[150:160]
    with torch.no_grad():
        model.score(part.src, part.dst, part.t)
        buffer = model.neighbors if name != "dyrep" else model.memory.neighbors
        buffer.slot_e_id.fill_(-1)  # forget every neighbour slot, in place (not through update)
        after = model.score(part.src, part.dst, part.t)
    torch.testing.assert_close(after, _fresh_scores(model, part.src, part.dst, part.t), rtol=0, atol=0)
