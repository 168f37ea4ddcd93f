"""Rules every sampler of the zoo obeys, checked against slow set-based reference pools."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval import SamplerError
from tgeval.data.catalog import Catalog
from tgeval.data.split import chronological_split
from tgeval.stream.loader import TimestampBatchLoader
from tgeval.samplers.degree import DegreeSampler, TimeDegreeSampler
from tgeval.samplers.historical import HistoricalSampler
from tgeval.samplers.inductive import InductiveSampler
from tgeval.samplers.mixture import MixtureSampler, split_count
from tgeval.samplers.popularity import PopularitySampler
from tgeval.samplers.base import Negatives
from tgeval.samplers.registry import from_spec, get, names, parse_spec, register
from tgeval.samplers.source_history import SourceHistorySampler
from tgeval.samplers.time_available import TimeAvailableSampler
from tgeval.samplers.uniform import UniformSampler
from tests.conftest import make_stream
from tests.helpers import sample_replay
from tests.strategies import streams

N = 16  # id bound; streams use ids < 8, so the uniform fallback pool always holds >= 8 items
CATALOG = Catalog("custom", torch.arange(N), None, N)
KINDS = ["historical", "source_history", "inductive", "time_available", "popularity", "degree", "degree_time",
         "mixture"]


@st.composite
def shared_source_streams(draw, max_groups=8, max_nodes=8):
    """Every timestamp group has a single source (all its events share it)."""
    src, dst, t = [], [], []
    time = 0
    for _ in range(draw(st.integers(1, max_groups))):
        time += draw(st.integers(1, 3))
        u = draw(st.integers(0, max_nodes - 1))
        for v in draw(st.lists(st.integers(0, max_nodes - 1), min_size=1, max_size=4)):
            src.append(u), dst.append(v), t.append(time)
    return make_stream(src, dst, t)


def make(kind, data, *, train_end, replace=False, directed=True, fallback="uniform", short="fill"):
    common = dict(catalog=CATALOG, replace=replace, directed=directed, fallback=fallback, short=short)
    if kind == "historical":
        return HistoricalSampler(N, **common)
    if kind == "source_history":
        return SourceHistorySampler(N, **common)
    if kind == "inductive":
        return InductiveSampler(data, train_end=train_end, num_nodes=N, **common)
    if kind == "time_available":
        return TimeAvailableSampler(data, num_nodes=N, replace=replace, directed=directed)
    if kind == "popularity":
        return PopularitySampler(N, **common)
    if kind == "degree":
        return DegreeSampler(N, graph=data[:train_end], **common)
    if kind == "degree_time":
        return TimeDegreeSampler(N, **common)
    if kind == "mixture":
        return MixtureSampler([HistoricalSampler(N, **common), UniformSampler(CATALOG, replace=replace,
                                                                              directed=directed)], [0.5, 0.5])
    raise AssertionError(kind)


def events_of(data):
    return list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))


def pairs_of(events, directed):
    out = {(a, b) for a, b, _ in events}
    return out if directed else out | {(b, a) for a, b in out}


def reference_pool(kind, u, t, history, batch, everything, train_end, directed):
    """The set a negative of event (u, ., t) may come from, and whether it is a fallback-able pool."""
    def partners(events, same_time):
        out = {b for a, b, s in events if a == u and (not same_time or s == t)}
        if not directed:
            out |= {a for a, b, s in events if b == u and (not same_time or s == t)}
        return out

    simultaneous, in_batch = partners(batch, True), partners(batch, False)
    if kind in ("historical", "source_history"):
        seen = {b for a, b in pairs_of(history, directed) if a == u}
        return seen - {u} - (in_batch if kind == "historical" else simultaneous)
    if kind == "inductive":
        new = pairs_of(everything[train_end:], directed) - pairs_of(everything[:train_end], directed)
        return {b for a, b in new if a == u} - {u} - in_batch
    if kind == "time_available":
        return {b for a, b, s in everything if s < t} - {u} - simultaneous
    if kind == "popularity":
        nodes = {b for _, b, _ in history} | (set() if directed else {a for a, _, _ in history})
        return nodes - {u} - simultaneous
    graph = everything[:train_end] if kind == "degree" else history
    nodes = {a for a, _, _ in graph} | {b for _, b, _ in graph}
    return nodes - {u} - simultaneous - {b for a, b in pairs_of(graph, directed) if a == u}


def uniform_pool(u, t, batch, directed):
    return reference_pool("time_available", u, t, [], batch, [(0, v, -1) for v in range(N)], 0,
                                          directed)


def replay(sampler, data, k, seed, batch_size):
    """Every batch's negative destinations ``[B, K]`` (or its ``SamplerError``), as the online engine draws them."""
    return [x.dst if isinstance(x, Negatives) else x for x in sample_replay(sampler, data, k, seed, batch_size)]


