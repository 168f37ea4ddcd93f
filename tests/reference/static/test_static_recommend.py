"""Top-C, VCMPR@C and RBO against plain-Python references (and RBO's worked example)."""

import itertools
import random

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.static import (StaticGraph, adjacency, agreement, heuristic_scores, method_ranking, random_edge_split,
                           rank_biased_overlap, top_c, vcmpr_per_node)

pytestmark = pytest.mark.usefixtures("one_thread")


def _split(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
    return random_edge_split(StaticGraph(torch.tensor(edges).T.reshape(2, -1), n), 0.3, seed=seed)


def _python_top_c(train_edges, n, score, c, u):
    """Sort u's non-training candidates by (score desc, id asc); pad with -1."""
    cands = [v for v in range(n) if v != u and (min(u, v), max(u, v)) not in train_edges]
    ranked = sorted(cands, key=lambda v: (-score[v], v))[:c]
    return ranked + [-1] * (c - len(ranked))


@pytest.mark.parametrize("method", ["cn", "jaccard", "aa", "ra", "pa"])
@pytest.mark.parametrize("seed", range(3))
def test_top_c_and_vcmpr_equal_plain_python(method, seed):
    n, c = 25, 4
    split = _split(n, 0.25, seed)
    adj = adjacency(split.train)
    train_edges = {tuple(e) for e in split.train.edge_index.T.tolist()}
    test_edges = {tuple(e) for e in split.test.T.tolist()}
    sources = torch.tensor(sorted({x for e in test_edges for x in e}))
    for budget in (30, 1 << 20):  # blocks of rows and of candidates, then one block
        got = top_c(adj, method, sources, c, budget=budget)
        expected = []
        for u in sources.tolist():
            score = heuristic_scores(adj, torch.full((n,), u), torch.arange(n), method).tolist()
            expected.append(_python_top_c(train_edges, n, score, c, u))
        assert got.tolist() == expected
    values = vcmpr_per_node(got, sources, split.test, n)
    reference = []
    for u, row in zip(sources.tolist(), got.tolist()):
        mine = {v for a, b in test_edges for v in (a, b) if u in (a, b) and v != u}
        hits = sum(v in mine for v in row if v >= 0)
        reference.append(max(hits / c, hits / len(mine)))
    torch.testing.assert_close(values, torch.tensor(reference, dtype=torch.float64))


def test_top_c_pads_short_candidate_lists_and_vcmpr_refuses_sources_without_test_edges():
    g = StaticGraph(torch.tensor([[0, 0, 1], [1, 2, 2]]), 4)  # triangle + node 3
    top = top_c(adjacency(g), "cn", torch.tensor([0]), 3)
    assert top.tolist() == [[3, -1, -1]]  # only 3 is a non-training candidate of 0
    with pytest.raises(ValueError, match="c must be"):
        top_c(adjacency(g), "cn", torch.tensor([0]), 0)
    with pytest.raises(ValueError, match="at least one test edge"):
        vcmpr_per_node(top, torch.tensor([1]), torch.tensor([[0], [3]]), 4)
    # 0's test edge (0, 3) is its first recommendation: VCMPR = 1 / min(3, 1)
    assert vcmpr_per_node(top, torch.tensor([0]), torch.tensor([[3], [0]]), 4).tolist() == [1.0]


def _rbo_series(first, second, p, depth=3000):
    """RBO from its definition (1 - p) sum_d p^(d-1) A_d, the lists' agreement at depths beyond k
    extrapolated as the agreement at depth k (Webber et al. 2010, section 4.3), summed to ``depth``."""
    k, total = len(first), 0.0
    for d in range(1, depth + 1):
        if d <= k:
            a = len(set(first[:d]) & set(second[:d])) / d
        else:
            a = len(set(first) & set(second)) / k
        total += (1 - p) * p ** (d - 1) * a
    return total


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**20), st.floats(0.05, 0.95), st.integers(0, 4))
def test_rbo_equals_its_series_definition(k, seed, p, foreign):
    rng = random.Random(seed)
    items = [f"m{i}" for i in range(k + foreign)]
    first = rng.sample(items, k)
    second = rng.sample(items, k)
    assert agreement(first, second) == [len(set(first[:d]) & set(second[:d])) / d for d in range(1, k + 1)]
    assert rank_biased_overlap(first, second, p) == pytest.approx(_rbo_series(first, second, p), abs=1e-12)


def test_rbo_worked_example_and_bounds():
    # Webber, Moffat & Zobel (2010), Figure 5: S = abcdefg, T = zcavwxy; the agreements are
    # 0, 0, 2/3, 2/4, 2/5, 2/6, 2/7 and the average overlap to depth 7 is 0.312
    a = agreement(list("abcdefg"), list("zcavwxy"))
    assert a == pytest.approx([0, 0, 2 / 3, 2 / 4, 2 / 5, 2 / 6, 2 / 7])
    assert round(sum(a) / 7, 3) == 0.312
    for first, second in itertools.product(itertools.permutations("abc"), repeat=2):
        value = rank_biased_overlap(first, second, 0.5)
        assert 0.0 <= value <= 1.0 and (value == 1.0) == (first == second)
    assert rank_biased_overlap(list("ab"), list("cd"), 0.9) == 0.0
    with pytest.raises(ValueError, match="one length"):
        rank_biased_overlap(["a"], ["a", "b"], 0.5)
    with pytest.raises(ValueError, match="repeat"):
        agreement(["a", "a"], ["a", "b"])
    with pytest.raises(ValueError, match="p must"):
        rank_biased_overlap(["a"], ["a"], 1.0)


def test_method_ranking_orders_by_value_then_name_with_nan_last():
    assert method_ranking({"cn": 0.5, "aa": 0.7, "ra": 0.5, "pa": float("nan")}) == ["aa", "cn", "ra", "pa"]
