"""Static link prediction on bipartite graphs: sides, negatives, the two-sided PA formula, the
length-3 heuristics, recommendation and HeaRT candidates, the report and ``tgeval static``.

Sampling tolerances come from the standard error of the AUROC: under the null (positives and
negatives scored alike) the Mann-Whitney statistic of ``P`` positives and ``N`` negatives has
standard error ``sqrt((P + N + 1) / (12 P N))``; around a value ``A`` the Hanley-McNeil standard
error applies. A test allows 4 standard errors (two-sided: a false alarm once in about 16,000 runs).
"""

import json
import math

import networkx as nx
import pytest
import torch
from torch_geometric.data import Data

from tests.conftest import require_dataset
from tests.helpers import snap_text
from tgeval.cli.program import main
from tgeval.data.datasets import load_dataset
from tgeval.data.synthetic import generate_events
from tgeval.errors import StaticGraphError
from tgeval.eval.metrics import auroc
from tgeval.static import (PairSampler, StaticGraph, adjacency, benchmark_of, from_pyg, heart_negatives,
                           heuristic_scores, lognormal_sigma, pa_auroc_analytic, random_edge_split, run_static,
                           shift_split, static_graph, top_c)
from tgeval.static.gnn import GNNConfig

pytestmark = pytest.mark.usefixtures("one_thread")


def lognormal_bipartite(n_src: int, n_dst: int, mu: float, sigma_src: float, sigma_dst: float,
                        seed: int) -> StaticGraph:
    """A configuration-model bipartite graph: source degrees ``round(exp(N(mu, sigma_src^2)))``,
    destination degrees proportional to ``exp(N(0, sigma_dst^2))`` with the same total (largest
    remainders), stubs paired by a random permutation (repeated pairs merged)."""
    g = torch.Generator().manual_seed(seed)
    k_src = torch.exp(mu + sigma_src * torch.randn(n_src, generator=g, dtype=torch.float64)).round().clamp(min=1).long()
    total = int(k_src.sum())
    share = torch.exp(sigma_dst * torch.randn(n_dst, generator=g, dtype=torch.float64))
    share = share / share.sum() * total
    k_dst = share.floor().long()
    k_dst[torch.argsort(share - k_dst, descending=True)[: total - int(k_dst.sum())]] += 1
    src = torch.repeat_interleave(torch.arange(n_src), k_src)
    dst = torch.repeat_interleave(torch.arange(n_dst), k_dst)[torch.randperm(total, generator=g)] + n_src
    return from_pyg(Data(edge_index=torch.stack([src, dst]), num_nodes=n_src + n_dst), dst_offset=n_src)


def null_se(p: int, n: int) -> float:
    return math.sqrt((p + n + 1) / (12 * p * n))


def hanley_mcneil_se(a: float, p: int, n: int) -> float:
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    return math.sqrt((a * (1 - a) + (p - 1) * (q1 - a * a) + (n - 1) * (q2 - a * a)) / (p * n))


def pa_auroc(degree: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor) -> float:
    pairs = torch.cat([pos, neg], dim=1)
    scores = degree[pairs[0]].double() * degree[pairs[1]].double()
    return float(auroc(scores, torch.arange(pairs.size(1)) < pos.size(1)))


def _small(seed=0, n_src=40, n_dst=25, events=400):
    data = generate_events(events, n_src + n_dst, bipartite=True, num_sources=n_src, seed=seed)
    return data, static_graph(data, dst_offset=n_src)


def test_sides_are_checked_and_described():
    graph = StaticGraph(torch.tensor([[0, 0, 1], [2, 3, 3]]), 5, dst_offset=2)
    assert graph.bipartite and graph.side().tolist() == [False, False, True, True, True]
    assert graph.describe_sides() == {"kind": "bipartite", "dst_offset": 2, "source_nodes": 2, "destination_nodes": 2}
    assert StaticGraph(graph.edge_index, 5).describe_sides() == {"kind": "unipartite"}
    with pytest.raises(StaticGraphError, match="one side"):
        StaticGraph(torch.tensor([[0, 2], [1, 3]]), 4, dst_offset=2)  # 0-1 within the source side
    with pytest.raises(StaticGraphError, match="side empty"):
        StaticGraph(graph.edge_index, 5, dst_offset=5)
    data = generate_events(200, 30, bipartite=True, num_sources=10, seed=1)
    assert static_graph(data, dst_offset=10).dst_offset == 10
    with pytest.raises(StaticGraphError, match="one side"):
        static_graph(data, dst_offset=5)  # sources 5..9 would be destinations


