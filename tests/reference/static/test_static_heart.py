"""HeaRT-style hard negatives and top-C with exclusions and random ties, against plain Python."""

import networkx as nx
import pytest
import torch

from tgeval.errors import SamplerError
from tgeval.core.rng import counter_uniform
from tgeval.static import StaticGraph, adjacency, heuristic_scores, random_edge_split, top_c
from tgeval.static.heart import heart_negatives, heart_ranking
from tgeval.static.ppr import PageRankScorer
from tgeval.static.recommend import _TIE_ROUND

pytestmark = pytest.mark.usefixtures("one_thread")


def _split(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
    return random_edge_split(StaticGraph(torch.tensor(edges).T.reshape(2, -1), n), 0.3, seed=seed)


def _python_top(adj, graph, method, x, k, seed):
    """Non-edges of x in the whole graph, by (score desc, tie key asc)."""
    n = graph.num_nodes
    edges = {tuple(e) for e in graph.edge_index.T.tolist()}
    scorer = PageRankScorer(adj) if method == "ppr" else (lambda u, v: heuristic_scores(adj, u, v, method))
    score = scorer(torch.full((n,), x), torch.arange(n)).tolist()  # PPR's own reference: test_static_ppr
    tie = counter_uniform(seed, x * n + torch.arange(n), _TIE_ROUND, 1)[:, 0].tolist()
    cands = [w for w in range(n) if w != x and (min(x, w), max(x, w)) not in edges]
    return sorted(cands, key=lambda w: (-score[w], tie[w]))[:k]


@pytest.mark.parametrize("method", ["cn", "ra", "ppr"])
@pytest.mark.parametrize("seed", range(3))
def test_heart_negatives_equal_plain_python(method, seed):
    split = _split(30, 0.2, seed)
    adj = adjacency(split.train)
    m = 7  # 4 keep u, 3 keep v
    negatives = heart_negatives(adj, split.graph, split.test, m, heuristic=method, seed=seed)
    pairs = negatives.pairs
    assert pairs.shape == (2, split.test.size(1), m) and negatives.num_short == 0
    for i, (u, v) in enumerate(split.test.T.tolist()):
        assert pairs[0, i, :4].tolist() == [u] * 4 and pairs[1, i, 4:].tolist() == [v] * 3
        assert pairs[1, i, :4].tolist() == _python_top(adj, split.graph, method, u, 4, seed)
        assert pairs[0, i, 4:].tolist() == _python_top(adj, split.graph, method, v, 3, seed)
    # top_c with the same exclusions and ties, in small blocks
    nodes = torch.arange(30)
    got = top_c(adj, PageRankScorer(adj) if method == "ppr" else method, nodes, 5, exclude=split.graph.keys(),
                tie_seed=seed, budget=40)
    for x in range(30):
        expected = _python_top(adj, split.graph, method, x, 5, seed)
        assert got[x].tolist() == expected + [-1] * (5 - len(expected))


def test_heart_ranking_equals_plain_python():
    split = _split(40, 0.15, 1)
    adj = adjacency(split.train)
    negatives = heart_negatives(adj, split.graph, split.test, 10, heuristic="ra", seed=4)
    got = heart_ranking(adj, split.test, negatives, "cn", ties="average", hits=(1, 3, 50))
    pos = heuristic_scores(adj, split.test[0], split.test[1], "cn").tolist()
    rr, h1, h3 = [], [], []
    for i, p in enumerate(pos):
        neg = heuristic_scores(adj, negatives.pairs[0, i], negatives.pairs[1, i], "cn").tolist()
        rank = 1 + sum(s > p for s in neg) + 0.5 * sum(s == p for s in neg)
        rr.append(1 / rank)
        h1.append(rank <= 1)
        h3.append(rank <= 3)
    assert got["mrr"] == pytest.approx(sum(rr) / len(rr), abs=1e-12)
    assert got["hits@1"] == pytest.approx(sum(h1) / len(h1)) and got["hits@3"] == pytest.approx(sum(h3) / len(h3))
    assert "hits@50" not in got  # beyond M


def test_heart_errors_and_replacement():
    # a star 0-1..5 plus edge 6-7: node 0 has non-edges 6, 7 only
    g = StaticGraph(torch.tensor([[0, 0, 0, 0, 0, 6], [1, 2, 3, 4, 5, 7]]), 8)
    adj = adjacency(g)
    pos = torch.tensor([[0], [1]])
    with pytest.raises(SamplerError, match="non-edges"):
        heart_negatives(adj, g, pos, 6)
    negatives = heart_negatives(adj, g, pos, 6, replace=True)
    assert negatives.num_short == 1
    assert sorted(set(negatives.pairs[1, 0, :3].tolist())) == [6, 7]  # repeated cyclically
    with pytest.raises(ValueError, match="heuristic"):
        heart_negatives(adj, g, pos, 2, heuristic="pa")
    with pytest.raises(ValueError, match="num"):
        heart_negatives(adj, g, pos, 0)
