"""The static report and ``tgeval static``: every number recomputed from independent references
(networkx degrees and sklearn's AUROC / AP), the JSON keys of the issue, the plot, and CLI errors."""

import json

import networkx as nx
import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.static import (BENCHMARKS, StaticGraph, adjacency, build_benchmark, heart_negatives, heart_ranking,
                           lognormal_sigma, random_edge_split, rank_biased_overlap, run_static, shift_split,
                           static_graph)

pytestmark = pytest.mark.usefixtures("one_thread")


def _graph(seed=0):
    data = generate_events(3000, 150, seed=seed)
    return static_graph(data)


def test_report_numbers_equal_independent_references(tmp_path):
    graph = _graph()
    report = run_static(random_edge_split(graph, 0.25, seed=3), tmp_path, c=10, rbo_p=0.7,
                        methods=("pa", "cn", "jaccard"), data={"name": "synthetic"})
    assert json.loads((tmp_path / "static.json").read_text()) == json.loads(json.dumps(report))
    assert (tmp_path / "degree_ccdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and report["plot"] == "degree_ccdf.png"
    bench = build_benchmark(graph, test_fraction=0.25, seed=3)  # the same split and negatives
    train = nx.Graph()
    train.add_nodes_from(range(graph.num_nodes))
    train.add_edges_from(bench.split.train.edge_index.T.tolist())
    pos = bench.split.test.T.tolist()
    degrees = np.array([d for _, d in sorted(train.degree())])
    logs = np.log(degrees[degrees >= 1])
    assert report["sigma"] == pytest.approx(float(np.std(logs)), rel=1e-12)
    references = {"pa": lambda pairs: [s for _, _, s in nx.preferential_attachment(train, pairs)],
                  "cn": lambda pairs: [len(list(nx.common_neighbors(train, u, v))) for u, v in pairs],
                  "jaccard": lambda pairs: [s for _, _, s in nx.jaccard_coefficient(train, pairs)]}
    for name in BENCHMARKS:
        neg = bench.negatives[name].T.tolist()
        assert not {tuple(p) for p in neg} & {tuple(e) for e in graph.edge_index.T.tolist()}
        labels = [1] * len(pos) + [0] * len(neg)
        aurocs = {}
        for method, reference in references.items():
            scores = reference([tuple(p) for p in pos + neg])
            entry = report["benchmarks"][name][method]
            aurocs[method] = roc_auc_score(labels, scores)
            assert entry["auroc"] == pytest.approx(aurocs[method], abs=1e-12)
            assert entry["ap"] == pytest.approx(average_precision_score(labels, scores), abs=1e-12)
        assert report[f"pa_auroc_{name}"] == pytest.approx(aurocs["pa"], abs=1e-12)
        assert report["rankings"][name] == sorted(aurocs, key=lambda m: (-aurocs[m], m))  # best first, ties by name
    # VCMPR@10 by brute force: every non-training pair of each node with a test edge, scored by networkx
    test_neighbours: dict = {}
    for u, v in pos:
        test_neighbours.setdefault(u, set()).add(v)
        test_neighbours.setdefault(v, set()).add(u)
    vcmpr = {}
    for method, reference in references.items():
        values = []
        for u, truth in test_neighbours.items():
            candidates = [v for v in range(graph.num_nodes) if v != u and not train.has_edge(u, v)]
            scores = reference([(u, v) for v in candidates])
            top = [v for _, v in sorted(zip(scores, candidates), key=lambda sv: (-sv[0], sv[1]))[:10]]
            values.append(len(truth & set(top)) / min(10, len(truth)))
        vcmpr[method] = float(np.mean(values))
        assert report["vcmpr_at_c"][method] == pytest.approx(vcmpr[method], abs=1e-12)
    assert report["rankings"]["recommendation"] == sorted(vcmpr, key=lambda m: (-vcmpr[m], m))
    for name in BENCHMARKS:  # RBO itself is checked against its series definition in test_static_recommend
        assert report["rbo"][name] == rank_biased_overlap(report["rankings"][name], report["rankings"]["recommendation"],
                                                          0.7)
    assert report["pa_auroc_analytic"] == pytest.approx(float(torch.special.ndtr(lognormal_sigma(
        bench.split.train.degree()))), abs=1e-12)
    assert report["vcmpr_nodes"] == len(test_neighbours)
    assert report["protocol"]["seed"] == 3 and report["protocol"]["test_fraction"] == 0.25
    assert report["protocol"]["benchmarks"]["degree_corrected"]["weighting"] == "degree"
    assert report["data"]["name"] == "synthetic" and report["data"]["graph_checksum"].startswith("sha256:")


def _dgb(path, seed=1):
    data = generate_events(2000, 120, seed=seed)
    rows = [",u,i,ts,label,idx"] + [f"{i},{u + 1},{v + 1},{t},0,{i + 1}" for i, (u, v, t) in
                                    enumerate(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()))]
    path.write_text("\n".join(rows) + "\n")
    return data


