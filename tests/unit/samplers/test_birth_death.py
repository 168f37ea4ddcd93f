"""Birth–Death lifetimes and the nine samplers (HS, OS, IS, HD, OD, ID, HE, OE, IE), docs/protocol.md §4–§5."""

import inspect
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval import SamplerError, evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers.base import Negatives
from tgeval.samplers.lifespans import (BIRTH_DEATH_NAMES, BirthDeathEdgeSampler, BirthDeathNodeSampler, birth_death,
                                         factories, lifetime_classes, node_lifetimes, pair_lifetimes, split_time)
from tgeval.eval.protocol import Protocol
from tests.conftest import make_stream
from tests.helpers import sample_replay
from tests.strategies import streams

# A hand-made stream (src, dst, t) whose lifetimes are known. t_split = 10 (its 0.5 quantile).
EVENTS = [
    (9, 0, 1),
    (0, 1, 2),
    (8, 9, 3),
    (2, 1, 4),
    (10, 11, 5),
    (0, 2, 6),
    (12, 13, 7),
    (2, 1, 10),  # pair (2, 1) dies exactly at t_split -> overlap
    (3, 4, 10),  # node 3 is born (and dies) exactly at t_split -> inductive
    (8, 3, 10),  # node 8 dies exactly at t_split -> overlap
    (10, 11, 11),
    (1, 4, 12),
    (5, 6, 13),
    (6, 5, 14),
    (7, 4, 15),
    (12, 13, 16),
]
DATA = make_stream(*zip(*EVENTS))
T_SPLIT = 10
N = 14
# node: (birth, death) -- a node's events are those where it is the source or the destination
NODE_LIFE = {0: (1, 6), 1: (2, 12), 2: (4, 10), 3: (10, 10), 4: (10, 15), 5: (13, 14), 6: (13, 14), 7: (15, 15),
             8: (3, 10), 9: (1, 3), 10: (5, 11), 11: (5, 11), 12: (7, 16), 13: (7, 16)}
NODES = {"H": {0, 9}, "O": {1, 2, 8, 10, 11, 12, 13}, "I": {3, 4, 5, 6, 7}}
PAIR_LIFE = {(9, 0): (1, 1), (0, 1): (2, 2), (8, 9): (3, 3), (2, 1): (4, 10), (10, 11): (5, 11), (0, 2): (6, 6),
             (12, 13): (7, 16), (3, 4): (10, 10), (8, 3): (10, 10), (1, 4): (12, 12), (5, 6): (13, 13),
             (6, 5): (14, 14), (7, 4): (15, 15)}
PAIRS = {"H": {(9, 0), (0, 1), (8, 9), (0, 2)}, "O": {(2, 1), (10, 11), (12, 13)},
         "I": {(3, 4), (8, 3), (1, 4), (5, 6), (6, 5), (7, 4)}}
# undirected: (5, 6) and (6, 5) are one pair, born at 13 and dead at 14; keys use (min, max)
UNDIRECTED_PAIRS = {"H": {(0, 9), (0, 1), (8, 9), (0, 2)}, "O": {(1, 2), (10, 11), (12, 13)},
                    "I": {(3, 4), (3, 8), (1, 4), (5, 6), (4, 7)}}
CATALOG = Catalog("custom", torch.arange(N), None, N)


def decode(lifetimes, n=N):
    return {(k // n, k % n): (b, d) for k, b, d in zip(lifetimes.keys.tolist(), lifetimes.birth.tolist(),
                                                       lifetimes.death.tolist())}


def kind_of(name):
    return {"S": "src", "D": "dst", "E": "edge"}[name[1]]