def check_rows(kind, rows, batch_events, history, everything, train_end, k, replace, directed, fallback, short):
    """Assert every row's support / distinctness; return (expected error, fallback rows, short rows, filled slots)."""
    need = 1 if replace else k
    expect_error, fallbacks, shorts, filled = False, 0, 0, 0
    for row, (u, v, t) in zip(rows if rows is not None else [None] * len(batch_events), batch_events):
        forbidden = {u, v} | {b for a, b, s in batch_events if a == u and s == t}
        pool = reference_pool(kind, u, t, history, batch_events, everything, train_end, directed)
        distinct = not replace
        if kind == "time_available":
            expect_error |= len(pool) < need
        elif len(pool) == 0:
            expect_error |= fallback == "error"
            fallbacks += 1
            pool = uniform_pool(u, t, batch_events, directed)
        elif len(pool) < need:
            expect_error |= short == "error"
            shorts += 1
            if short == "fill":  # every pool item, topped up with uniform draws under the uniform rules
                filled += k - len(pool)
                if row is not None:
                    assert pool <= set(row), (kind, u, t, row, pool)
                pool = uniform_pool(u, t, batch_events, directed)
            else:
                distinct = False  # short="replace": the row draws its pool with replacement
        if row is None:
            continue
        assert not forbidden & set(row), (kind, u, v, t, row)
        assert set(row) <= pool, (kind, u, t, row, pool)
        if distinct:
            assert len(set(row)) == k
    return expect_error, fallbacks, shorts, filled


@settings(max_examples=120, deadline=None)
@given(data=st.one_of(streams(max_events=24, max_nodes=8), shared_source_streams()), kind=st.sampled_from(KINDS),
       k=st.integers(1, 3), replace=st.booleans(), directed=st.booleans(), seed=st.integers(0, 50),
       batch_size=st.sampled_from([1, 4, 100]), fallback=st.sampled_from(["uniform", "error"]),
       short=st.sampled_from(["fill", "replace", "error"]))
def test_support_exclusions_errors_and_fallback_counts(data, kind, k, replace, directed, seed, batch_size, fallback,
                                                       short):
    everything = events_of(data)
    train_end = len(everything) // 2
    sampler = make(kind, data, train_end=train_end, replace=replace, directed=directed, fallback=fallback, short=short)
    draws = replay(sampler, data, k, seed, batch_size)
    history, start, total_fallbacks, total_short, total_filled = [], 0, 0, 0, 0
    for out in draws:
        size = out.size(0) if isinstance(out, torch.Tensor) else None
        # the batch is the next run of whole groups: recover it from the loader's boundaries
        end = start + size if size is not None else None
        if end is None:  # an error: recompute the batch span
            spans = list(TimestampBatchLoader(data, batch_size).spans())
            end = dict(spans)[start]
        batch_events = everything[start:end]
        if kind == "mixture":
            k1, k2 = split_count(k, [0.5, 0.5])
            parts = [("historical", k1, slice(0, k1)), ("time_available_uniform", k2, slice(k1, k))]
        else:
            parts = [(kind, k, slice(0, k))]
        expect_error = False
        for part_kind, part_k, cols in parts:
            if part_k == 0:
                continue
            rows = out[:, cols].tolist() if isinstance(out, torch.Tensor) else None
            if part_kind == "time_available_uniform":  # the mixture's uniform component
                for row, (u, v, t) in zip(rows or [], batch_events):
                    assert set(row) <= uniform_pool(u, t, batch_events, directed) - {v}
                continue
            err, fb, shorts, filled = check_rows(part_kind, rows, batch_events, history, everything, train_end,
                                                 part_k, replace, directed, fallback, short)
            expect_error |= err
            if not err:
                total_fallbacks, total_short, total_filled = (total_fallbacks + fb, total_short + shorts,
                                                              total_filled + filled)
        assert isinstance(out, SamplerError) == expect_error, (kind, batch_events, out)
        history += batch_events
        start = end
    described = sampler.describe()
    if kind == "mixture":
        described = described["components"][0]
    if "num_fallback_events" in described and all(isinstance(o, torch.Tensor) for o in draws):
        assert described["num_fallback_events"] == total_fallbacks
        assert (described["num_short_events"], described["num_filled_slots"]) == (total_short, total_filled)