def test_negatives_join_the_sides_and_count_the_valid_pairs():
    _, graph = _small()
    d, n = graph.dst_offset, graph.num_nodes
    edges = set(map(tuple, graph.edge_index.T.tolist()))
    degree = graph.degree()
    for weighting in ("uniform", "degree"):
        sampler = PairSampler(graph, weighting=weighting)
        valid = {(a, b) for a in range(d) for b in range(d, n) if degree[a] > 0 and degree[b] > 0} - edges
        assert sampler.num_available == len(valid)
        every = sampler.sample(sampler.num_available, seed=3)  # the rejection rounds, then the exact finish
        assert set(map(tuple, every.T.tolist())) == valid
        assert "one endpoint from each side" in sampler.describe()["draw"]


def test_degree_corrected_draws_follow_the_stubs_of_each_side():
    # P((a, b)) ∝ m_a m_b over the valid pairs, m the stub counts: every pair's count within 5 standard errors
    graph = StaticGraph(torch.tensor([[0, 0, 1, 2, 2, 2], [3, 4, 5, 3, 4, 6]]), 7, dst_offset=3)
    stubs = torch.tensor([[0, 2, 2, 1], [3, 4, 6, 6]])  # e.g. test edges (either orientation allowed)
    sampler = PairSampler(graph, weighting="degree", stubs=stubs.flip(0))
    m = torch.bincount(stubs.flatten(), minlength=7).double()
    edges = set(map(tuple, graph.edge_index.T.tolist()))
    valid = [(a, b) for a in range(3) for b in range(3, 7) if m[a] * m[b] > 0 and (a, b) not in edges]
    assert sampler.num_available == len(valid) == 4  # (0, 6), (1, 3), (1, 4), (1, 6): m = 0 at node 5
    draws = 200_000
    pairs = sampler.sample(draws, seed=1, replace=True)
    weight = torch.tensor([float(m[a] * m[b]) for a, b in valid])
    prob = weight / weight.sum()
    counts = torch.tensor([int(((pairs[0] == a) & (pairs[1] == b)).sum()) for a, b in valid], dtype=torch.float64)
    assert int(counts.sum()) == draws
    z = (counts - draws * prob) / torch.sqrt(draws * prob * (1 - prob)).clamp(min=1e-12)
    assert bool((z.abs() < 5).all())
    with pytest.raises(StaticGraphError, match="join its two sides"):
        PairSampler(graph, weighting="degree", stubs=torch.tensor([[0], [1]]))
    with pytest.raises(ValueError, match="weighting='degree'"):
        PairSampler(graph, weighting="uniform", stubs=stubs)


def _paths3(g: nx.Graph, u: int, v: int, f) -> float:
    return sum(f(a) * f(b) for a in g[u] for b in g[v] if b in g[a] and a != v and b != u)


@pytest.mark.parametrize("method", ["cn", "aa", "ra"])
def test_bipartite_heuristics_count_paths_of_length_3(method):
    _, graph = _small(seed=2)
    adj = adjacency(graph)
    g = nx.Graph(graph.edge_index.T.tolist())
    g.add_nodes_from(range(graph.num_nodes))
    k = dict(g.degree())
    f = {"cn": lambda w: 1.0, "ra": lambda w: 1.0 / k[w], "aa": lambda w: 1.0 / math.log(k[w])}[method]
    d, n = graph.dst_offset, graph.num_nodes
    u, v = torch.meshgrid(torch.arange(d), torch.arange(d, n), indexing="ij")  # every cross pair, edges included
    got = heuristic_scores(adj, u.flatten(), v.flatten(), method, budget=4 * n)  # several blocks of sources
    want = torch.tensor([_paths3(g, a, b, f) for a, b in zip(u.flatten().tolist(), v.flatten().tolist())],
                        dtype=torch.float64)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12) and float(want.max()) > 0
    # one source against every destination: the rows are built for the other endpoint
    row = heuristic_scores(adj, torch.full((n - d,), 3), torch.arange(d, n), method)
    assert torch.allclose(row, want.view(d, n - d)[3], rtol=1e-12, atol=1e-12)
    same = heuristic_scores(adj, torch.tensor([0, d]), torch.tensor([1, d + 1]), method)  # within one side
    assert same.tolist() == [0.0, 0.0]


