"""Structural-shift splits: batched BFS against networkx (with the link removed), the split rules,
caps and dropped links against plain Python, and the earth mover's distance against scipy."""

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import wasserstein_distance

from tgeval.errors import StaticGraphError
from tgeval.static import StaticGraph, adjacency
from tgeval.static.shift import link_scores, shift_split, shortest_path_lengths, wasserstein_1d

pytestmark = pytest.mark.usefixtures("one_thread")


def _graph(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
    return g, StaticGraph(torch.tensor(edges, dtype=torch.long).T.reshape(2, -1), n)


def _nx_distance(g, u, v, max_depth):
    try:
        d = nx.shortest_path_length(g, u, v)
    except nx.NetworkXNoPath:
        return -1
    return d if d <= max_depth else -1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_depth", [1, 2, 5])
def test_shortest_paths_equal_networkx(seed, max_depth, device):
    g, graph = _graph(30, 0.08, seed)
    adj = adjacency(StaticGraph(graph.edge_index.to(device), 30))
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, 30, (2, 60), generator=gen)
    for budget in (30 * 7, 1 << 22):  # batches of 7 columns, then one batch
        got = shortest_path_lengths(adj, src.to(device), dst.to(device), max_depth=max_depth, budget=budget)
        assert got.cpu().tolist() == [_nx_distance(g, u, v, max_depth) for u, v in zip(src.tolist(), dst.tolist())]
    # each link measured without itself
    u, v = graph.edge_index
    got = shortest_path_lengths(adj, u.to(device), v.to(device), max_depth=max_depth, skip_direct=True)
    expected = []
    for a, b in zip(u.tolist(), v.tolist()):
        h = g.copy()
        h.remove_edge(a, b)
        expected.append(_nx_distance(h, a, b, max_depth))
    assert got.cpu().tolist() == expected


def test_link_scores_equal_networkx():
    g, graph = _graph(40, 0.1, 7)
    u, v = graph.edge_index.tolist()
    cn = [float(len(list(nx.common_neighbors(g, a, b)))) for a, b in zip(u, v)]
    pa = [float(s) for _, _, s in nx.preferential_attachment(g, list(zip(u, v)))]
    assert link_scores(graph, "cn").tolist() == cn
    assert link_scores(graph, "pa").tolist() == pa
    sp = []
    for a, b in zip(u, v):
        h = g.copy()
        h.remove_edge(a, b)
        d = _nx_distance(h, a, b, 3)
        sp.append(0.0 if d < 0 else 1.0 / d)
    assert link_scores(graph, "sp", max_depth=3).tolist() == pytest.approx(sp, abs=0)
    with pytest.raises(ValueError, match="heuristic"):
        link_scores(graph, "ra")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=30),
       st.lists(st.integers(-3, 3), min_size=1, max_size=30))
def test_wasserstein_equals_scipy(a, b):
    got = float(wasserstein_1d(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)))
    assert got == pytest.approx(wasserstein_distance(a, b), abs=1e-9)


@pytest.mark.parametrize("heuristic,thresholds", [("cn", (0, 1)), ("pa", (20, 40)), ("sp", (0.25, 0.4))])
@pytest.mark.parametrize("inverse", [False, True])
def test_shift_split_follows_its_rules(heuristic, thresholds, inverse):
    g, graph = _graph(60, 0.08, 3)
    split = shift_split(graph, heuristic, thresholds, inverse=inverse, max_depth=4)
    h = dict(zip(map(tuple, graph.edge_index.T.tolist()), link_scores(graph, heuristic, max_depth=4).tolist()))
    low, high = thresholds
    rule = {"train": lambda x: x > high if inverse else x <= low, "valid": lambda x: low < x <= high,
            "test": lambda x: x <= low if inverse else x > high}
    train = {e for e, x in h.items() if rule["train"](x)}
    nodes = {x for e in train for x in e}
    assert {tuple(e) for e in split.train.edge_index.T.tolist()} == train
    for name, links in (("valid", split.valid), ("test", split.test)):
        wanted = {e for e, x in h.items() if rule[name](x)}
        kept = {e for e in wanted if e[0] in nodes or e[1] in nodes}
        assert {tuple(e) for e in links.T.tolist()} == kept and not kept & train
        assert split.counts["dropped_isolated"][name] == len(wanted) - len(kept)
        assert split.counts["sizes"][name] == len(kept)
    expected_emd = wasserstein_distance([h[e] for e in train], [h[tuple(e)] for e in split.test.T.tolist()])
    assert split.emd == pytest.approx(expected_emd, abs=1e-12)
    assert split.describe()["emd_train_test"] == split.emd


def test_caps_and_errors():
    _, graph = _graph(60, 0.1, 5)
    free = shift_split(graph, "cn", (0, 1))
    capped = shift_split(graph, "cn", (0, 1), caps=(10, None, 5), seed=2)
    assert capped.counts["sizes"]["train"] == 10 and capped.counts["capped"]["train"] == free.counts["sizes"]["train"] - 10
    assert capped.counts["sizes"]["test"] + capped.counts["dropped_isolated"]["test"] == 5
    assert {tuple(e) for e in capped.train.edge_index.T.tolist()} <= {tuple(e) for e in free.train.edge_index.T.tolist()}
    assert torch.equal(shift_split(graph, "cn", (0, 1), caps=(10, None, 5), seed=2).test, capped.test)
    with pytest.raises(StaticGraphError, match="test split empty"):
        shift_split(graph, "cn", (0, 1000))
    with pytest.raises(StaticGraphError, match="train split empty"):
        shift_split(graph, "pa", (-1, 5))
    with pytest.raises(ValueError, match="i_train <= i_valid"):
        shift_split(graph, "cn", (2, 1))
    with pytest.raises(ValueError, match="caps"):
        shift_split(graph, "cn", (0, 1), caps=(0, None, None))
    with pytest.raises(ValueError, match="max_depth"):
        shortest_path_lengths(adjacency(graph), graph.edge_index[0], graph.edge_index[1], max_depth=0)
