"""The TGB preset: TGB's whole link-prediction protocol under one name, checked against a plain
re-implementation of TGB's EdgeBank example (dict memory, slices of 200, every destination in
the id range except the source's positives at that time, TGB's mean of optimistic and
pessimistic ranks) and, on the shared Wikipedia file, against TGB's published EdgeBank MRR."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tgeval import evaluate
from tgeval.data.datasets import dataset_path, load_dataset
from tgeval.data.synthetic import generate_events
from tgeval.models.heuristics import EdgeBank
from tgeval.presets import TGB


def tgb_edgebank_mrr(src, dst, t, start, end, train_end, window=False, batch_size=200):
    """TGB's examples/linkproppred edgebank.py (memory_mode 'unlimited', or 'fixed_time_window'
    with ratio 0.15 of the training span), negatives = every id in [min dst, max dst] but the
    source's destinations at that time (TGB's generator), in plain Python."""
    memory = {(int(u), int(v)): int(s) for u, v, s in zip(src[:start], dst[:start], t[:start])}
    span = float(t[train_end - 1] - t[0])
    latest, duration = float(t[start - 1]), float(t[train_end - 1]) - (float(t[0]) + span * 0.85)
    candidates = np.arange(int(dst.min()), int(dst.max()) + 1)
    reciprocal = []
    for a in range(start, end, batch_size):
        z = min(a + batch_size, end)
        for i in range(a, z):
            u, v = int(src[i]), int(dst[i])
            same = set(dst[start:end][(src[start:end] == u) & (t[start:end] == t[i])].tolist())
            negatives = [c for c in candidates.tolist() if c not in same]
            def known(c):
                return (u, c) in memory and (not window or memory[(u, c)] >= latest - duration)
            positive = 1.0 if known(v) else 0.0
            scores = np.array([1.0 if known(c) else 0.0 for c in negatives])
            rank = 0.5 * ((scores > positive).sum() + (scores >= positive).sum()) + 1
            reciprocal.append(1.0 / rank)
        memory.update({(int(u), int(v)): int(s) for u, v, s in zip(src[a:z], dst[a:z], t[a:z])})
        latest = max(latest, float(t[a:z].max()))
    return float(np.mean(reciprocal))


def test_preset_protocol_fields():
    protocol = TGB.protocol()
    assert (protocol.replay, protocol.history, protocol.batch_size, protocol.ties, protocol.num_negatives) == \
        ("online", "batch", 200, "average", 0)
    assert TGB.protocol(history="exact").history == "exact"


@pytest.mark.parametrize("window", [False, True], ids=["unlimited", "time window"])
def test_edgebank_under_the_preset_equals_tgbs_loop(window):
    # distinct timestamps: TGB's fixed slices of 200 are then tgeval's timestamp batches
    data = generate_events(num_events=1500, num_nodes=40, seed=3, bipartite=True)
    data.t = torch.arange(data.num_events) * 7
    split = TGB.split(data)
    catalog = TGB.catalog(data)
    options = dict(window=TGB.edgebank_window(data, split), anchor="latest") if window else {}
    result = evaluate(EdgeBank(int(data.dst.max()) + 1, **options), data, split.test, TGB.protocol(), catalog=catalog)
    src, dst, t = data.src.numpy(), data.dst.numpy(), data.t.numpy()
    expected = tgb_edgebank_mrr(src, dst, t, split.test.start, split.test.end, split.train.end, window)
    assert result.metrics["all_entity"]["mrr"]["micro"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.datasets
@pytest.mark.parametrize("window, published", [(False, 0.495), (True, 0.571)], ids=["unlimited", "time window"])
def test_wikipedia_edgebank_reaches_tgbs_published_mrr(window, published):
    if dataset_path("wikipedia") is None:
        pytest.skip("../shared/datasets/wikipedia/ml_wikipedia.txt not found (set TGEVAL_DATA_DIR)")
    data, info = load_dataset("wikipedia")
    split = TGB.split(data)
    options = dict(window=TGB.edgebank_window(data, split), anchor="latest") if window else {}
    result = evaluate(EdgeBank(info.num_nodes, **options), data, split.test, TGB.protocol(),
                      catalog=TGB.catalog(data, info.num_nodes))
    assert round(result.metrics["all_entity"]["mrr"]["micro"], 3) == published  # TGB's leaderboard