@settings(max_examples=40, deadline=None)
@given(data=streams(min_events=6, max_events=24, max_nodes=8), kind=st.sampled_from(KINDS), k=st.integers(1, 3),
       cut=st.floats(0.2, 0.8), seed=st.integers(0, 50), directed=st.booleans(),
       noise=st.lists(st.integers(0, 7), min_size=48, max_size=48), replace=st.booleans(),
       batch_size=st.integers(1, 6))
def test_no_leak_draws_unchanged_when_later_events_change(data, kind, k, cut, seed, directed, noise, replace,
                                                          batch_size):
    tau = int(data.t[int(cut * (data.num_events - 1))])
    later = data.t > tau
    m = int(later.sum())  # <= 24 events
    altered = data.clone()
    altered.src, altered.dst = data.src.clone(), data.dst.clone()
    altered.src[later] = torch.tensor(noise[:m], dtype=torch.long)
    altered.dst[later] = torch.tensor(noise[24 : 24 + m], dtype=torch.long)
    train_end = int((~later).sum()) // 2  # the static degree graph lies before tau
    a = replay(make(kind, data, train_end=train_end, replace=replace, directed=directed), data, k, seed, batch_size)
    b = replay(make(kind, altered, train_end=train_end, replace=replace, directed=directed), altered, k, seed,
               batch_size)
    spans = list(TimestampBatchLoader(data, batch_size).spans())
    for (start, end), x, y in zip(spans, a, b):
        if int(data.t[end - 1]) > tau:
            break
        if kind == "inductive":  # declared to use the whole stream
            continue
        assert type(x) is type(y)
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), (kind, start)


def test_whole_stream_declarations():
    data = make_stream([0, 0, 0, 0], [1, 2, 3, 4], [1, 2, 3, 4])
    assert InductiveSampler(data, train_end=2, catalog=CATALOG).uses_whole_stream
    assert MixtureSampler([InductiveSampler(data, train_end=2, catalog=CATALOG)], [1]).uses_whole_stream
    for kind in KINDS:
        if kind != "inductive":
            assert not getattr(make(kind, data, train_end=2), "uses_whole_stream", False), kind
    # the declaration is honest: a pair that only occurs after the batch changes its draws
    batch = make_stream([0], [3], [3])
    seen_later = make_stream([0, 0, 0, 0], [1, 2, 3, 5], [1, 2, 3, 4])
    a = InductiveSampler(data, train_end=2, catalog=CATALOG).sample(batch, 1).dst
    b = InductiveSampler(seen_later, train_end=2, catalog=CATALOG).sample(batch, 1).dst
    assert a.tolist() == [[4]] and b.tolist() == [[5]]


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_draws(kind):
    data = make_stream([0, 1, 0, 2, 0, 1, 3, 0, 1, 2, 0, 0, 1, 2], [4, 5, 5, 4, 6, 4, 5, 7, 6, 6, 5, 7, 7, 5],
                       [1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 9, 10, 10])
    a = replay(make(kind, data, train_end=7, replace=True), data, 3, 4, 2)
    b = replay(make(kind, data, train_end=7, replace=True), data, 3, 4, 2)
    c = replay(make(kind, data, train_end=7, replace=True), data, 3, 5, 2)
    same = [torch.equal(x, y) if isinstance(x, torch.Tensor) else type(x) is type(y) for x, y in zip(a, b)]
    other = [torch.equal(x, y) for x, y in zip(a, c) if isinstance(x, torch.Tensor)]
    assert all(same) and len(other) >= 5 and not all(other)


