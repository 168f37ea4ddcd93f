"""Personalized PageRank against networkx's pagerank with a one-node personalization."""

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.static import StaticGraph, adjacency
from tgeval.static.ppr import PageRankScorer, pagerank_steps, personalized_pagerank

pytestmark = pytest.mark.usefixtures("one_thread")


def _graph(n, edges):
    edges = sorted({(min(a, b), max(a, b)) for a, b in edges if a != b})
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    return StaticGraph(torch.tensor(edges, dtype=torch.long).reshape(-1, 2).T, n), g


def _networkx(g, u, alpha, tol):
    ref = nx.pagerank(g, alpha=1 - alpha, personalization={u: 1}, tol=tol, max_iter=100_000)
    return torch.tensor([ref[v] for v in range(g.number_of_nodes())], dtype=torch.float64)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 25), edges=st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), max_size=50),
       alpha=st.sampled_from([0.15, 0.5, 0.9]))
def test_ppr_equals_networkx(n, edges, alpha):
    graph, g = _graph(n, [(a % n, b % n) for a, b in edges])  # isolated nodes and self-loops (dropped) included
    ours = personalized_pagerank(adjacency(graph), torch.arange(n), alpha=alpha, tol=1e-13, budget=2 * n)
    for u in range(n):
        assert torch.allclose(ours[u], _networkx(g, u, alpha, 1e-15), rtol=0, atol=1e-11)
    assert torch.allclose(ours.sum(1), torch.ones(n, dtype=torch.float64), atol=1e-12)


def test_ppr_error_is_within_tol_and_vectors_do_not_depend_on_their_block():
    graph, g = _graph(60, [tuple(e) for e in nx.gnp_random_graph(60, 0.08, seed=3).edges()])
    adj = adjacency(graph)
    sources = torch.tensor([5, 0, 17, 5, 59])
    worst = []
    for tol in (1e-2, 1e-5, 1e-8):
        ours = personalized_pagerank(adj, sources, tol=tol)
        worst.append(max(float((ours[i] - _networkx(g, int(u), 0.15, 1e-15)).abs().sum())
                         for i, u in enumerate(sources)))
        assert worst[-1] <= tol
    assert worst[0] > worst[1] > worst[2]  # tol sets the number of steps
    one_by_one = personalized_pagerank(adj, sources, budget=1)
    assert torch.equal(one_by_one, personalized_pagerank(adj, sources))  # bit-identical across blocks
    scorer = PageRankScorer(adj)
    assert torch.equal(scorer(torch.tensor([17, 5]), torch.tensor([3, 40])), one_by_one[[2, 0], [3, 40]])


def test_ppr_rejects_bad_parameters():
    with pytest.raises(ValueError, match="alpha"):
        pagerank_steps(1.0, 1e-7)
    with pytest.raises(ValueError, match="tol"):
        PageRankScorer(adjacency(_graph(3, [(0, 1)])[0]), tol=0.0)
    assert pagerank_steps(0.5, 2 ** -9) == 10  # 2 * 0.5^10 = 2^-9