def test_jaccard_does_not_apply_to_bipartite_graphs():
    _, graph = _small()
    with pytest.raises(StaticGraphError, match="jaccard does not apply to a bipartite graph"):
        heuristic_scores(adjacency(graph), torch.tensor([0]), torch.tensor([graph.dst_offset]), "jaccard")


def test_recommendations_and_hard_negatives_lie_on_the_other_side():
    _, graph = _small(seed=3)
    d = graph.dst_offset
    split = random_edge_split(graph, 0.25, seed=0)
    adj = adjacency(split.train)
    sources = torch.tensor([0, 1, d, d + 1])
    top = top_c(adj, "cn", sources, 10)
    other = torch.where(sources[:, None] < d, top >= d, (top < d) & (top >= 0))
    assert bool(other[top >= 0].all()) and bool((top >= 0).any())
    hard = heart_negatives(adj, graph, split.test, 4, heuristic="cn", seed=0, replace=True)
    a, b = hard.pairs[0], hard.pairs[1]
    assert bool(((a < d) != (b < d)).all())  # every hard negative joins the two sides
    edges = set(map(tuple, graph.edge_index.T.tolist()))
    assert not {(min(x, y), max(x, y)) for x, y in zip(a.flatten().tolist(), b.flatten().tolist())} & edges


def test_shift_split_scores_bipartite_links_by_paths_of_length_3():
    _, graph = _small(seed=4)
    split = shift_split(graph, "cn", (1.0, 3.0), seed=0)
    g = nx.Graph(graph.edge_index.T.tolist())
    for name in ("valid", "test"):
        links = getattr(split, name)
        want = [_paths3(g, u, v, lambda w: 1.0) for u, v in links.T.tolist()]
        assert split.scores[name].tolist() == want
    assert split.describe()["score"] == "paths of length 3 (bipartite)"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pa_on_lognormal_bipartite_graphs(seed):
    graph = lognormal_bipartite(10_000, 3_000, 2.0, 0.5, 1.0, seed)
    bench = benchmark_of(random_edge_split(graph, 0.25, seed=seed))
    test, d = bench.split.test, graph.dst_offset
    for neg in bench.negatives.values():
        assert bool(((neg[0] < d) & (neg[1] >= d)).all())
    p = test.size(1)
    # degree-corrected: PA (training degrees, as the report scores it) at chance
    corrected = pa_auroc(bench.split.train.degree(), test, bench.negatives["degree_corrected"])
    assert abs(corrected - 0.5) <= 4 * null_se(p, p)
    # uniform: the two-sided formula, on the degrees it describes (whole graph: the positives are
    # size-biased endpoints of these degrees, each side log-normal)
    degree = graph.degree()
    uniform = pa_auroc(degree, test, bench.negatives["uniform"])
    sigma_src, sigma_dst = lognormal_sigma(degree[:d]), lognormal_sigma(degree[d:])
    analytic = float(pa_auroc_analytic(sigma_src, sigma_dst))
    assert abs(uniform - analytic) <= 4 * hanley_mcneil_se(analytic, p, p)
    # ... which the unipartite formula on both sides' degrees together fails
    assert abs(float(pa_auroc_analytic(lognormal_sigma(degree))) - uniform) > 4 * hanley_mcneil_se(analytic, p, p)