def test_fallback_is_explicit_counted_and_reset():
    sampler = HistoricalSampler(N, catalog=CATALOG)
    batch = make_stream([0, 0, 1], [2, 3, 2], [1, 1, 1])
    neg = sampler.sample(batch, 2, torch.Generator().manual_seed(0)).dst  # empty history: all three fall back
    assert not ({0, 2, 3} & set(neg[0].tolist()) or {0, 2, 3} & set(neg[1].tolist()) or {1, 2} & set(neg[2].tolist()))
    assert sampler.describe()["num_fallback_events"] == 3 and sampler.describe()["num_events"] == 3
    sampler.observe(batch)
    assert sampler.sample(make_stream([0], [5], [2]), 2).dst.sort().values.tolist() == [[2, 3]]
    assert sampler.describe()["num_fallback_events"] == 3
    sampler.reset_state()
    assert sampler.describe()["num_fallback_events"] == 0 and sampler.keys.numel() == 0
    with pytest.raises(SamplerError, match="empty history pool.*fallback='error'"):
        HistoricalSampler(N, catalog=CATALOG, fallback="error").sample(batch, 1).dst
    with pytest.raises(ValueError, match="needs a `catalog`"):
        HistoricalSampler(N)
    with pytest.raises(ValueError, match="fallback must be one of"):
        HistoricalSampler(N, catalog=CATALOG, fallback="skip")


def test_short_pools_fill_replace_or_error():
    history = make_stream([0, 0], [1, 2], [1, 1])
    batch = make_stream([0, 5], [3, 6], [2, 2])  # source 0: pool {1, 2}; source 5: no history (fallback)

    def sampler(**options):
        out = SourceHistorySampler(N, catalog=CATALOG, **options)
        out.observe(history)
        return out

    with pytest.raises(SamplerError, match="has 2 candidate negatives in its history pool.*fewer than the 3.*"
                                           "short='error'.*short='fill'"):
        sampler(short="error").sample(batch, 3)
    filled = sampler()  # the default: fill, as DGB and DyGLib do
    neg = filled.sample(batch, 5, torch.Generator().manual_seed(0)).dst.tolist()
    assert {1, 2} <= set(neg[0]) and len(set(neg[0])) == 5 and not {0, 3} & set(neg[0])
    assert len(set(neg[1])) == 5 and not {5, 6} & set(neg[1])
    described = filled.describe()
    assert (described["num_short_events"], described["num_filled_slots"], described["num_fallback_events"]) == (1, 3, 1)
    assert described["short"] == "fill"
    again = sampler().sample(batch, 5, torch.Generator().manual_seed(0)).dst.tolist()
    assert again == neg  # seeded like every draw
    redrawn = sampler(short="replace").sample(batch, 5).dst.tolist()
    assert set(redrawn[0]) <= {1, 2} and len(redrawn[0]) == 5
    log_q = filled.log_q(batch, torch.tensor(neg))
    uniform = -math.log(N - 2)  # the catalog minus the source and the true destination
    for j, v in enumerate(neg[0]):  # pool items: 1 / 2 of the pool; filled slots: the uniform fallback's
        assert log_q[0, j].item() == pytest.approx(-math.log(2) if v in (1, 2) else uniform)
    assert set(SourceHistorySampler(N, catalog=CATALOG, replace=True).sample(batch, 3).dst.flatten().tolist()) <= set(
        range(N))
    replace = sampler(replace=True)
    assert set(replace.sample(batch[:1], 20).dst.flatten().tolist()) == {1, 2}
    with pytest.raises(ValueError, match="short must be one of"):
        SourceHistorySampler(N, catalog=CATALOG, short="pad")
    with pytest.raises(ValueError, match="short='fill' needs a `catalog`"):
        SourceHistorySampler(N, fallback="error")


