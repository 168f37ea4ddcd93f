"""Every registered heuristic ranks the whole catalog through its own vectorised candidate scorer (a block
is ``score`` on the broadcast ``[b, c]`` grid), and its all-entity counts, ranks and metrics equal the
brute force that scores every (event, candidate) pair one by one through ``score``: unlimited, windowed
and decayed, on streams with many simultaneous events, from exact and from batch-start history, under
each tie convention, with and without availability times."""

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval.eval.tuning import Tuning
from tgeval import evaluate
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.errors import SlowPathWarning
from tgeval.eval.metrics import rank_from_counts
from tgeval.models.clock import EventClock
from tgeval.models import registry
from tgeval.models.base import pairwise_scorer, scores_pair_by_pair
from tgeval.eval.protocol import TIE_POLICIES, Protocol
from tgeval.samplers import UniformSampler
from tests.helpers import refusing_catalog_scoring
from tests.strategies import segment_from, streams

N = 9
SAMPLER = UniformSampler(Catalog("custom", torch.arange(N), None, N), replace=True)

#: (registry name, options): every registered parameter-free heuristic, with its windows, half-lives and variants
VARIANTS = [
    ("edgebank", {}), ("edgebank", {"directed": False}), ("edgebank-window", {"window": 3}),
    ("edgebank-window", {"window": 2.5, "anchor": "latest"}), ("membership", {"beta": -0.5, "bias": 0.25}),
    ("node-memory", {}), ("pa", {}), ("popularity", {}), ("popularity", {"half_life": 2.0}),
    ("recency-local", {}), ("recency-local", {"window": 3}), ("recency-global", {}),
    ("recency-global", {"window": 2.5}), ("popularity-local", {}), ("popularity-local", {"window": 3}),
    ("popularity-local", {"half_life": 2.0}), ("popularity-global", {}), ("popularity-global", {"window": 1.5}),
    ("popularity-global", {"half_life": 0.5}), ("popularity", {"half_life": 1.5, "clock": EventClock(2, (3,))}),
    ("popularity-local", {"half_life": 2.0, "clock": EventClock(2, (0, 5))}), ("poptrack", {}),
    ("poptrack", {"clock": EventClock(3, (4, 10))}), ("local-global", {}), ("recency-popularity-local", {}),
    ("recency-popularity-global", {}),
]


def _pair_by_pair(model):
    """``model`` scored pair by pair in all-entity ranking: every (event, candidate) pair expanded and given
    to ``score`` (the reference; the engine's pairwise scorer, set on this instance only)."""
    model.candidate_scorer = lambda src, t, candidates: pairwise_scorer(model.score, src, t, candidates)
    return model


def test_every_registered_heuristic_is_covered_and_has_its_own_scorer():
    assert {name for name, _ in VARIANTS} == set(registry.names("heuristic"))
    for name, options in VARIANTS:
        assert not scores_pair_by_pair(registry.build(name, num_nodes=N, **options)), name


@settings(max_examples=150, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=N, max_time=7), variant=st.sampled_from(VARIANTS),
       start=st.integers(1, 25), batch_size=st.integers(1, 12), budget=st.integers(1, 40),
       history=st.sampled_from(["exact", "batch"]), ties=st.sampled_from(TIE_POLICIES),
       kind=st.sampled_from(["all", "time-available", "range"]), replay=st.sampled_from(["online", "fixed"]))
