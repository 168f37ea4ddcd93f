"""A replay step reads nothing back from the device (issue 10).

On a GPU every operator whose output shape depends on the data (``nonzero``, ``unique``,
boolean-mask indexing) or that turns a tensor into a Python number (``.item()``,
``int(t)``, ``bool(t)``) stalls the host until the device is done. The engine's batch step
(score, rank, record, update; inside the profiler range ``tgeval.replay.step``) must have
none of them for the heuristics:

* on the CPU, counted with ``torch.profiler`` (the sync-forcing aten operators must not
  appear inside a batch range);
* on CUDA, under ``torch.cuda.set_sync_debug_mode("error")`` switched on for exactly the
  batch ranges.

Per-window preparation (candidate plans, history-free negatives) may read sizes once and is
not inside the ranges.
"""

from contextlib import contextmanager

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from tgeval.eval.tuning import Tuning
from tgeval import build_catalog, evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.core.device import HOST_READ
from tgeval.eval import engine
from tgeval.models.heuristics import EdgeBank, NodeMemory, PairMembership, Popularity, PreferentialAttachment
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler

SYNC_OPS = {"aten::nonzero", "aten::_unique2", "aten::unique_dim", "aten::unique_consecutive",
            "aten::masked_select", "aten::_local_scalar_dense", "aten::item", HOST_READ}
MODELS = {
    "edgebank": lambda n: EdgeBank(n),
    "edgebank-window": lambda n: EdgeBank(n, window=50.0),
    "membership": lambda n: PairMembership(n, beta=-0.5, bias=0.25),
    "node-memory": lambda n: NodeMemory(n),
    "pa": lambda n: PreferentialAttachment(n),
    "popularity": lambda n: Popularity(n, half_life=100.0),
}


def _stream():
    data = generate_events(num_events=600, num_nodes=40, seed=3)
    split = chronological_split(data, (0.6, 0.2, 0.2))
    return data, split, 40


def _evaluate(model, data, split, num_nodes, *, catalog_kind, negatives, shortcut, directed):
    catalog = build_catalog(data, catalog_kind, train_end=split.train.end, num_nodes=num_nodes)
    sampler = UniformSampler(Catalog("custom", torch.arange(num_nodes, device=data.src.device), None, num_nodes),
                             directed=directed) if negatives else None
    return evaluate(model, data, split.test, Protocol(num_negatives=5, batch_size=37, directed=directed),
                    sampler=sampler, catalog=catalog.to(data.src.device),
                    tuning=Tuning(use_shortcut=shortcut, candidate_budget=500))


def _inside_batch(event) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == "tgeval.replay.step":
            return True
        parent = parent.cpu_parent
    return False


# (catalog, sampled negatives, exact shortcut, directed): both ranking paths, both catalog kinds
SETTINGS = [("train", True, False, True), ("time-available", False, False, False)]
SHORTCUT_SETTINGS = [("train", True, True, True), ("time-available", True, True, True), ("train", False, True, False)]
CASES = [(name, *setting) for name in MODELS for setting in SETTINGS] + \
    [(name, *setting) for name in ("edgebank", "edgebank-window", "membership") for setting in SHORTCUT_SETTINGS]


@pytest.mark.parametrize("name,kind,negatives,shortcut,directed", CASES)
def test_batch_step_has_no_sync_forcing_operator_on_cpu(name, kind, negatives, shortcut, directed, one_thread):
    data, split, n = _stream()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        result = _evaluate(MODELS[name](n), data, split, n, catalog_kind=kind, negatives=negatives,
                           shortcut=shortcut, directed=directed)
    inside = [e.name for e in prof.events() if (e.name.startswith("aten::") or e.name == HOST_READ)
              and _inside_batch(e)]
    assert result.performance["num_batches"] > 1 and len(inside) > 0  # the ranges are there and were profiled
    assert sorted(set(inside) & SYNC_OPS) == []


@contextmanager
def _strict_batch(name):
    """Stands in for ``record_function`` in the engine: CUDA sync debugging inside each batch step."""
    assert name == "tgeval.replay.step"
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name,kind,negatives,shortcut,directed", CASES)
def test_batch_step_never_synchronises_on_cuda(name, kind, negatives, shortcut, directed, monkeypatch):
    data, split, n = _stream()
    expected = _evaluate(MODELS[name](n), data, split, n, catalog_kind=kind, negatives=negatives,
                         shortcut=shortcut, directed=directed)
    monkeypatch.setattr(engine, "record_function", _strict_batch)
    got = _evaluate(MODELS[name](n).cuda(), data.to("cuda"), split, n, catalog_kind=kind, negatives=negatives,
                    shortcut=shortcut, directed=directed)
    assert got.metrics == expected.metrics  # exact scores: the heuristics agree bit for bit across devices
    for key in ("score", "above", "equal"):
        assert torch.equal(got.records[key], expected.records[key]), key