def test_historical_and_source_history_differ_on_multi_group_batches():
    history = make_stream([0, 0, 0], [1, 2, 3], [1, 1, 1])
    batch = make_stream([0, 0], [1, 2], [5, 6])  # one batch, two timestamp groups
    hist, source = HistoricalSampler(N, catalog=CATALOG), SourceHistorySampler(N, catalog=CATALOG)
    hist.observe(history), source.observe(history)
    # historical removes every batch destination of the source: only 3 is left
    assert hist.sample(batch, 1).dst.tolist() == [[3], [3]]
    # source-history removes only the event's own positive (and same-t positives)
    assert sorted(source.sample(batch, 2).dst[0].tolist()) == [2, 3]
    assert sorted(source.sample(batch, 2).dst[1].tolist()) == [1, 3]


def test_snapshot_restore_reproduces_draws():
    sampler = TimeDegreeSampler(N, catalog=CATALOG)
    sampler.observe(make_stream([0, 1, 2], [3, 4, 5], [1, 1, 2]))
    state = sampler.snapshot()
    batch = make_stream([6], [3], [3])
    before = sampler.sample(batch, 3, torch.Generator().manual_seed(1)).dst
    sampler.observe(make_stream([7, 7], [6, 8], [4, 4]))
    sampler.restore(state)
    assert torch.equal(sampler.sample(batch, 3, torch.Generator().manual_seed(1)).dst, before)
    mix = MixtureSampler([PopularitySampler(N, catalog=CATALOG), HistoricalSampler(N, catalog=CATALOG)], [1, 1])
    mix.observe(make_stream([0, 1], [3, 4], [1, 1]))
    state = mix.snapshot()
    mix.observe(make_stream([2], [5], [2]))
    mix.restore(state)
    assert mix.components[0].counts.sum() == 2 and mix.components[1].keys.tolist() == [3, N + 4]


def test_mixture_split_and_columns():
    assert split_count(5, [0.5, 0.5]) == [3, 2]
    assert split_count(1, [0.5, 0.5]) == [1, 0]
    assert split_count(10, [1, 2, 1]) == [3, 5, 2]  # 2.5, 5, 2.5: the first tie wins
    assert split_count(0, [1, 1]) == [0, 0]
    hist = HistoricalSampler(N, catalog=CATALOG, replace=True)
    mix = MixtureSampler([hist, UniformSampler(Catalog("custom", torch.arange(10, 16), None, N), replace=True)],
                         [0.5, 0.5])
    mix.observe(make_stream([0], [1], [1]))
    neg = mix.sample(make_stream([0] * 50, [2] * 50, [2] * 50), 4).dst
    assert (neg[:, :2] == 1).all() and (neg[:, 2:] >= 10).all()
    with pytest.raises(ValueError, match="one proportion per component"):
        MixtureSampler([hist], [0.5, 0.5])
    with pytest.raises(ValueError, match="non-negative"):
        MixtureSampler([hist], [-1])


def test_mixture_counts_cross_component_duplicates():
    one = Catalog("custom", torch.tensor([5]), None, N)
    mix = MixtureSampler([UniformSampler(one), UniformSampler(one)], [1, 1])
    assert mix.sample(make_stream([0, 1], [1, 2], [1, 1]), 2).dst.tolist() == [[5, 5], [5, 5]]
    assert mix.describe()["num_cross_duplicates"] == 2


