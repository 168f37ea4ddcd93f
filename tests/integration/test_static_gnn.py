"""GCN / GraphSAGE link baselines: encoders against dense formulas, seeded reproducible training that
leaves the global RNG alone and learns a planted partition, and their place in the report and CLI."""

import json

import networkx as nx
import pytest
import torch
from sklearn.metrics import roc_auc_score

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.errors import ModelConfigError, ProtocolError
from tgeval.static import (GNNConfig, LinkGNN, StaticGraph, benchmark_of, random_edge_split, static_report,
                           train_link_gnn, with_gnns)
from tests.helpers import snap_text

pytestmark = pytest.mark.usefixtures("one_thread")


def _planted(seed=0):
    g = nx.planted_partition_graph(4, 50, 0.3, 0.01, seed=seed)
    edges = sorted((min(u, v), max(u, v)) for u, v in g.edges())
    return StaticGraph(torch.tensor(edges).T, 200)


def test_encoders_equal_dense_formulas():
    graph = StaticGraph(torch.tensor([[0, 0, 1, 2], [1, 2, 2, 3]]), 5)  # node 4 isolated
    edge_index = graph.to_pyg().edge_index
    a = torch.zeros(5, 5)
    a[edge_index[0], edge_index[1]] = 1.0
    torch.manual_seed(0)
    gcn = LinkGNN(5, GNNConfig(encoder="gcn", dim=3, layers=1))
    x = gcn.embedding.weight
    a_hat = a + torch.eye(5)
    d = a_hat.sum(1).rsqrt()
    expected = (d[:, None] * a_hat * d[None, :]) @ x @ gcn.convs[0].lin.weight.T + gcn.convs[0].bias
    torch.testing.assert_close(gcn.encode(edge_index), expected)
    sage = LinkGNN(5, GNNConfig(encoder="sage", dim=3, layers=1))
    x = sage.embedding.weight
    mean = (a @ x) / a.sum(1, keepdim=True).clamp(min=1)
    conv = sage.convs[0]
    torch.testing.assert_close(sage.encode(edge_index), conv.lin_l(mean) + conv.lin_r(x))
    z = sage.encode(edge_index)
    src, dst = torch.tensor([0, 3]), torch.tensor([3, 0])
    torch.testing.assert_close(sage.decode(z, src, dst), (z[src] * z[dst]).sum(-1))
    mlp = LinkGNN(5, GNNConfig(decoder="mlp", dim=3))
    zm = mlp.encode(edge_index)
    assert torch.equal(mlp.decode(zm, src, dst), mlp.decode(zm, dst, src))  # symmetric
    with pytest.raises(ModelConfigError, match="encoder"):
        LinkGNN(5, GNNConfig(encoder="gat"))


@pytest.mark.parametrize("encoder", ["gcn", "sage"])
@pytest.mark.parametrize("negatives", ["uniform", "degree"])
def test_training_learns_a_planted_partition_reproducibly(encoder, negatives):
    split = random_edge_split(_planted(), 0.25, seed=1)
    config = GNNConfig(encoder=encoder, negatives=negatives, dim=32, epochs=60, seed=3)
    state = torch.random.get_rng_state()
    trained = train_link_gnn(split.train, config)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global generator is left alone
    assert float(trained.losses[-5:].mean()) < float(trained.losses[:5].mean())
    again = train_link_gnn(split.train, config)
    pos = split.test
    neg = torch.randint(0, 200, (2, 2000), generator=torch.Generator().manual_seed(0))
    neg = neg[:, neg[0] // 50 != neg[1] // 50]  # cross-block pairs: rarely edges
    assert torch.equal(trained(pos[0], pos[1]), again(pos[0], pos[1]))
    scores = torch.cat([trained(pos[0], pos[1]), trained(neg[0], neg[1])])
    labels = [1] * pos.size(1) + [0] * neg.size(1)
    assert roc_auc_score(labels, scores.numpy()) > 0.8


def test_report_includes_trained_gnns():
    split = random_edge_split(_planted(2), 0.25, seed=0)
    bench = with_gnns(benchmark_of(split), ["gcn"], GNNConfig(epochs=30, dim=16))
    report = static_report(bench, c=10, methods=("pa", "gcn"))
    model = bench.trained["gcn"]
    for name, neg in bench.negatives.items():
        scores = torch.cat([model(split.test[0], split.test[1]), model(neg[0], neg[1])])
        labels = [1] * split.test.size(1) + [0] * neg.size(1)
        assert report["benchmarks"][name]["gcn"]["auroc"] == pytest.approx(roc_auc_score(labels, scores.numpy()))
    assert report["models"]["gcn"]["encoder"] == "gcn" and report["models"]["gcn"]["epochs"] == 30
    with pytest.raises(ProtocolError, match="with_gnns"):
        static_report(benchmark_of(split), methods=("sage",))
    with pytest.raises(ProtocolError, match="GNN baselines"):
        with_gnns(bench, ["gat"])


def test_cli_trains_the_gnns(tmp_path):
    data = generate_events(1500, 80, seed=3)
    path = tmp_path / "events.txt"
    path.write_text(snap_text(data))
    out = tmp_path / "out"
    assert main(["static", str(path), "--format", "snap", "--models", "pa,gcn,sage", "--gnn-negatives", "degree",
                 "--C", "5", "--out", str(out)]) == 0
    report = json.loads((out / "static.json").read_text())
    assert set(report["vcmpr_at_c"]) == {"pa", "gcn", "sage"}
    assert report["models"]["sage"]["training_negatives"] == "degree"
