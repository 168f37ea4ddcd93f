"""Static graphs: cleaning counts of from_pyg, the temporal projection and the random edge split,
against plain-Python references; typed errors for empty graphs and impossible splits."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data, TemporalData

from tgeval.errors import StaticGraphError
from tgeval.static import StaticGraph, from_pyg, random_edge_split, static_graph
from tgeval.static.graph import before

pytestmark = pytest.mark.usefixtures("one_thread")


def test_from_pyg_counts_each_removal():
    # columns: (0,1) (1,0) (0,1) (2,2) (1,2) (3,3) -> edges {0,1}, {1,2};
    # self-loops (2,2), (3,3): 2; duplicates: the second (0,1): 1; reverse: (1,0) merged into {0,1}: 1
    ei = torch.tensor([[0, 1, 0, 2, 1, 3], [1, 0, 1, 2, 2, 3]])
    g = from_pyg(Data(edge_index=ei, num_nodes=5))
    assert g.edge_index.tolist() == [[0, 1], [1, 2]]
    assert g.num_nodes == 5 and g.weight is None
    assert g.removals() == {"self_loops": 2, "duplicates": 1, "reverse": 1}
    assert g.degree().tolist() == [1, 2, 1, 0, 0]
    assert g.to_pyg().edge_index.size(1) == 4
    assert from_pyg(Data(edge_index=ei)).num_nodes == 4  # inferred as max id + 1 (without PyG's warning)
    assert from_pyg(Data(edge_index=ei, x=torch.ones(6, 1))).num_nodes == 6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=40))
def test_from_pyg_matches_a_set_reference(columns):
    ei = torch.tensor(columns).T
    loops = sum(u == v for u, v in columns)
    directed = {(u, v) for u, v in columns if u != v}
    undirected = {(min(u, v), max(u, v)) for u, v in directed}
    if not undirected:
        with pytest.raises(StaticGraphError, match="no edge"):
            from_pyg(Data(edge_index=ei, num_nodes=7))
        return
    g = from_pyg(Data(edge_index=ei, num_nodes=7))
    assert [tuple(e) for e in g.edge_index.T.tolist()] == sorted(undirected)
    assert g.removals() == {"self_loops": loops, "duplicates": len(columns) - loops - len(directed),
                            "reverse": len(directed) - len(undirected)}


def test_bad_input_gets_typed_errors():
    with pytest.raises(StaticGraphError, match="no edge"):
        from_pyg(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3))
    with pytest.raises(StaticGraphError, match=r"num_nodes=2"):
        from_pyg(Data(edge_index=torch.tensor([[0], [5]]), num_nodes=2))
    with pytest.raises(TypeError, match="edge_index"):
        from_pyg(Data(x=torch.ones(3, 1)))
    with pytest.raises(TypeError, match="integer"):
        from_pyg(Data(edge_index=torch.tensor([[0.0], [1.0]]), num_nodes=2))
    events = TemporalData(src=torch.tensor([0, 1]), dst=torch.tensor([1, 2]), t=torch.tensor([5, 6]))
    with pytest.raises(StaticGraphError, match="before t=5"):
        static_graph(events, end=5)


def test_static_graph_projects_events_before_end_with_multiplicities():
    src = [0, 1, 0, 2, 3, 3, 0]
    dst = [1, 0, 1, 2, 4, 0, 4]
    t = [1, 2, 2, 3, 4, 9, 10]
    events = TemporalData(src=torch.tensor(src), dst=torch.tensor(dst), t=torch.tensor(t))
    g = static_graph(events, end=9.5, num_nodes=6)
    # before 9.5: {0,1} x3 events, (2,2) a self-loop, {3,4} x1, {0,3} x1 (t=9)
    assert g.edge_index.tolist() == [[0, 0, 3], [1, 3, 4]]
    assert g.weight.tolist() == [3.0, 1.0, 1.0]
    assert g.removals() == {"self_loops": 1, "duplicates": 1, "reverse": 1}
    assert static_graph(events).num_edges == 4 and static_graph(events).num_nodes == 5


@pytest.mark.parametrize("offset", [0, 2**53 + 1, 2**62, -2**62])
def test_end_projects_the_same_events_at_every_magnitude(offset):
    # a float end near 2^62 moved the bound by up to 512 (and torch compared int64 with a float in float32)
    src, dst = torch.arange(1000) % 7, torch.arange(1000) % 5 + 7
    t = torch.arange(1000, dtype=torch.long) * 3
    shifted = TemporalData(src=src, dst=dst, t=t + offset)
    for end in (2997, 2998, 1500, 1):
        expected = int((t < end).sum())
        assert int(before(shifted.t, str(end + offset)).sum()) == expected
        assert int(before(shifted.t, end + offset).sum()) == expected
        assert static_graph(shifted, end=end + offset).removals()["duplicates"] == max(expected - 35, 0)
    assert int(before(t.double() + 0.5, "1000.5").sum()) == 334  # floats: t + 0.5 < 1000.5 for t < 1000


@pytest.mark.parametrize("end", [float("nan"), float("inf"), "nan", "-inf", "soon"])
def test_end_that_is_no_finite_number_is_refused(end):
    events = TemporalData(src=torch.tensor([0, 1]), dst=torch.tensor([1, 2]), t=torch.tensor([1, 2]))
    with pytest.raises(StaticGraphError, match="is no finite number"):
        static_graph(events, end=end)


def _graph(n, p, seed):
    gen = torch.Generator().manual_seed(seed)
    i, j = torch.triu_indices(n, n, 1)
    keep = torch.rand(i.numel(), generator=gen) < p
    return StaticGraph(torch.stack([i[keep], j[keep]]), n)


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5])
def test_random_edge_split_partitions_the_edges(fraction):
    g = _graph(40, 0.2, seed=1)
    split = random_edge_split(g, fraction, seed=3)
    train = {tuple(e) for e in split.train.edge_index.T.tolist()}
    test = {tuple(e) for e in split.test.T.tolist()}
    assert len(test) == round(fraction * g.num_edges) and not train & test
    assert train | test == {tuple(e) for e in g.edge_index.T.tolist()}
    assert split.train.num_nodes == g.num_nodes
    assert torch.equal(split.test_keys(), torch.sort(split.test_keys()).values)
    again = random_edge_split(g, fraction, seed=3)
    assert torch.equal(again.test, split.test)
    assert not torch.equal(random_edge_split(g, fraction, seed=4).test, split.test)


def test_random_edge_split_keeps_weights_and_refuses_empty_parts():
    events = TemporalData(src=torch.tensor([0, 0, 1, 2]), dst=torch.tensor([1, 1, 2, 3]), t=torch.arange(4))
    g = static_graph(events)
    split = random_edge_split(g, 0.34, seed=0)
    assert split.train.weight.numel() == split.train.num_edges == 2
    with pytest.raises(StaticGraphError, match="both must be >= 1"):
        random_edge_split(g, 0.01)
    with pytest.raises(StaticGraphError, match="both must be >= 1"):
        random_edge_split(g, 0.99)
    with pytest.raises(ValueError, match="test_fraction"):
        random_edge_split(g, 1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_before_compares_float_times_exactly(dtype):
    """2^24 is a float32 time; the bound 2^24 + 1 is not one, and must not round onto it."""
    t = torch.tensor([16_777_216.0, 16_777_218.0], dtype=dtype)
    assert before(t, "16777217").tolist() == [True, False]
    assert before(t, 16_777_216).tolist() == [False, False]