def test_registry_names_get_and_specs():
    assert {"uniform", "historical", "inductive", "source_history", "time_available", "popularity", "degree",
            "degree_time", "mixture"} <= set(names())
    assert isinstance(get("historical", num_nodes=N, catalog=CATALOG), HistoricalSampler)
    assert parse_spec("popularity:half_life=2.5,replace=true,fallback=error,power=1") == (
        "popularity", {"half_life": 2.5, "replace": True, "fallback": "error", "power": 1})
    data = make_stream([0, 1, 0, 2, 0, 1, 3, 0, 1, 2], [4, 5, 5, 4, 6, 4, 5, 7, 6, 6], list(range(10)))
    split = chronological_split(data)
    catalog = Catalog("custom", torch.arange(8), None, 8)
    built = {name: from_spec(name, data=data, split=split, catalog=catalog) for name in KINDS[:-1] + ["uniform"]}
    assert {name: s.name for name, s in built.items()} == {name: name for name in built}
    assert built["degree"].describe()["graph_edges"] == split.train.end
    pop = from_spec("popularity:half_life=2,fallback=error", data=data, split=split, catalog=catalog)
    assert (pop.half_life, pop.fallback) == (2.0, "error")
    ind = from_spec("inductive", data=data, split=split, catalog=catalog, segment="test")
    assert ind.describe()["segment"] == [split.test.start, split.test.end]
    mix = from_spec("mixture:historical=0.5,uniform=0.5", data=data, split=split, catalog=catalog)
    assert [c.name for c in mix.components] == ["historical", "uniform"] and mix.proportions == [0.5, 0.5]
    with pytest.raises(ValueError, match="unknown sampler 'nope'; registered: .*historical"):
        from_spec("nope", data=data, split=split, catalog=catalog)
    with pytest.raises(ValueError, match=r"takes no option \['colour'\].*options: .*fallback"):
        from_spec("historical:colour=red", data=data, split=split, catalog=catalog)
    with pytest.raises(ValueError, match="not key=value"):
        parse_spec("historical:replace")
    with pytest.raises(ValueError, match="already registered"):
        register("uniform", UniformSampler)


def test_empty_batch_and_zero_k():
    sampler = PopularitySampler(N, catalog=CATALOG)
    empty = TemporalData(src=torch.zeros(0, dtype=torch.long), dst=torch.zeros(0, dtype=torch.long),
                         t=torch.zeros(0, dtype=torch.long))
    assert sampler.sample(empty, 3).dst.shape == (0, 3)
    assert sampler.sample(make_stream([0], [1], [1]), 0).dst.shape == (1, 0)
    with pytest.raises(ValueError, match="num_negatives"):
        sampler.sample(make_stream([0], [1], [1]), -1).dst


def test_generator_seeds_above_2_63_work_everywhere():
    from tgeval.data.catalog import Catalog
    from tgeval.samplers import HistoricalSampler, MixtureSampler, UniformSampler

    catalog = Catalog("custom", torch.arange(10), None, 10)
    batch = make_stream([0, 1], [1, 2], [1, 2])
    generator = torch.Generator().manual_seed(2**63 + 5)
    for sampler in (UniformSampler(catalog), HistoricalSampler(10, catalog=catalog),
                    MixtureSampler([UniformSampler(catalog), HistoricalSampler(10, catalog=catalog)], [0.5, 0.5])):
        first = sampler.sample(batch, 2, generator).dst
        assert torch.equal(torch.as_tensor(first), torch.as_tensor(sampler.sample(batch, 2, generator).dst))


def test_uniform_fallback_draws_only_the_rows_that_need_it():
    from tgeval.data.catalog import Catalog
    from tgeval.samplers import HistoricalSampler

    catalog = Catalog("custom", torch.tensor([1, 2, 3]), None, 10)  # tiny: 2 items left for source 1
    sampler = HistoricalSampler(10, catalog=catalog)
    sampler.observe(make_stream([0, 0, 0], [4, 5, 6], [1, 1, 1]))
    alone = sampler.sample(make_stream([0], [4], [2]), 2, torch.Generator().manual_seed(0)).dst
    # a second source without history falls back to uniform over {1, 2, 3} minus itself
    both = sampler.sample(make_stream([0, 1], [4, 7], [2, 2]), 2, torch.Generator().manual_seed(0)).dst
    assert set(both[0].tolist()) <= {5, 6} and set(both[1].tolist()) == {2, 3}
    assert torch.equal(alone[0], both[0])  # row 0 keeps position 0: the same draws
    assert sampler.describe()["num_fallback_events"] == 1


