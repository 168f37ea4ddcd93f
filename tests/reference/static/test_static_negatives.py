"""Uniform and degree-corrected negative pairs: never an edge, an excluded pair or a self-loop,
distinct without replacement, typed errors beyond the valid pairs, and the law of the draws
(chi-square of endpoint frequencies against the exact law computed by enumeration)."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from tgeval.errors import SamplerError
from tgeval.static import PairSampler, StaticGraph, random_edge_split

pytestmark = pytest.mark.usefixtures("one_thread")


@st.composite
def graphs(draw):
    n = draw(st.integers(3, 12))
    pairs = list(itertools.combinations(range(n), 2))
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    return StaticGraph(torch.tensor(sorted(chosen)).T.reshape(2, -1), n)


def _valid_pairs(graph, exclude, weighting):
    """Plain-Python: every valid unordered pair with its weight m_a * m_b."""
    degree = graph.degree().tolist()
    edges = {tuple(e) for e in graph.edge_index.T.tolist()}
    edges |= {(min(u, v), max(u, v)) for u, v in exclude.T.tolist()}
    m = [d if weighting == "degree" else int(d > 0) for d in degree]
    return {(a, b): m[a] * m[b] for a, b in itertools.combinations(range(graph.num_nodes), 2)
            if m[a] and m[b] and (a, b) not in edges}


@settings(max_examples=80, deadline=None)
@given(graphs(), st.sampled_from(["uniform", "degree"]), st.integers(0, 2**31), st.booleans(),
       st.integers(0, 60))
def test_negatives_are_never_edges_excluded_pairs_or_self_loops(graph, weighting, seed, replace, num):
    split_exclude = graph.edge_index[:, :1].flip(0)  # a pair given in the other orientation
    extra = torch.tensor([[0], [graph.num_nodes - 1]])
    exclude = torch.cat([split_exclude, extra], dim=1)
    valid = _valid_pairs(graph, exclude, weighting)
    sampler = PairSampler(graph, weighting=weighting, exclude=exclude)
    assert sampler.num_available == len(valid)
    if (num > len(valid) and not replace) or (replace and num and not valid):
        with pytest.raises(SamplerError, match="valid pairs"):
            sampler.sample(num, seed=seed, replace=replace)
        return
    pairs = sampler.sample(num, seed=seed, replace=replace)
    assert pairs.shape == (2, num) and pairs.dtype == torch.long
    drawn = [tuple(p) for p in pairs.T.tolist()]
    assert all(p in valid for p in drawn)  # u < v, no self-loop, no edge, no excluded pair
    if not replace:
        assert len(set(drawn)) == num
    assert torch.equal(sampler.sample(num, seed=seed, replace=replace), pairs)  # counter-based: reproducible


def test_asking_for_every_valid_pair_finishes_exactly(monkeypatch):
    g = StaticGraph(torch.tensor([[0, 0, 1], [1, 2, 2]]), 6)  # triangle; nodes 3..5 isolated
    assert PairSampler(g, weighting="uniform").num_available == 0
    # a star: the valid pairs are the 780 leaf pairs, and the last of them are rarely drawn,
    # so rejection leaves slots open and the exact finish completes them
    star = StaticGraph(torch.stack([torch.zeros(40, dtype=torch.long), torch.arange(1, 41)]), 41)
    finished = []
    original = PairSampler._finish
    monkeypatch.setattr(PairSampler, "_finish", lambda self, slots, *a: finished.append(slots.numel())
                        or original(self, slots, *a))
    for replace in (False, True):
        pairs = PairSampler(star, weighting="degree").sample(780, seed=5, replace=replace)
        drawn = [tuple(p) for p in pairs.T.tolist()]
        assert all(0 < a < b for a, b in drawn)
        if not replace:
            assert sorted(drawn) == list(itertools.combinations(range(1, 41), 2))
    assert finished and finished[0] > 0
    # a clique and one pendant edge: valid pairs join 30 or 31 to the clique, and only ~0.5% of the
    # draws hit one, so with replacement most slots are finished exactly (inverse CDF)
    i, j = torch.triu_indices(30, 30, 1)
    clique = StaticGraph(torch.cat([torch.stack([i, j]), torch.tensor([[30], [31]])], dim=1), 32)
    finished.clear()
    pairs = PairSampler(clique, weighting="degree").sample(3000, seed=1, replace=True)
    assert finished and bool(((pairs[1] >= 30) & (pairs[0] < 30)).all())
    counts = torch.bincount(pairs[0] + 30 * (pairs[1] - 30), minlength=60).double()  # 60 equally likely pairs
    assert chisquare(counts.numpy()).pvalue > 1e-3
    sampler = PairSampler(star, weighting="degree")
    with pytest.raises(SamplerError, match="replace=True"):
        sampler.sample(781, seed=0)
    with pytest.raises(ValueError, match="weighting"):
        PairSampler(star, weighting="popularity")


@pytest.mark.parametrize("weighting", ["uniform", "degree"])
def test_endpoint_frequencies_follow_the_law(weighting):
    # a sparse graph with heterogeneous degrees: hubs 0..2 joined to many nodes
    gen = torch.Generator().manual_seed(0)
    n = 60
    i, j = torch.triu_indices(n, n, 1)
    p = torch.where(i < 3, 0.6, 0.04)
    keep = torch.rand(i.numel(), generator=gen) < p
    graph = StaticGraph(torch.stack([i[keep], j[keep]]), n)
    split = random_edge_split(graph, 0.25, seed=1)
    sampler = PairSampler(split.train, weighting=weighting, exclude=split.test)
    valid = _valid_pairs(split.train, split.test, weighting)
    expected = torch.zeros(n, dtype=torch.float64)
    for (a, b), w in valid.items():
        expected[a] += w
        expected[b] += w
    draws = 60_000
    pairs = sampler.sample(draws, seed=11, replace=True)
    counts = torch.bincount(pairs.flatten(), minlength=n).double()
    cells = expected > 0
    assert counts[~cells].sum() == 0
    f_exp = (expected[cells] / expected.sum() * 2 * draws).numpy()
    assert chisquare(counts[cells].numpy(), f_exp).pvalue > 1e-3
    if weighting == "uniform":
        assert counts[split.train.degree() == 0].sum() == 0


@pytest.mark.parametrize("weighting", ["uniform", "degree"])
def test_endpoint_frequencies_are_proportional_to_degree_on_a_sparse_graph(weighting):
    # 20k nodes of degree <= ~25, so rejection removes at most ~0.5% of any node's partner mass:
    # degree-corrected endpoints must be proportional to degree, uniform ones to the node counts
    gen = torch.Generator().manual_seed(2)
    n = 20_000
    stubs = torch.repeat_interleave(torch.arange(n), torch.randint(1, 13, (n,), generator=gen))
    ends = stubs[torch.randperm(stubs.numel(), generator=gen)][: stubs.numel() // 2 * 2].view(2, -1)
    ends = ends[:, ends[0] != ends[1]]
    keys = torch.unique(torch.minimum(ends[0], ends[1]) * n + torch.maximum(ends[0], ends[1]))
    graph = StaticGraph(torch.stack([keys // n, keys % n]), n)
    degree = graph.degree()
    pairs = PairSampler(graph, weighting=weighting).sample(100_000, seed=7)
    classes = torch.unique(degree[degree > 0])
    observed = torch.stack([(degree[pairs.flatten()] == d).sum() for d in classes]).double()
    mass = torch.stack([((degree == d).sum() * (d if weighting == "degree" else 1)) for d in classes]).double()
    assert chisquare(observed.numpy(), (mass / mass.sum() * observed.sum()).numpy()).pvalue > 1e-3
    other = torch.stack([((degree == d).sum() * (1 if weighting == "degree" else d)) for d in classes]).double()
    assert chisquare(observed.numpy(), (other / other.sum() * observed.sum()).numpy()).pvalue < 1e-9


def test_without_replacement_is_distinct_and_on_the_device(device):
    g = StaticGraph(torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]], device=device), 50)
    pairs = PairSampler(g, weighting="uniform").sample(3, seed=0)
    assert pairs.device == g.device
    big = StaticGraph(torch.stack([torch.arange(0, 999), torch.arange(1, 1000)]).to(device), 1000)
    pairs = PairSampler(big, weighting="degree").sample(20_000, seed=3)
    keys = pairs[0] * 1000 + pairs[1]
    assert torch.unique(keys).numel() == 20_000 and bool((pairs[0] < pairs[1]).all())
    assert not bool(((pairs[1] - pairs[0]) == 1).any())  # no path edge
