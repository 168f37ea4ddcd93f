"""CN, Jaccard, Adamic-Adar, RA and PA on batches of pairs against networkx on small random graphs."""

import networkx as nx
import pytest
import torch

from tgeval.static import StaticGraph, adjacency, heuristic_scores

from tests.conftest import DEVICES

pytestmark = pytest.mark.usefixtures("one_thread")

NX = {
    "jaccard": nx.jaccard_coefficient,
    "aa": nx.adamic_adar_index,
    "ra": nx.resource_allocation_index,
    "pa": nx.preferential_attachment,
}


def _random_graph(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
    return g, StaticGraph(torch.tensor(edges, dtype=torch.long).T.reshape(2, -1), n)


def _reference(g, method, pairs):
    if method == "cn":
        return [float(len(list(nx.common_neighbors(g, u, v)))) for u, v in pairs]
    return [float(s) for _, _, s in NX[method](g, pairs)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["cn", "jaccard", "aa", "ra", "pa"])
@pytest.mark.parametrize("seed", range(4))
def test_heuristics_equal_networkx(method, seed, device):
    n = 30 + 5 * seed
    g, graph = _random_graph(n, 0.05 + 0.05 * seed, seed)
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (2, 400), generator=gen)
    keep = src != dst  # networkx's AA is undefined for u == v (a neighbour of degree 1)
    src, dst = src[keep], dst[keep]
    pairs = list(zip(src.tolist(), dst.tolist()))
    expected = torch.tensor(_reference(g, method, pairs), dtype=torch.float64)
    for map_limit in (0, 1 << 26):  # edge tests by searchsorted, then by the pair map
        adj = adjacency(StaticGraph(graph.edge_index.to(device), n), map_limit=map_limit)
        assert (adj.pair_map is None) == (map_limit == 0)
        for budget in (7, 1 << 22):  # many chunks and one
            got = heuristic_scores(adj, src.to(device), dst.to(device), method, budget=budget)
            assert got.device.type == device
            torch.testing.assert_close(got.cpu(), expected, rtol=1e-12, atol=1e-12)


def test_heuristics_edge_cases():
    # a path 0-1-2 and an isolated node 3
    adj = adjacency(StaticGraph(torch.tensor([[0, 1], [1, 2]]), 4))
    src, dst = torch.tensor([0, 3, 0]), torch.tensor([2, 3, 1])
    assert heuristic_scores(adj, src, dst, "cn").tolist() == [1.0, 0.0, 0.0]
    assert heuristic_scores(adj, src, dst, "jaccard").tolist() == [1.0, 0.0, 0.0]  # empty union: 0
    assert heuristic_scores(adj, src, dst, "pa").tolist() == [1.0, 0.0, 2.0]
    assert heuristic_scores(adj, src[:0], dst[:0], "ra").numel() == 0
    with pytest.raises(ValueError, match="method"):
        heuristic_scores(adj, src, dst, "katz")
    with pytest.raises(ValueError, match="one shape"):
        heuristic_scores(adj, src, dst[:2], "cn")
