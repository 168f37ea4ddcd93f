"""Distributions of the zoo's draws against exact laws (chi-square on small hand-made streams)."""

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from tgeval.data.catalog import Catalog
from tgeval.samplers.degree import DegreeSampler, TimeDegreeSampler
from tgeval.samplers.historical import HistoricalSampler
from tgeval.samplers.inductive import InductiveSampler
from tgeval.samplers.popularity import PopularitySampler
from tgeval.samplers.source_history import SourceHistorySampler
from tgeval.samplers.time_available import TimeAvailableSampler
from tests.conftest import make_stream

N = 10
CATALOG = Catalog("custom", torch.arange(N), None, N)
ROWS = 3000


def big_batch(src, dst, t):
    """ROWS copies of one event, one per replay position (independent counter streams)."""
    batch = make_stream([src] * ROWS, [dst] * ROWS, [t] * ROWS)
    batch.position = torch.arange(ROWS) + 1000
    return batch


def successive_second_draw(w):
    """P(second draw = j) under sampling without replacement proportional to w: sum_i w_i/W * w_j/(W - w_i)."""
    w = np.asarray(w, dtype=float)
    total = w.sum()
    return np.array([sum(w[i] / total * w[j] / (total - w[i]) for i in range(len(w)) if i != j)
                     for j in range(len(w))])


def assert_law(draws, items, probs):
    counts = np.array([(draws == i).sum() for i in items])
    assert counts.sum() == draws.size, "a draw fell outside the support"
    assert chisquare(counts, np.asarray(probs) * draws.size).pvalue > 1e-3


# in-degrees before the batch: node 2 once, 3 twice, 4 three times, 5 four times, 1 (the positive) five times
POPULAR = make_stream([0] * 15, [2, 3, 3, 4, 4, 4, 5, 5, 5, 5, 1, 1, 1, 1, 1], [1] * 15)


@pytest.mark.parametrize("rounds", [None, 0])  # rejection path and exact (Efraimidis–Spirakis) finish
def test_popularity_proportional_to_in_degree(rounds, monkeypatch):
    if rounds is not None:
        monkeypatch.setattr("tgeval.samplers._draw._MAX_DRAWS_PER_ITEM", rounds)
    sampler = PopularitySampler(N, catalog=CATALOG)
    sampler.observe(POPULAR)
    neg = sampler.sample(big_batch(7, 1, 2), 2, torch.Generator().manual_seed(0)).dst.numpy()
    weights = [1, 2, 3, 4]  # nodes 2..5; node 1 is the positive, excluded
    assert_law(neg[:, 0], [2, 3, 4, 5], np.array(weights) / 10)
    assert_law(neg[:, 1], [2, 3, 4, 5], successive_second_draw(weights))
    assert (neg[:, 0] != neg[:, 1]).all()


def test_popularity_with_replacement_power_and_log_q():
    sampler = PopularitySampler(N, catalog=CATALOG, replace=True, power=2.0)
    sampler.observe(POPULAR)
    batch = big_batch(7, 1, 2)
    neg = sampler.sample(batch, 3, torch.Generator().manual_seed(1)).dst
    probs = np.array([1, 4, 9, 16]) / 30  # counts squared
    assert_law(neg.numpy().ravel(), [2, 3, 4, 5], probs)
    q = sampler.log_q(batch[:1], torch.tensor([[2, 3, 4, 5]])).exp()
    assert torch.allclose(q, torch.from_numpy(probs)[None, :], atol=1e-12, rtol=0)


def test_popularity_half_life_weights_recent_events():
    sampler = PopularitySampler(N, catalog=CATALOG, half_life=1.0, replace=True)
    sampler.observe(make_stream([0, 0], [2, 2], [1, 1]))  # two events at t=1
    sampler.observe(make_stream([0], [3], [3]))  # one at t=3: weights 2 * 2**-2 = 0.5 vs 1
    batch = big_batch(7, 1, 4)
    assert_law(sampler.sample(batch, 1, torch.Generator().manual_seed(2)).dst.numpy().ravel(), [2, 3], [1 / 3, 2 / 3])
    assert torch.allclose(sampler.log_q(batch[:1], torch.tensor([[2, 3]])).exp(),
                          torch.tensor([[1 / 3, 2 / 3]], dtype=torch.float64))


# graph: degrees (both endpoints) 0:3, 1:2, 2:2, 3:3, 4:1, 5:1; source 0 has existing edges to 1 and 3
GRAPH = make_stream([0, 0, 1, 2, 3, 0], [1, 3, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6])