def test_report_and_cli_follow_the_sides(tmp_path, capsys):
    data, graph = _small(seed=5, n_src=60, n_dst=30, events=900)
    report = run_static(random_edge_split(graph, 0.25, seed=1), tmp_path / "lib", c=5,
                        methods=("cn", "jaccard", "ra", "pa", "gcn"), heart=("cn", 2), gnn=GNNConfig(dim=8, epochs=5))
    assert report["sides"] == graph.describe_sides()
    assert set(report["not_applicable"]) == {"jaccard"} and "jaccard" not in report["vcmpr_at_c"]
    assert set(report["benchmarks"]["uniform"]) == {"cn", "ra", "pa", "gcn"}
    assert "jaccard" not in report["heart"]["methods"]
    assert report["protocol"]["benchmarks"]["degree_corrected"]["stubs"].startswith("the test edges")
    train = random_edge_split(graph, 0.25, seed=1).train.degree()
    sides = {name: float(lognormal_sigma(x)) for name, x in (("source", train[:60]), ("destination", train[60:]))}
    assert report["sigma_sides"]["source"]["sigma"] == pytest.approx(sides["source"], rel=1e-12)
    assert report["sigma_sides"]["destination"]["sigma"] == pytest.approx(sides["destination"], rel=1e-12)
    phi = 0.5 * (1 + math.erf(math.sqrt((sides["source"] ** 2 + sides["destination"] ** 2) / 2) / math.sqrt(2)))
    assert report["pa_auroc_analytic"] == pytest.approx(phi, rel=1e-12)
    assert report["pa_auroc_formula"] == "Phi(sqrt((sigma_source^2 + sigma_destination^2) / 2))"
    with pytest.raises(StaticGraphError, match="none of the methods"):
        run_static(random_edge_split(graph, 0.25, seed=1), tmp_path / "none", methods=("jaccard",))

    (tmp_path / "x.txt").write_text(snap_text(data))
    assert main(["static", str(tmp_path / "x.txt"), "--format", "snap", "--bipartite", "--C", "5", "--threads", "1",
                 "--out", str(tmp_path / "bip")]) == 0
    printed = capsys.readouterr().out
    assert "bipartite graph" in printed and "jaccard  not scored: does not apply" in printed
    assert "Phi(sqrt((sigma_source^2 + sigma_destination^2) / 2))" in printed
    written = json.loads((tmp_path / "bip" / "static.json").read_text())
    assert written["sides"]["kind"] == "bipartite" and written["not_applicable"].keys() == {"jaccard"}
    assert main(["static", str(tmp_path / "x.txt"), "--format", "snap", "--C", "5", "--threads", "1",
                 "--out", str(tmp_path / "uni")]) == 0
    assert "unipartite graph" in capsys.readouterr().out
    assert json.loads((tmp_path / "uni" / "static.json").read_text())["sides"] == {"kind": "unipartite"}
    assert main(["static", str(tmp_path / "x.txt"), "--format", "snap", "--bipartite", "--unipartite", "--C", "5",
                 "--threads", "1", "--out", str(tmp_path / "forced")]) == 0  # one side forced
    assert "unipartite graph" in capsys.readouterr().out
    forced = json.loads((tmp_path / "forced" / "static.json").read_text())
    assert forced["sides"] == {"kind": "unipartite"} and "jaccard" in forced["benchmarks"]["uniform"]


def test_bipartite_benchmark_on_a_device(device):
    _, graph = _small(seed=6)
    moved = StaticGraph(graph.edge_index.to(device), graph.num_nodes, dst_offset=graph.dst_offset)
    bench = benchmark_of(random_edge_split(moved, 0.25, seed=2))
    on_cpu = benchmark_of(random_edge_split(graph, 0.25, seed=2))
    for name, neg in bench.negatives.items():
        assert neg.device == moved.device and torch.equal(neg.cpu(), on_cpu.negatives[name])
    pairs = on_cpu.negatives["uniform"]
    for method in ("cn", "ra"):  # counts exactly; weighted sums up to the order of additions on the device
        here = heuristic_scores(bench.adjacency, pairs[0].to(device), pairs[1].to(device), method).cpu()
        assert torch.allclose(here, heuristic_scores(on_cpu.adjacency, pairs[0], pairs[1], method), rtol=1e-12, atol=0)


@pytest.mark.datasets
def test_wikipedia_degree_corrected_pa_is_at_chance():
    require_dataset("wikipedia")
    data, info = load_dataset("wikipedia")
    graph = static_graph(data, num_nodes=info.num_nodes, dst_offset=info.dst_offset)
    bench = benchmark_of(random_edge_split(graph, 0.25, seed=0))
    corrected = pa_auroc(bench.split.train.degree(), bench.split.test, bench.negatives["degree_corrected"])
    assert abs(corrected - 0.5) <= 0.05
