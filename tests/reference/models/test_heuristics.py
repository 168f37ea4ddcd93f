"""Heuristic baselines against plain-Python references on random streams."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval import TimestampBatchLoader
from tgeval.models.heuristics import EdgeBank, NodeMemory, PairMembership, Popularity, PreferentialAttachment
from torch_geometric.data import TemporalData

from tests.conftest import make_stream
from tests.strategies import streams


def _reference_scores(kind, history, queries, window=None, directed=True, half_life=None):
    """Score (u, v, t) queries from a list of past (u, v, t) events with plain Python."""
    out = []
    for u, v, t in queries:
        if kind == "edgebank":
            key = (u, v) if directed else (min(u, v), max(u, v))
            times = [s for a, b, s in history if ((a, b) if directed else (min(a, b), max(a, b))) == key]
            out.append(float(bool(times) and (window is None or max(times) >= t - window)))
        elif kind == "node":
            nodes = {a for a, _, _ in history} | {b for _, b, _ in history}
            out.append(float(u in nodes and v in nodes))
        elif kind == "pa":
            deg = lambda x: sum((a == x) + (b == x) for a, b, _ in history)  # noqa: E731
            out.append(float(deg(u) * deg(v)))
        elif kind == "pop":
            count = sum(1.0 if half_life is None else 2.0 ** (-(t - s) / half_life) for _, b, s in history if b == v)
            out.append(count if half_life is None else (math.log2(count) if count > 0 else -math.inf))
    return out


MODELS = {
    "edgebank": lambda n: EdgeBank(n),
    "edgebank-window": lambda n: EdgeBank(n, window=3),
    "edgebank-undirected": lambda n: EdgeBank(n, directed=False),
    "node": lambda n: NodeMemory(n),
    "pa": lambda n: PreferentialAttachment(n),
    "pop": lambda n: Popularity(n),
    "pop-decay": lambda n: Popularity(n, half_life=2.0),
}
REFERENCE = {
    "edgebank": dict(kind="edgebank"), "edgebank-window": dict(kind="edgebank", window=3),
    "edgebank-undirected": dict(kind="edgebank", directed=False), "node": dict(kind="node"),
    "pa": dict(kind="pa"), "pop": dict(kind="pop"), "pop-decay": dict(kind="pop", half_life=2.0),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@settings(max_examples=40, deadline=None)
@given(data=streams(max_events=30, max_nodes=6), batch_size=st.integers(1, 7))
def test_heuristics_match_reference_under_online_updates(name, data, batch_size):
    model = MODELS[name](8)
    history = []
    nodes = torch.arange(8)
    for batch in TimestampBatchLoader(data, batch_size):
        # score every pair at the batch's last time, before the update
        t_query = int(batch.t[-1])
        src, dst = nodes.repeat_interleave(8), nodes.repeat(8)
        got = model.score(src, dst, torch.full_like(src, t_query))
        queries = [(int(u), int(v), t_query) for u, v in zip(src, dst)]
        expected = _reference_scores(history=history, queries=queries, **REFERENCE[name])
        assert got.dtype == torch.float64
        expected = torch.tensor(expected, dtype=torch.float64)
        assert torch.equal(torch.isinf(got), torch.isinf(expected))
        finite = torch.isfinite(expected)
        assert torch.allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12)
        model.update(batch)
        history += list(zip(batch.src.tolist(), batch.dst.tolist(), batch.t.tolist()))


def test_edgebank_storage_is_distinct_pairs():
    model = EdgeBank(10)
    src = torch.tensor([1, 1, 1, 2, 2, 1])
    dst = torch.tensor([2, 2, 2, 3, 3, 4])
    model.update(make_stream(src, dst, [1, 2, 3, 4, 5, 6]))
    state = model.snapshot()  # the stored pairs, without the padding of the fixed-capacity arrays
    assert state["keys"].tolist() == [12, 14, 23] and state["last_seen"].tolist() == [3, 6, 5]
    assert state["last_seen"].dtype == torch.long  # integer times stay exact
    padding = model.keys[3:]
    assert padding.numel() > 0 and bool((padding == torch.iinfo(torch.long).max).all())
    model.update(TemporalData(src=torch.tensor([1, 0]), dst=torch.tensor([2, 9]), t=torch.tensor([7.5, 8.0])))
    # float times: stored as float64 from now on
    state = model.snapshot()
    assert state["keys"].tolist() == [9, 12, 14, 23] and state["last_seen"].tolist() == [8.0, 7.5, 6.0, 5.0]


@pytest.mark.parametrize("window", [None, 2.0])
def test_edgebank_grows_past_its_capacity(window):
    """More distinct pairs than the initial capacity, in batches that straddle each regrowth."""
    n = 100
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, n, (5000,), generator=gen), torch.randint(0, n, (5000,), generator=gen)
    data = make_stream(src, dst, torch.arange(5000) // 3)
    model = EdgeBank(n, window=window)
    history = {}
    for batch in TimestampBatchLoader(data, 333):
        model.update(batch)
        history.update(zip(zip(batch.src.tolist(), batch.dst.tolist()), batch.t.tolist()))
    state = model.snapshot()
    assert state["keys"].tolist() == sorted(u * n + v for u, v in history)
    assert state["last_seen"].tolist() == [history[(k // n, k % n)] for k in state["keys"].tolist()]
    assert model.keys.numel() > state["keys"].numel()  # padding left: the next update needs no regrowth check


def test_membership_scorer_values():
    model = PairMembership(5, beta=-2.0, bias=0.5)
    model.update(make_stream([0], [1], [0]))
    assert model.score(torch.tensor([0, 0]), torch.tensor([1, 2]), torch.tensor([1, 1])).tolist() == [-1.5, 0.5]


def test_invalid_options():
    with pytest.raises(ValueError, match="window"):
        EdgeBank(5, window=0)
    with pytest.raises(ValueError, match="half_life"):
        Popularity(5, half_life=-1)
    with pytest.raises(ValueError, match="num_nodes"):
        NodeMemory(0)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_state_moves_with_device_and_snapshot_restores(name, device):
    model = MODELS[name](6).to(device)
    data = make_stream([0, 1, 2, 0], [1, 2, 3, 3], [1, 2, 3, 4]).to(device)
    model.update(data[:2])
    snap = model.snapshot()
    q = (torch.tensor([0, 1, 2], device=device), torch.tensor([3, 2, 3], device=device), torch.tensor([9, 9, 9], device=device))
    before = model.score(*q)
    model.update(data[2:])
    model.restore(snap)
    assert torch.equal(model.score(*q), before) and before.device.type == device.type
    model.reset_state()
    fresh = MODELS[name](6).to(device)
    assert torch.equal(model.score(*q), fresh.score(*q))