def test_fast_all_entity_ranks_equal_pair_by_pair(data, variant, start, batch_size, budget, history, ties, kind,
                                                  replay):
    """Counts above / equal the positive (hence its rank under every tie rule) and every all-entity metric
    equal the pair-by-pair brute force; blocks of ``budget`` scores split both events and candidates."""
    name, options = variant
    segment = segment_from(data, min(start, data.num_events - 1))
    catalog = build_catalog(data, kind, num_nodes=N)
    make = lambda: registry.build(name, num_nodes=N, **options)  # noqa: E731
    if replay == "fixed" or not make().capabilities.exact_history:
        history = None if replay == "fixed" else "batch"
    protocol = Protocol(num_negatives=2, batch_size=batch_size, seed=3, ties=ties, replay=replay, history=history)
    run = lambda model: evaluate(model, data, segment, protocol, sampler=SAMPLER,  # noqa: E731
                                 catalog=catalog, tuning=Tuning(candidate_budget=budget, use_shortcut=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)  # the fast path never falls back to pairs
        fast = run(make())
    slow = run(_pair_by_pair(make()))
    for key in ("score", "neg_score", "above", "equal", "candidates"):
        assert torch.equal(fast.records[key], slow.records[key]), (name, options, key)
    for rule in TIE_POLICIES:
        assert torch.equal(rank_from_counts(fast.records["above"], fast.records["equal"], ties=rule),
                           rank_from_counts(slow.records["above"], slow.records["equal"], ties=rule))
    assert fast.metrics["all_entity"] == slow.metrics["all_entity"]


@pytest.mark.parametrize("name, options", VARIANTS)
def test_a_block_is_the_scores_of_its_pairs_for_any_rows_and_columns(name, options):
    """Outside the engine too: any slice or position list of candidates, times in any order (before,
    between and after the stored events), equal ``score`` of the expanded pairs bit for bit."""
    gen = torch.Generator().manual_seed(5)
    src, dst = torch.randint(0, N, (60,), generator=gen), torch.randint(0, N, (60,), generator=gen)
    t = torch.sort(torch.randint(0, 30, (60,), generator=gen)).values
    model = registry.build(name, num_nodes=N, **options)
    model.update(TemporalData(src=src[:40], dst=dst[:40], t=t[:40]))
    rows, times = torch.randint(0, N, (11,), generator=gen), torch.randint(0, 40, (11,), generator=gen)
    candidates = torch.randperm(N, generator=gen)
    scorer = model.candidate_scorer(rows, times, candidates)
    expected = pairwise_scorer(model.score, rows, times, candidates)
    for ev, cand in [(slice(None), slice(None)), (slice(2, 9), slice(1, 6)), (slice(0, 0), slice(None)),
                     (slice(3, 4), torch.tensor([7, 0, 4]))]:
        got = scorer(ev, cand)
        assert got.shape == expected(ev, cand).shape and torch.equal(got, expected(ev, cand)), (ev, cand)


#: the variants whose all-entity counts come from ``catalog_counts`` (order statistics), for every catalog
#: without availability times (EdgeBank's window from batch-start history only)
COUNTED = [variant for variant in VARIANTS if variant not in (
    ("edgebank", {"directed": False}), ("recency-global", {"window": 2.5}), ("popularity-global", {"window": 1.5}),
    ("popularity-global", {"half_life": 0.5}),
    ("popularity-local", {"half_life": 2.0, "clock": EventClock(2, (0, 5))}))]


@settings(max_examples=150, deadline=None)
@given(data=streams(min_events=6, max_events=40, max_nodes=N, max_time=7), variant=st.sampled_from(VARIANTS),
       start=st.integers(1, 25), batch_size=st.integers(1, 12), history=st.sampled_from(["exact", "batch"]),
       kind=st.sampled_from(["all", "time-available", "range", "custom"]), replay=st.sampled_from(["online", "fixed"]))
def test_counted_all_entity_ranks_equal_scored(data, variant, start, batch_size, history, kind, replay):
    """The exact counts of ``catalog_counts`` equal those of scoring every catalog item, from exact and from
    batch-start history (a step of many timestamps: the batch's earlier events as key changes); the counted
    variants never score the catalog."""
    name, options = variant
    segment = segment_from(data, min(start, data.num_events - 1))
    catalog = (Catalog("custom", torch.tensor([0, 2, 3, 5, 8]), None, N) if kind == "custom"
               else build_catalog(data, kind, num_nodes=N))
    make = lambda: registry.build(name, num_nodes=N, **options)  # noqa: E731
    if replay == "fixed" or not make().capabilities.exact_history:
        history = None if replay == "fixed" else "batch"
    protocol = Protocol(num_negatives=2, batch_size=batch_size, seed=3, replay=replay, history=history)
    run = lambda model, shortcut: evaluate(model, data, segment, protocol, sampler=SAMPLER,  # noqa: E731
                                           catalog=catalog, tuning=Tuning(use_shortcut=shortcut))
    counted = variant in COUNTED and catalog.available_from is None and not (
        name == "edgebank-window" and history == "exact")
    fast = run(refusing_catalog_scoring(make()) if counted else make(), True)
    slow = run(make(), False)
    for key in ("score", "above", "equal", "candidates"):
        assert torch.equal(fast.records[key], slow.records[key]), (name, options, key)


#: the pair-keyed variants: counted on the source's stored pairs (dominance counts, ties and earlier pairs scored)
PAIR_KEYED = [("recency-local", {}), ("recency-local", {"window": 3}), ("popularity-local", {}),
              ("popularity-local", {"window": 3}), ("local-global", {}), ("recency-popularity-local", {})]


@settings(max_examples=150, deadline=None)
@given(data=streams(min_events=10, max_events=60, max_nodes=5, max_time=12), variant=st.sampled_from(PAIR_KEYED),
       start=st.integers(1, 50), batch_size=st.integers(1, 25), history=st.sampled_from(["exact", "batch"]))
def test_counted_ranks_on_dense_streams(data, variant, start, batch_size, history):
    """Few nodes, many repeated pairs and ties of the last time: the counts of the pair-keyed heuristics equal
    scoring the catalog."""
    name, options = variant
    segment = segment_from(data, min(start, data.num_events - 1))
    catalog = build_catalog(data, "all", num_nodes=N)
    protocol = Protocol(num_negatives=0, batch_size=batch_size, history=history)
    make = lambda: registry.build(name, num_nodes=N, **options)  # noqa: E731
    fast = evaluate(refusing_catalog_scoring(make()), data, segment, protocol, catalog=catalog)
    slow = evaluate(make(), data, segment, protocol, catalog=catalog, tuning=Tuning(use_shortcut=False))
    for key in ("score", "above", "equal"):
        assert torch.equal(fast.records[key], slow.records[key]), (name, options, key)