# ---- lifetimes ------------------------------------------------------------------------------
def test_hand_made_lifetimes_and_classes():
    nodes = node_lifetimes(DATA)
    assert nodes.keys.tolist() == list(range(N))
    assert dict(zip(range(N), zip(nodes.birth.tolist(), nodes.death.tolist()))) == NODE_LIFE
    for cls in "HOI":
        assert set(nodes.of_class(cls, T_SPLIT).tolist()) == NODES[cls]
    assert decode(pair_lifetimes(DATA, N)) == PAIR_LIFE
    for cls in "HOI":
        assert {(k // N, k % N) for k in pair_lifetimes(DATA, N).of_class(cls, T_SPLIT).tolist()} == PAIRS[cls]
        und = pair_lifetimes(DATA, N, directed=False).of_class(cls, T_SPLIT).tolist()
        assert {(k // N, k % N) for k in und} == UNDIRECTED_PAIRS[cls]
    assert decode(pair_lifetimes(DATA, N, directed=False))[(5, 6)] == (13, 14)


def test_event_exactly_at_t_split():
    nodes = node_lifetimes(DATA)
    classes = dict(zip(nodes.keys.tolist(), nodes.classes(T_SPLIT).tolist()))
    assert classes[3] == 2  # b = t_split -> inductive
    assert classes[8] == 1  # b < t_split = d -> overlap
    assert classes[2] == 1
    # just after the split, what died at 10 is historical; just before, node 3 stays inductive
    after = dict(zip(nodes.keys.tolist(), nodes.classes(10.5).tolist()))
    assert after[3] == after[8] == after[2] == 0
    before = dict(zip(nodes.keys.tolist(), nodes.classes(9.5).tolist()))
    assert before[3] == 2 and before[8] == 1
    # float times compare the same way
    assert lifetime_classes(torch.tensor([10.0, 3.0, 3.0]), torch.tensor([10.0, 10.0, 9.5]), 10.0).tolist() == [2, 1, 0]


def test_split_time_is_the_numpy_quantile():
    assert split_time(DATA, 0.5) == 10.0  # times [1..7, 10, 10, 10, 11..16]: mean of the 8th and 9th
    assert split_time(DATA) == float(np.quantile(DATA.t.numpy(), 0.85))
    assert split_time(make_stream([0, 0], [1, 1], [0, 10]), 0.25) == 7.5  # linear interpolation
    with pytest.raises(ValueError, match="test_ratio"):
        split_time(DATA, 1.0)


def reference_lifetimes(events, directed):
    nodes, pairs = {}, {}
    for u, v, t in events:
        for x, table in ((u, nodes), (v, nodes), ((u, v) if directed else (min(u, v), max(u, v)), pairs)):
            b, d = table.get(x, (t, t))
            table[x] = (min(b, t), max(d, t))
    return nodes, pairs


def reference_class(b, d, t_split):
    return "H" if d < t_split else ("I" if b >= t_split else "O")


@settings(max_examples=80, deadline=None)
@given(data=streams(max_events=30, max_nodes=9, max_time=12), directed=st.booleans(),
       t_split=st.one_of(st.integers(-1, 13), st.floats(-1.0, 13.0, allow_nan=False)))
def test_lifetimes_match_python_reference(data, directed, t_split):
    n = int(max(data.src.max(), data.dst.max())) + 1
    events = list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))
    nodes, pairs = reference_lifetimes(events, directed)
    got = node_lifetimes(data)
    assert dict(zip(got.keys.tolist(), zip(got.birth.tolist(), got.death.tolist()))) == nodes
    assert decode(pair_lifetimes(data, n, directed=directed), n) == pairs
    for cls in "HOI":
        assert set(got.of_class(cls, t_split).tolist()) == {x for x, (b, d) in nodes.items()
                                                            if reference_class(b, d, t_split) == cls}
        got_pairs = pair_lifetimes(data, n, directed=directed).of_class(cls, t_split).tolist()
        assert {(k // n, k % n) for k in got_pairs} == {x for x, (b, d) in pairs.items()
                                                        if reference_class(b, d, t_split) == cls}


# ---- samplers: support and rules ----------------------------------------------------------------
def reference_pool(name, event, batch_events, classes_nodes, classes_pairs, directed):
    """Valid negatives of one event: nodes (S / D samplers) or pairs (E samplers)."""
    u, v, t = event
    same_t = [(a, b) for a, b, s in batch_events if s == t]
    if kind_of(name) == "dst":
        simultaneous = {b for a, b in same_t if a == u} | ({a for a, b in same_t if b == u} if not directed else set())
        return classes_nodes[name[0]] - {u} - simultaneous
    if kind_of(name) == "src":
        simultaneous = {a for a, b in same_t if b == v} | ({b for a, b in same_t if a == v} if not directed else set())
        return classes_nodes[name[0]] - {v} - simultaneous
    canon = (lambda p: p) if directed else (lambda p: (min(p), max(p)))
    return classes_pairs[name[0]] - {canon(p) for p in same_t}


def as_pairs(out, batch_events):
    """Negatives -> list (per row) of (src, dst) pairs (the positive's source when ``out.src`` is None)."""
    if out.src is not None:
        return [list(zip(s, d)) for s, d in zip(out.src.tolist(), out.dst.tolist())]
    return [[(u, d) for d in row] for (u, _, _), row in zip(batch_events, out.dst.tolist())]


def check_batch(name, out, batch_events, classes_nodes, classes_pairs, k, replace, directed, fallback,
                short="error"):
    """Assert support / rules of one batch's draws; return (expected error, fallback rows, filled slots)."""
    need = 1 if replace else k
    expect_error, fallbacks, filled = False, 0, 0
    pools = [reference_pool(name, e, batch_events, classes_nodes, classes_pairs, directed) for e in batch_events]
    for pool in pools:
        if len(pool) == 0:
            expect_error |= fallback == "error"
            fallbacks += 1
        elif len(pool) < need:
            expect_error |= short == "error"
            filled += k - len(pool) if short == "fill" else 0
    if isinstance(out, SamplerError):
        assert expect_error, (name, batch_events, out)
        return True, 0, 0
    assert not expect_error, (name, batch_events, pools)
    for (u, v, t), pool, row in zip(batch_events, pools, as_pairs(out, batch_events)):
        simultaneous = {(a, b) for a, b, s in batch_events if s == t}
        if not directed:
            simultaneous |= {(b, a) for a, b in simultaneous}
        assert not simultaneous & set(row), (name, (u, v, t), row)  # never the positive or a simultaneous one
        if kind_of(name) != "edge":
            assert all(a != b for a, b in row)  # never a self-loop
        if kind_of(name) == "dst":
            assert all(a == u for a, _ in row)
        if kind_of(name) == "src":
            assert all(b == v for _, b in row)
        if len(pool) == 0:  # uniform fallback: keeps the source (D, E) or the destination (S)
            continue
        items = [b for _, b in row] if kind_of(name) == "dst" else [a for a, _ in row] if kind_of(name) == "src" \
            else [p if directed else (min(p), max(p)) for p in row]
        if len(pool) < need and short == "fill":  # every class item, topped up by the uniform fallback's draws
            assert pool <= set(items) and len(set(row)) == k, (name, (u, v, t), row, pool)
            continue
        assert set(items) <= pool, (name, (u, v, t), items, pool)
        if not replace and len(pool) >= need:
            assert len(set(items)) == k
    return False, fallbacks, filled




def classes_of(data, t_split, directed):
    events = list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))
    nodes, pairs = reference_lifetimes(events, directed)
    by_class = {c: {x for x, (b, d) in nodes.items() if reference_class(b, d, t_split) == c} for c in "HOI"}
    pairs_by = {c: {x for x, (b, d) in pairs.items() if reference_class(b, d, t_split) == c} for c in "HOI"}
    return events, by_class, pairs_by


@pytest.mark.parametrize("name", BIRTH_DEATH_NAMES)
def test_hand_made_support(name):
    sampler = birth_death(name, DATA, T_SPLIT, catalog=CATALOG, fallback="error")
    assert sampler.name == name and sampler.uses_whole_stream and sampler.describe()["uses_whole_stream"]
    events, nodes, pairs = classes_of(DATA, T_SPLIT, True)
    assert nodes == NODES and pairs == PAIRS
    segment = DATA[7:]  # from the first event at t_split on
    segment.position = torch.arange(7, 16)
    k = 2
    seen = set()
    for seed in range(20):
        for batch_size in (1, 3, 100):
            for batch in TimestampBatchLoader(segment, batch_size):
                out = sampler.sample(batch, k, torch.Generator().manual_seed(seed))
                batch_events = list(zip(batch.src.tolist(), batch.dst.tolist(), batch.t.tolist()))
                check_batch(name, out, batch_events, nodes, pairs, k, False, True, "error")
                for row in as_pairs(out, batch_events):
                    seen |= {p[1] if kind_of(name) == "dst" else p[0] if kind_of(name) == "src" else p for p in row}
    # every class member is reachable (from some event), and nothing else
    expected = pairs[name[0]] if kind_of(name) == "edge" else nodes[name[0]]
    assert seen == expected
    assert sampler.describe()["num_fallback_events"] == 0


@settings(max_examples=150, deadline=None)
@given(data=streams(max_events=24, max_nodes=8, max_time=10), name=st.sampled_from(BIRTH_DEATH_NAMES),
       k=st.integers(1, 3), replace=st.booleans(), directed=st.booleans(), seed=st.integers(0, 50),
       batch_size=st.sampled_from([1, 4, 100]), fallback=st.sampled_from(["uniform", "error"]),
       t_split=st.integers(0, 11), short=st.sampled_from(["fill", "replace", "error"]))
def test_support_rules_errors_and_fallback_counts(data, name, k, replace, directed, seed, batch_size, fallback,
                                                  t_split, short):
    sampler = birth_death(name, data, t_split, num_nodes=16, catalog=Catalog("custom", torch.arange(16), None, 16),
                          directed=directed, replace=replace, fallback=fallback, short=short)
    events, nodes, pairs = classes_of(data, t_split, directed)
    draws = sample_replay(sampler, data, k, seed, batch_size)
    spans = list(TimestampBatchLoader(data, batch_size).spans())
    total, total_filled = 0, 0
    for (start, end), out in zip(spans, draws):
        error, fallbacks, filled = check_batch(name, out, events[start:end], nodes, pairs, k, replace, directed,
                                               fallback, short)
        total, total_filled = total + fallbacks, total_filled + filled
    if not any(isinstance(out, SamplerError) for out in draws):
        assert sampler.describe()["num_fallback_events"] == total
        assert sampler.describe()["num_filled_slots"] == total_filled


@pytest.mark.parametrize("name", BIRTH_DEATH_NAMES)
def test_same_seed_same_draws(name):
    a = sample_replay(birth_death(name, DATA, T_SPLIT, catalog=CATALOG, replace=True), DATA, 3, 4, 2)
    b = sample_replay(birth_death(name, DATA, T_SPLIT, catalog=CATALOG, replace=True), DATA, 3, 4, 2)
    c = sample_replay(birth_death(name, DATA, T_SPLIT, catalog=CATALOG, replace=True), DATA, 3, 5, 2)

    def flat(out):
        return torch.cat([out.src, out.dst], 1) if out.src is not None else out.dst

    assert all(torch.equal(flat(x), flat(y)) for x, y in zip(a, b))
    assert not all(torch.equal(flat(x), flat(y)) for x, y in zip(a, c))


def test_short_pool_raises_or_fills_and_empty_pool_falls_back_counted():
    batch = make_stream([2], [1], [10])  # the overlap pair (2, 1) itself
    batch.position = torch.tensor([7])
    oe = BirthDeathEdgeSampler(DATA, T_SPLIT, cls="O", catalog=CATALOG, short="error")
    with pytest.raises(SamplerError, match="fewer than the 3 required"):  # 2 other overlap pairs
        oe.sample(batch, 3)
    out = oe.sample(batch, 2)
    assert {tuple(p) for p in torch.stack([out.src[0], out.dst[0]], 1).tolist()} == {(10, 11), (12, 13)}
    filled = BirthDeathEdgeSampler(DATA, T_SPLIT, cls="O", catalog=CATALOG)  # default short="fill"
    out = filled.sample(batch, 4)
    pairs = [tuple(p) for p in torch.stack([out.src[0], out.dst[0]], 1).tolist()]
    assert {(10, 11), (12, 13)} <= set(pairs) and len(set(pairs)) == 4
    assert all(a == 2 and b not in (1, 2) for a, b in set(pairs) - {(10, 11), (12, 13)})  # uniform, source kept
    assert filled.describe()["num_filled_slots"] == 2 and filled.describe()["num_short_events"] == 1
    # replace: a single valid item suffices
    hd = birth_death("HD", DATA, T_SPLIT, catalog=CATALOG, replace=True)
    only = make_stream([9], [5], [10])  # source 9 is historical: pool {0, 9} minus the source
    assert hd.sample(only, 4).dst.tolist() == [[0, 0, 0, 0]]
    # an empty class pool: everything is born before 20 -> no inductive node
    late = birth_death("ID", DATA, 20, catalog=CATALOG)
    out = late.sample(make_stream([3, 3], [4, 5], [16, 16]), 2).dst
    assert out.shape == (2, 2) and not ({3, 4, 5} & set(out.flatten().tolist()))
    assert late.describe()["num_fallback_events"] == 2 and late.describe()["num_events"] == 2
    late.reset_state()
    assert late.describe()["num_fallback_events"] == 0
    with pytest.raises(SamplerError, match="empty .*inductive.* fallback='error'"):
        birth_death("IS", DATA, 20, catalog=CATALOG, fallback="error").sample(make_stream([3], [4], [16]), 1)
    # source fallback keeps the destination and never returns a simultaneous source
    src_fb = birth_death("IS", DATA, 20, catalog=CATALOG).sample(make_stream([3, 5], [4, 4], [16, 16]), 3)
    assert src_fb.dst.tolist() == [[4] * 3] * 2 and not ({3, 4, 5} & set(src_fb.src.flatten().tolist()))
    # edge fallback keeps the source
    edge_fb = birth_death("IE", DATA, 20, catalog=CATALOG).sample(make_stream([3], [4], [16]), 3)
    assert edge_fb.src.tolist() == [[3, 3, 3]] and not ({3, 4} & set(edge_fb.dst.flatten().tolist()))


def test_source_sampler_excludes_simultaneous_sources_and_self_loops():
    # batch at t=13: (5, 6) and (1, 6); IS for (5, 6): inductive {3..7} minus 6 (self-loop), 5, 1 -> {3, 4, 7}
    batch = make_stream([1, 5], [6, 6], [13, 13])
    sampler = birth_death("IS", DATA, T_SPLIT, catalog=CATALOG)
    out = sampler.sample(batch, 3)
    assert isinstance(out, Negatives) and out.dst.tolist() == [[6] * 3] * 2
    assert [sorted(row) for row in out.src.tolist()] == [[3, 4, 7]] * 2
    with pytest.raises(SamplerError, match="fewer than the 4 required"):
        birth_death("IS", DATA, T_SPLIT, catalog=CATALOG, short="error").sample(batch, 4)
    filled = sampler.sample(batch, 4).src.tolist()  # the default fills the fourth slot with a uniform source
    assert all({3, 4, 7} <= set(row) and not {1, 5, 6} & set(row) and len(set(row)) == 4 for row in filled)
    # undirected: (6, 3, 13) also makes 3 a simultaneous source of destination 6
    und = birth_death("IS", DATA, T_SPLIT, catalog=CATALOG, directed=False)
    out = und.sample(make_stream([5, 6], [6, 3], [13, 13]), 2)
    assert sorted(out.src[0].tolist()) == [4, 7]
    assert math.isclose(float(und.log_q(make_stream([5, 6], [6, 3], [13, 13]), out)[0, 0]), -math.log(2))


def test_catalog_of_nodes_restricts_candidates_and_options():
    sampler = BirthDeathNodeSampler(DATA, T_SPLIT, cls="O", endpoint="src", catalog=CATALOG,
                                    catalog_of_nodes=torch.tensor([1, 2, 8, 9]))
    assert sampler.nodes.tolist() == [1, 2, 8]  # 9 is historical
    out = sampler.sample(make_stream([3], [4], [10]), 3)
    assert sorted(out.src[0].tolist()) == [1, 2, 8]
    with pytest.raises(ValueError, match="cls"):
        BirthDeathNodeSampler(DATA, T_SPLIT, cls="X", catalog=CATALOG)
    with pytest.raises(ValueError, match="endpoint"):
        BirthDeathNodeSampler(DATA, T_SPLIT, endpoint="pair", catalog=CATALOG)
    with pytest.raises(ValueError, match="unknown Birth-Death"):
        birth_death("XX", DATA, T_SPLIT)
    with pytest.raises(ValueError, match="catalog_of_nodes"):
        birth_death("HE", DATA, T_SPLIT, catalog_of_nodes=torch.tensor([1]))
    assert birth_death("od", DATA).t_split == split_time(DATA, 0.15)  # default t_split, case-insensitive name
    assert birth_death("HD", DATA).catalog.items.tolist() == list(range(N))  # default fallback catalog: stream nodes
    params = inspect.signature(factories()["HS"]).parameters
    assert {"data", "t_split", "test_ratio", "catalog", "num_nodes", "fallback"} <= set(params)


@pytest.mark.parametrize("name", BIRTH_DEATH_NAMES)
def test_evaluate_with_edgebank(name):
    segment = Segment("test", 7, 16, 10, 16)
    sampler = birth_death(name, DATA, T_SPLIT, num_nodes=N, catalog=CATALOG)
    result = evaluate(EdgeBank(N), DATA, segment, Protocol(num_negatives=2, batch_size=2), sampler=sampler)
    records = result.records
    assert records["neg"].shape == (9, 2)
    assert ("neg_src" in records) == (kind_of(name) != "dst")
    assert result.manifest["sampler"]["name"] == name and result.manifest["sampler"]["uses_whole_stream"]
    if kind_of(name) == "src":
        assert torch.equal(records["neg"], records["dst"][:, None].expand(9, 2))
        assert set(records["neg_src"].flatten().tolist()) <= NODES[name[0]]
    if kind_of(name) == "edge":
        pairs = set(zip(records["neg_src"].flatten().tolist(), records["neg"].flatten().tolist()))
        assert pairs <= PAIRS[name[0]]
