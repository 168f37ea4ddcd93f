"""A GNN trained on the static graph of the events before the test segment goes through the temporal
replay (protocol "fixed") as FixedScorerModel: its recorded scores are the GNN's, unaffected by t or updates."""

import pytest
import torch

from tgeval import build_catalog, chronological_split, evaluate
from tgeval.data.synthetic import generate_events
from tgeval.models.fixed_scorer import FixedScorerModel
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.static import GNNConfig, static_graph, train_link_gnn

pytestmark = pytest.mark.usefixtures("one_thread")


def test_gnn_through_the_fixed_replay():
    data = generate_events(2000, 60, seed=5)
    split = chronological_split(data)
    start = float(data.t[split.test.start])
    graph = static_graph(data, end=start, num_nodes=60)  # what a fixed-protocol model has seen
    trained = train_link_gnn(graph, GNNConfig(dim=16, epochs=20))
    model = FixedScorerModel(60, trained, description={"gnn": trained.describe(), "fitted_before": start})
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=60)
    result = evaluate(model, data, split.test, Protocol(replay="fixed", num_negatives=5, seed=0),
                      sampler=UniformSampler(catalog), catalog=catalog)
    rec = result.records
    assert rec["src"].numel() == split.test.num_events
    torch.testing.assert_close(rec["score"], trained(rec["src"], rec["dst"]).to(rec["score"].dtype))
    neg = rec["neg"]  # each event's sampled negative destinations, scored from the same source
    torch.testing.assert_close(rec["neg_score"], trained(rec["src"][:, None].expand_as(neg).reshape(-1),
                                                         neg.reshape(-1)).view(neg.shape).to(rec["neg_score"].dtype))
    test = data[split.test.start : split.test.end]
    assert result.manifest["protocol"]["replay"] == "fixed" and result.manifest["model"]["name"] == "fixed-scorer"
    assert 0.0 < result.metrics["all_entity"]["mrr"]["micro"] <= 1.0
    model.update(test)  # ignores events
    assert torch.equal(model.score(test.src, test.dst, test.t + 1000), trained(test.src, test.dst))
