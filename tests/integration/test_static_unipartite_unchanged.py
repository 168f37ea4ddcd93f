"""Unipartite graphs keep their static results bit for bit now that graphs can have two sides.

``static_unipartite_reference.json`` was written by :func:`unipartite_outputs` with the code before
sides existed (``python tests/integration/test_static_unipartite_unchanged.py`` rewrites it: only
ever do that on purpose). What the static package computes must come out identical, compared by
SHA-256 of the tensors where the computation is bitwise portable (integer work, or floats without BLAS or
vectorised reductions): the sampler's draws (with and without replacement, and its exact finish), the split
and the negatives of each benchmark, every heuristic's scores of positives and negatives, top-C lists, HeaRT
negatives and a shift split. The GNN baselines' embeddings and losses come from matrix products, whose last
bits depend on the kernels PyTorch dispatches to on the CPU (``ATEN_CPU_CAPABILITY``: default, AVX2,
AVX-512): they are stored as values and compared to :data:`GNN_TOLERANCE` (the kernels differ by at most
6e-7 after three epochs). The report's numbers are compared to 1e-12: its AUROC and AP come from
``tgeval.eval.metrics``, whose summation order is free to change in the last bits."""

import json
import math
from pathlib import Path

import torch

from tgeval.data.hashing import tensor_checksum
from tgeval.data.synthetic import generate_events
from tgeval.static import (HEURISTICS, PairSampler, StaticGraph, benchmark_of, heart_negatives,
                           heuristic_scores, random_edge_split, run_static, shift_split, static_graph, top_c,
                           train_link_gnn)
from tgeval.static.gnn import GNNConfig

REFERENCE = Path(__file__).with_name("static_unipartite_reference.json")
#: relative and absolute tolerance of the GNN embeddings and losses (kernel-dependent floats)
GNN_TOLERANCE = 1e-5
#: report entries that describe (text, timing, files) rather than compute
_DESCRIPTIVE = ("protocol", "seconds", "plot", "plot_missing")


def unipartite_outputs(folder: Path) -> dict:
    torch.set_num_threads(1)
    graph = static_graph(generate_events(3000, 150, seed=0))
    small = StaticGraph(torch.tensor([[0, 0, 1, 2, 3], [1, 2, 2, 3, 4]]), 7)
    sums: dict[str, str] = {}
    gnn: dict[str, dict] = {}
    for weighting in ("uniform", "degree"):
        sampler = PairSampler(graph, weighting=weighting)
        near_all = PairSampler(small, weighting=weighting)  # all 5 valid pairs: the exact finish
        sums[f"draws/{weighting}"] = tensor_checksum(sampler.sample(500, seed=4),
                                                     sampler.sample(500, seed=5, replace=True),
                                                     near_all.sample(near_all.num_available, seed=6))
    bench = benchmark_of(random_edge_split(graph, 0.25, seed=3))
    test = bench.split.test
    sums["split"] = tensor_checksum(test, bench.split.train.edge_index)
    sources = torch.unique(test.flatten())[:40]
    for method in HEURISTICS:
        pairs = torch.cat([test, *bench.negatives.values()], dim=1)
        sums[f"scores/{method}"] = tensor_checksum(heuristic_scores(bench.adjacency, pairs[0], pairs[1], method))
        sums[f"top_c/{method}"] = tensor_checksum(top_c(bench.adjacency, method, sources, 10, exclude=graph.keys()))
    sums["negatives"] = tensor_checksum(*bench.negatives.values())
    for heuristic in ("cn", "ra", "ppr"):
        sums[f"heart/{heuristic}"] = tensor_checksum(
            heart_negatives(bench.adjacency, graph, test, 4, heuristic=heuristic, seed=1).pairs)
    for encoder in ("gcn", "sage"):
        trained = train_link_gnn(bench.split.train, GNNConfig(encoder=encoder, dim=8, epochs=3, negatives="degree"))
        gnn[encoder] = {"embeddings": trained.embeddings.tolist(), "losses": torch.as_tensor(trained.losses).tolist()}
    shift = shift_split(graph, "cn", (2.0, 4.0), seed=2)
    sums["shift"] = tensor_checksum(shift.train.edge_index, shift.valid, shift.test,
                                    *benchmark_of(shift).negatives.values())
    report = run_static(bench.split, folder, c=10, methods=("cn", "jaccard", "aa", "ra", "pa", "gcn"),
                        heart=("cn", 4), gnn=GNNConfig(dim=8, epochs=3, seed=1))
    numbers = {k: v for k, v in report.items() if k not in _DESCRIPTIVE}
    return {"checksums": sums, "gnn": gnn, "report": numbers}


def _close(new, old, where: str) -> None:
    """``new`` equals ``old``: dicts and lists entry by entry, floats to 1e-12, everything else exactly."""
    if isinstance(old, dict):
        for key, value in old.items():
            _close(new[key], value, f"{where}/{key}")
    elif isinstance(old, list):
        assert len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old)):
            _close(a, b, f"{where}/{i}")
    elif isinstance(old, float):
        assert math.isclose(new, old, rel_tol=1e-12, abs_tol=1e-15), (where, new, old)
    else:
        assert new == old, (where, new, old)


def test_unipartite_results_are_unchanged(tmp_path, one_thread):
    reference = json.loads(REFERENCE.read_text())
    outputs = json.loads(json.dumps(unipartite_outputs(tmp_path)))
    assert outputs["checksums"] == reference["checksums"]
    for encoder, values in reference["gnn"].items():
        for name, expected in values.items():
            torch.testing.assert_close(torch.tensor(outputs["gnn"][encoder][name]), torch.tensor(expected),
                                       rtol=GNN_TOLERANCE, atol=GNN_TOLERANCE, msg=f"gnn/{encoder}/{name}")
    _close(outputs["report"], reference["report"], "report")


if __name__ == "__main__":  # records the reference (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        REFERENCE.write_text(json.dumps(unipartite_outputs(Path(tmp)), indent=1, sort_keys=True) + "\n")
