"""Unipartite graphs keep their static results bit for bit now that graphs can have two sides.

``static_unipartite_reference.json`` was written by :func:`unipartite_outputs` with the code before
sides existed (``python tests/integration/test_static_unipartite_unchanged.py`` rewrites it: only
ever do that on purpose). Every number, ranking and sample checksum recorded there must come out
identical: the report of a random split (heuristics, GCN, SAGE, HeaRT), of a structural-shift split,
and the sampler's draws with and without replacement, including its exact finish."""

import json
from pathlib import Path

import torch

from tgeval.data.fingerprint import tensor_checksum
from tgeval.data.synthetic import generate_events
from tgeval.static import PairSampler, StaticGraph, random_edge_split, run_static, shift_split, static_graph
from tgeval.static.gnn import GNNConfig

REFERENCE = Path(__file__).with_name("static_unipartite_reference.json")
#: report entries that describe (text, timing, files) rather than compute
_DESCRIPTIVE = ("protocol", "seconds", "plot", "plot_missing")


def _numbers(report: dict) -> dict:
    out = {k: v for k, v in report.items() if k not in _DESCRIPTIVE}
    out["negatives"] = {name: {"seed": d["seed"], "num_available_pairs": d["num_available_pairs"]}
                        for name, d in report["protocol"]["benchmarks"].items()}
    return out


def unipartite_outputs(folder: Path) -> dict:
    torch.set_num_threads(1)
    graph = static_graph(generate_events(3000, 150, seed=0))
    gnn = GNNConfig(dim=8, epochs=3, negatives="degree", seed=1)
    methods = ("cn", "jaccard", "aa", "ra", "pa", "gcn", "sage")
    random = run_static(random_edge_split(graph, 0.25, seed=3), folder / "random", c=10, methods=methods,
                        heart=("cn", 4), gnn=gnn)
    shift = run_static(shift_split(graph, "pa", (30.0, 60.0), seed=2), folder / "shift", c=10,
                       methods=("cn", "pa", "ra"), heart=("ppr", 2), file="shift.json")
    small = StaticGraph(torch.tensor([[0, 0, 1, 2, 3], [1, 2, 2, 3, 4]]), 7)
    draws = {}
    for weighting in ("uniform", "degree"):
        sampler = PairSampler(graph, weighting=weighting)
        near_all = PairSampler(small, weighting=weighting)  # 5 of the 5 valid pairs: the exact finish
        draws[weighting] = [tensor_checksum(sampler.sample(500, seed=4)),
                            tensor_checksum(sampler.sample(500, seed=5, replace=True)),
                            tensor_checksum(near_all.sample(near_all.num_available, seed=6))]
    return {"random": _numbers(random), "shift": _numbers(shift), "draws": draws}


def test_unipartite_results_are_unchanged(tmp_path, one_thread):
    reference = json.loads(REFERENCE.read_text())
    outputs = json.loads(json.dumps(unipartite_outputs(tmp_path)))
    for part in ("random", "shift"):
        for key, value in reference[part].items():
            assert outputs[part][key] == value, (part, key)
    assert outputs["draws"] == reference["draws"]


if __name__ == "__main__":  # records the reference (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        REFERENCE.write_text(json.dumps(unipartite_outputs(Path(tmp)), indent=1, sort_keys=True) + "\n")