def test_time_available_fallback_for_the_first_events_and_uniform_log_q():
    from tgeval.data.catalog import Catalog
    from tgeval.samplers import TimeAvailableSampler, UniformSampler

    data = make_stream([0, 1, 2, 3], [5, 6, 7, 5], [1, 2, 3, 9])
    fallback = Catalog("custom", torch.arange(4, 10), None, 10)
    sampler = TimeAvailableSampler(data, num_nodes=10, replace=True, fallback=fallback)
    neg = sampler.sample(data, 3, torch.Generator().manual_seed(0)).dst
    assert set(neg[0].tolist()) <= {4, 6, 7, 8, 9}  # nothing appeared before t=1: fallback (minus the positive 5)
    assert set(neg[3].tolist()) <= {6, 7}  # 5, 6, 7 appeared before t=9; 5 is the positive
    assert sampler.describe()["num_fallback_events"] == 1
    with pytest.raises(SamplerError, match="0 candidate negatives"):
        TimeAvailableSampler(data, num_nodes=10, replace=True).sample(data, 3).dst
    uniform = UniformSampler(Catalog("custom", torch.arange(10), None, 10))
    batch = make_stream([0, 0], [1, 2], [1, 1])
    log_q = uniform.log_q(batch, torch.zeros(2, 4, dtype=torch.long))
    assert torch.allclose(log_q, torch.full((2, 4), -math.log(7.0), dtype=torch.float64))  # pool: 10 - {0, 1, 2}


def test_ids_beyond_num_nodes_are_refused_not_aliased():
    from tgeval.samplers import HistoricalSampler

    sampler = HistoricalSampler(5, fallback="error", short="error")
    with pytest.raises(SamplerError, match=r"\[0, num_nodes=5\)"):
        sampler.observe(make_stream([0], [7], [1]))
    with pytest.raises(SamplerError, match=r"\[0, num_nodes=5\)"):
        sampler.sample(make_stream([6], [1], [2]), 1).dst


#: every registered sampler built from the context alone (the file readers need a file; a mixture its components)
CONTEXT_BUILT = [name for name in names() if name not in ("fixed", "tgb", "mixture")]


def _context():
    data = make_stream([0, 1, 0, 2, 0, 1, 3, 0, 1, 2, 4, 5], [4, 5, 5, 4, 6, 4, 5, 7, 6, 6, 7, 3], list(range(12)))
    return data, dict(catalog=Catalog("custom", torch.arange(8), None, 8), num_nodes=8, data=data,
                      split=chronological_split(data))


@pytest.mark.parametrize("name", CONTEXT_BUILT)
def test_every_sampler_takes_the_same_context_and_returns_negatives(name):
    data, context = _context()
    sampler = get(name, **context, replace=True)
    assert sampler.name == name
    batch = next(iter(TimestampBatchLoader(data[8:], batch_size=4)))
    negatives = sampler.sample(batch, 2, torch.Generator().manual_seed(0))
    assert isinstance(negatives, Negatives) and negatives.dst.shape == (4, 2)
    with pytest.raises(ValueError, match=rf"sampler '{name}' takes no option \['colour'\]"):
        get(name, **context, colour="red")


@pytest.mark.parametrize("name", CONTEXT_BUILT)
def test_a_batch_without_positions_is_refused(name):
    data, context = _context()
    sampler = get(name, **context, replace=True)
    batch = TemporalData(src=data.src[8:], dst=data.dst[8:], t=data.t[8:])  # sliced by hand: no `position`
    with pytest.raises(SamplerError, match="the batch has no `position`.*TimestampBatchLoader"):
        sampler.sample(batch, 2, torch.Generator().manual_seed(0))