@pytest.mark.parametrize("static", [True, False])
def test_degree_corrected_proportional_to_degree_without_existing_edges(static):
    if static:
        sampler = DegreeSampler(N, graph=GRAPH, catalog=CATALOG)
    else:
        sampler = TimeDegreeSampler(N, catalog=CATALOG)
        sampler.observe(GRAPH[:3]), sampler.observe(GRAPH[3:])
    batch = big_batch(0, 4, 9)
    neg = sampler.sample(batch, 1, torch.Generator().manual_seed(3)).dst.numpy().ravel()
    # pool: degree > 0, minus the source 0, the positive 4, and 0's existing edges 1, 3 (and 5) -> {2}
    assert set(neg.tolist()) == {2}
    batch = big_batch(4, 0, 9)  # source 4 (existing edge 4 -> none; 3 -> 4 is the other direction)
    neg = sampler.sample(batch, 2, torch.Generator().manual_seed(4)).dst.numpy()
    weights = [2, 2, 3, 1]  # nodes 1, 2, 3, 5
    assert_law(neg[:, 0], [1, 2, 3, 5], np.array(weights) / 8)
    assert_law(neg[:, 1], [1, 2, 3, 5], successive_second_draw(weights))
    q = sampler.log_q(batch[:1], torch.tensor([[1, 2, 3, 5]])).exp()
    assert torch.allclose(q, torch.tensor([weights], dtype=torch.float64) / 8)


def test_degree_undirected_existing_edges_cover_both_directions():
    sampler = DegreeSampler(N, graph=GRAPH, catalog=CATALOG, directed=False)
    neg = sampler.sample(big_batch(4, 0, 9), 1, torch.Generator().manual_seed(5)).dst.numpy().ravel()
    assert set(neg.tolist()) == {1, 2, 5}  # 3 is a neighbour of 4 (3 -> 4) when undirected


def test_historical_and_source_history_uniform_over_the_source_history():
    history = make_stream([0, 0, 0, 0, 0, 1], [2, 3, 4, 4, 5, 6], [1, 1, 2, 3, 3, 3])
    for cls in (HistoricalSampler, SourceHistorySampler):
        sampler = cls(N, catalog=CATALOG)
        sampler.observe(history)
        neg = sampler.sample(big_batch(0, 3, 5), 1, torch.Generator().manual_seed(6)).dst.numpy().ravel()
        assert_law(neg, [2, 4, 5], [1 / 3] * 3)  # repeats (4 twice) do not weigh more; 6 is another source's


def test_inductive_support_on_a_hand_made_stream():
    # train: (0,1), (0,2); evaluated: (0,2) repeated, (0,3), (0,4) new, (1,5) another source
    data = make_stream([0, 0, 0, 0, 0, 1], [1, 2, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6])
    sampler = InductiveSampler(data, train_end=2, catalog=CATALOG)
    neg = sampler.sample(big_batch(0, 3, 4), 1, torch.Generator().manual_seed(7)).dst.numpy().ravel()
    assert set(neg.tolist()) == {4}  # 2 was seen in training, 3 is the positive, 5 belongs to source 1
    restricted = InductiveSampler(data, train_end=2, start=2, end=4, catalog=CATALOG)  # segment = events 2, 3
    out = restricted.sample(big_batch(0, 1, 4), 1, torch.Generator().manual_seed(7)).dst.numpy().ravel()
    assert set(out.tolist()) == {3}


def test_time_available_support_and_uniformity():
    data = make_stream([0, 1, 2, 3, 0], [5, 6, 7, 5, 8], [1, 2, 3, 9, 10])
    sampler = TimeAvailableSampler(data, num_nodes=N, replace=True)
    neg = sampler.sample(big_batch(0, 5, 9), 1, torch.Generator().manual_seed(8)).dst.numpy().ravel()
    assert_law(neg, [6, 7], [0.5, 0.5])  # appeared before t=9: 5, 6, 7; 5 is the positive, 8 comes later


def test_skewed_weights_follow_the_successive_sampling_law():
    """A heavy item (weight 200) and four light ones (weight 1), K = 3: rows need many draws, and
    stopping early must not condition the result (each row reads one continuous sequence)."""
    heavy = make_stream([0] * 204, [2] * 200 + [3, 4, 5, 6], [1] * 204)
    sampler = PopularitySampler(N, catalog=CATALOG)
    sampler.observe(heavy)
    rows = 20_000
    batch = make_stream([7] * rows, [1] * rows, [2] * rows)
    batch.position = torch.arange(rows) + 5000
    neg = sampler.sample(batch, 3, torch.Generator().manual_seed(1)).dst.numpy()
    weights = [200, 1, 1, 1, 1]
    assert_law(neg[:, 0], [2, 3, 4, 5, 6], np.array(weights) / 204)
    assert_law(neg[:, 1], [2, 3, 4, 5, 6], successive_second_draw(weights))