def test_cli_writes_static_json(tmp_path, capsys):
    _dgb(tmp_path / "ml_x.csv")
    out = tmp_path / "out"
    code = main(["static", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--models", "pa,cn,ra", "--C", "5",
                 "--rbo-p", "0.8", "--test-fraction", "0.2", "--end", "train", "--threads", "1", "--out", str(out)])
    assert code == 0
    report = json.loads((out / "static.json").read_text())
    for key in ("sigma", "pa_auroc_analytic", "pa_auroc_uniform", "pa_auroc_degree_corrected", "benchmarks",
                "vcmpr_at_c", "rbo", "closer_to_recommendation", "protocol", "data"):
        assert key in report
    assert set(report["vcmpr_at_c"]) == {"pa", "cn", "ra"} and report["protocol"]["c"] == 5
    assert report["protocol"]["rbo_p"] == 0.8 and report["protocol"]["test_fraction"] == 0.2
    assert report["data"]["fingerprint"].startswith("sha256:") and report["data"]["end"] == "train"
    assert 0 < report["data"]["projected_events"] < report["data"]["num_events"]  # the training segment only
    assert "degree-corrected" in capsys.readouterr().out


def test_cli_shift_writes_shift_json(tmp_path, capsys):
    data = _dgb(tmp_path / "ml_x.csv")
    out = tmp_path / "out"
    code = main(["static", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--out", str(tmp_path / "plain")])
    assert code == 0
    code = main(["shift", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--heuristic", "cn", "--thresholds", "0,2",
                 "--inverse", "--caps", "none,,200", "--models", "pa,cn", "--C", "5", "--negatives", "heart:ppr:8",
                 "--out", str(out)])
    assert code == 0
    report = json.loads((out / "shift.json").read_text())
    p = report["protocol"]
    assert p["split"] == "structural shift" and p["heuristic"] == "cn" and p["inverse"] is True
    assert p["thresholds"] == [0.0, 2.0] and p["caps"] == {"train": None, "valid": None, "test": 200}
    assert p["sizes"]["test"] == p["num_test_edges"] and p["sizes"]["train"] == p["num_train_edges"]
    # the split itself, recomputed from the library on the same graph
    split = shift_split(static_graph(data.__class__(src=data.src + 1, dst=data.dst + 1, t=data.t),
                                     num_nodes=report["data"]["num_nodes"]), "cn", (0, 2), inverse=True,
                        caps=(None, None, 200))
    assert p["sizes"] == split.counts["sizes"] and p["emd_train_test"] == pytest.approx(split.emd)
    heart = report["heart"]
    assert heart["negatives"]["heuristic"] == "ppr" and heart["negatives"]["per_positive"] == 8
    assert heart["negatives"]["ppr"] == {"alpha": 0.15, "tol": 1e-7, "steps": 104}
    adj = adjacency(split.train)
    again = heart_ranking(adj, split.test, heart_negatives(adj, split.graph, split.test, 8, heuristic="ppr", seed=0), "cn")
    assert heart["methods"]["cn"] == pytest.approx(again) and set(heart["methods"]["pa"]) == {"mrr", "hits@1"}
    assert set(report["vcmpr_at_c"]) == {"pa", "cn"} and "EMD" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["shift", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--heuristic", "cn", "--thresholds", "3",
              "--out", str(out)])
    with pytest.raises(SystemExit):
        main(["shift", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--heuristic", "cn", "--thresholds", "0,1",
              "--negatives", "heart:pa:5", "--out", str(out)])
    assert main(["shift", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--heuristic", "pa", "--thresholds",
                 "1e9,1e10", "--out", str(tmp_path / "o2")]) == 2
    assert "valid split empty" in capsys.readouterr().err


def test_cli_reports_bad_input(tmp_path, capsys):
    _dgb(tmp_path / "ml_x.csv")
    with pytest.raises(SystemExit):
        main(["static", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--models", "pa,katz", "--out", str(tmp_path)])
    assert "--models" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["static", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--end", "soon", "--out", str(tmp_path)])
    assert "--end" in capsys.readouterr().err
    assert main(["static", str(tmp_path / "ml_x.csv"), "--format", "dgb", "--end", "-1", "--out",
                 str(tmp_path / "o")]) == 2
    assert "no edge" in capsys.readouterr().err
    assert not (tmp_path / "o" / "static.json").exists()


def test_cli_end_projects_the_same_events_at_every_magnitude(tmp_path):
    """--end read through float64 moved the bound by hundreds near 2^62 (997 events projected instead of 999)."""
    data = _dgb(tmp_path / "plain.csv")
    cut = int(data.t[len(data.t) * 2 // 3])
    projected = {}
    for offset in (0, 2**62):
        path = tmp_path / f"shifted_{offset}.txt"
        path.write_text("".join(f"{u} {v} {t + offset}\n" for u, v, t in
                                zip(data.src.tolist(), data.dst.tolist(), data.t.tolist())))
        assert main(["static", str(path), "--format", "snap", "--models", "pa", "--end", str(cut + offset),
                     "--out", str(tmp_path / f"out_{offset}")]) == 0
        projected[offset] = json.loads((tmp_path / f"out_{offset}" / "static.json").read_text())["data"]
    assert projected[0]["projected_events"] == projected[2**62]["projected_events"] == int((data.t < cut).sum())


def test_graph_on_a_device(device):
    graph = _graph(seed=2)
    moved = StaticGraph(graph.edge_index.to(device), graph.num_nodes)
    bench = build_benchmark(moved, seed=1)
    assert all(neg.device == moved.device for neg in bench.negatives.values())
    assert torch.equal(bench.split.test.cpu(), build_benchmark(graph, seed=1).split.test)