def test_inductive_seen_set_train_or_train_and_validation():
    # train: (0,1); validation: (0,2); test: (0,2) again, (0,3), (0,4), then the evaluated event (0,5)
    data = make_stream([0, 0, 0, 0, 0, 0], [1, 2, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6])
    split = chronological_split(data, (1 / 6, 1 / 6, 4 / 6))
    assert (split.train.end, split.val.end) == (1, 2)
    options = dict(data=data, split=split, catalog=CATALOG, segment="test")
    dgb = from_spec("inductive", **options)  # DGB: inductive = in the segment, not in training
    dyglib = from_spec("inductive:seen=train+val", **options)  # DyGLib: training and validation are seen
    assert dgb.keys.tolist() == [2, 3, 4, 5] and dyglib.keys.tolist() == [3, 4, 5]
    batch = make_stream([0], [5], [6], position=torch.tensor([5]))
    assert set(dgb.sample(batch, 3).dst[0].tolist()) == {2, 3, 4}
    assert set(dyglib.sample(batch, 2).dst[0].tolist()) == {3, 4}
    assert (dgb.describe()["seen"], dyglib.describe()["seen"]) == ("train", "train+val")
    assert dyglib.describe()["seen_pairs"] == "events [0, 2)"
    on_val = dict(options, segment="val")  # the two definitions agree on the validation segment
    assert from_spec("inductive", **on_val).keys.tolist() == from_spec("inductive:seen=train+val", **on_val).keys.tolist()
    with pytest.raises(ValueError, match="seen must be one of"):
        from_spec("inductive:seen=all", **options)


def _from_registry(name, data):
    return get(name, catalog=Catalog("custom", torch.arange(8), None, 8), num_nodes=8, data=data,
               split=chronological_split(data), replace=True)


def _negatives(negatives):
    """A sampler's whole answer: the destinations, then the sources of (source-drawing) samplers."""
    return torch.stack([negatives.dst, negatives.dst if negatives.src is None else negatives.src])


def _replay_negatives(sampler, data, k, seed, batch_size):
    """Every batch's whole answer (:func:`_negatives`); a batch without negatives fails the test."""
    draws = sample_replay(sampler, data, k, seed, batch_size)
    assert all(isinstance(x, Negatives) for x in draws), draws
    return [_negatives(x) for x in draws]


@pytest.mark.parametrize("name", CONTEXT_BUILT)
def test_every_registered_sampler_is_leak_free_seeded_pure_and_restorable(name):
    """The sampler contract, for whatever the registry holds (a new sampler is covered by registering it)."""
    data, _ = _context()
    later = data.t > 7
    noise = torch.Generator().manual_seed(1)
    altered = data.clone()
    altered.src = torch.where(later, torch.randint(0, 8, data.src.shape, generator=noise), data.src)
    altered.dst = torch.where(later, (altered.src + torch.randint(1, 8, data.dst.shape, generator=noise)) % 8, data.dst)
    draws = _replay_negatives(_from_registry(name, data), data, 2, 3, 2)
    # no leak: batches that end before the change draw the same, unless the sampler declares the whole stream
    changed = _replay_negatives(_from_registry(name, altered), altered, 2, 3, 2)
    sampler = _from_registry(name, data)
    if not getattr(sampler, "uses_whole_stream", False):
        for (start, end), x, y in zip(TimestampBatchLoader(data, 2).spans(), draws, changed):
            if bool(later[end - 1]):
                break
            assert torch.equal(x, y), (name, start)
    # seeded: the same seed draws the same negatives, another seed others
    assert all(torch.equal(x, y) for x, y in zip(draws, _replay_negatives(_from_registry(name, data), data, 2, 3, 2)))
    assert not all(torch.equal(x, y) for x, y in zip(draws, _replay_negatives(_from_registry(name, data), data, 2, 4, 2)))
    # pure: sampling changes no state; restorable: a snapshot brings back the draws of the rest of the stream
    batches = list(TimestampBatchLoader(data.clone(), 2))
    for batch in batches[:2]:
        sampler.observe(batch)
    state = sampler.snapshot()

    def rest():
        out = []
        for batch in batches[2:]:
            out.append(_negatives(sampler.sample(batch, 2, torch.Generator().manual_seed(5))))
            assert torch.equal(_negatives(sampler.sample(batch, 2, torch.Generator().manual_seed(5))), out[-1])
            sampler.observe(batch)
        return torch.cat(out, 1)

    before = rest()
    sampler.restore(state)
    assert torch.equal(rest(), before), name
