import csv
import json
import pytest
import torch

from tgeval import Protocol, Result, build_catalog, chronological_split, evaluate
from tgeval.core.atomic import write_atomic
from tgeval.eval.result import summarize
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream


def _records():
    # Source 7: ranks 1 and 3; source 8: rank 2 (sampled, pessimistic = average here: no ties)
    return {
        "src": torch.tensor([7, 7, 8]), "stratum": torch.tensor([0, 1, 2]), "batch": torch.tensor([0, 0, 1]),
        "score": torch.tensor([0.9, 0.2, 0.5], dtype=torch.float64),
        "neg_score": torch.tensor([[0.1, 0.3], [0.5, 0.7], [0.6, 0.4]], dtype=torch.float64),
        "sampled_above": torch.tensor([0, 2, 1]), "sampled_equal": torch.tensor([0, 0, 0]),
        "above": torch.tensor([0, 5, 1]), "equal": torch.tensor([2, 0, 0]),
        "candidates": torch.tensor([10, 10, 10]), "filtered": torch.tensor([0, 1, 0]),
        "covered": torch.tensor([True, True, False]),
    }


def test_summarize_micro_macro_by_hand():
    m = summarize(_records(), ties="average", hits=(1, 2))
    # sampled ranks 1, 3, 2: micro (1 + 1/3 + 1/2) / 3; macro: source 7 (1 + 1/3)/2, source 8 1/2
    assert m["sampled"]["mrr"]["micro"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert m["sampled"]["mrr"]["macro"] == pytest.approx(((1 + 1 / 3) / 2 + 1 / 2) / 2)
    assert m["sampled"]["hits@2"]["micro"] == pytest.approx(2 / 3)
    # all-entity average ranks: 1 + 0 + 2/2 = 2, 6, 2
    assert m["all_entity"]["mrr"]["micro"] == pytest.approx((1 / 2 + 1 / 6 + 1 / 2) / 3)
    assert m["all_entity"]["events_with_ties"] == 1
    assert m["all_entity"]["coverage"] == {"covered": 2, "uncovered": 1, "uncovered_rule": "rank"}
    assert m["all_entity"]["filtered_simultaneous_positives"] == 1
    assert [m["strata"][s]["count"] for s in ("repeated", "new_pair", "new_node")] == [1, 1, 1]
    # global AUROC: positives {0.9, 0.2, 0.5} vs negatives {0.1, 0.3, 0.5, 0.7, 0.6, 0.4}:
    # 0.9 beats 6; 0.2 beats 1; 0.5 beats 3 and ties 1 -> (6 + 1 + 3.5) / 18
    assert m["sampled"]["auroc"]["global"] == pytest.approx(10.5 / 18)
    excluded = summarize(_records(), ties="pessimistic", uncovered="exclude")
    assert excluded["all_entity"]["num_events"] == 2
    # pessimistic: ranks 3 and 6
    assert excluded["all_entity"]["mrr"]["micro"] == pytest.approx((1 / 3 + 1 / 6) / 2)


def _small_result(tmp_path):
    src = [0, 1, 2, 0, 1, 3, 0, 2, 1, 0, 3, 2]
    dst = [1, 2, 3, 1, 3, 1, 2, 1, 2, 1, 2, 3]
    data = make_stream(src, dst, list(range(12)))
    split = chronological_split(data, (0.5, 0.25, 0.25))
    catalog = build_catalog(data, "train", train_end=split.train.end)
    result = evaluate(EdgeBank(4), data, split.test, Protocol(num_negatives=2),
                      sampler=UniformSampler(catalog, replace=True), catalog=catalog)
    result.manifest["data"]["name"], result.manifest["split"] = "toy", split.to_dict()
    return result


def test_save_load_round_trip_and_manifest(tmp_path):
    result = _small_result(tmp_path)
    path = tmp_path / "deep" / "result.json"
    result.save(path)
    payload = json.loads(path.read_text())
    manifest = payload["manifest"]
    for key in ("protocol", "sampler", "catalog", "aggregation", "split", "segment", "versions", "model"):
        assert key in manifest, key
    assert manifest["protocol"] == {"replay": "online", "history": None, "num_negatives": 2, "ties": "average",
                                    "hits": [1, 3, 10], "uncovered": "rank", "directed": True, "batch_size": 200,
                                    "seed": 0, "warm": True, "prefilter": None}  # the Protocol as it is
    assert manifest["history"]["mode"] == "exact"  # the mode used: EdgeBank scores from exact history
    assert manifest["data"]["fingerprint"].startswith("sha256:")
    assert manifest["negatives_checksum"].startswith("sha256:")
    assert manifest["catalog"]["train_end"] == manifest["split"]["train"]["end"]
    again = _small_result(tmp_path)
    assert again.manifest["negatives_checksum"] == result.manifest["negatives_checksum"]  # same seed, same draws
    loaded = Result.load(path)
    assert loaded.metrics["all_entity"]["mrr"] == pytest.approx(result.metrics["all_entity"]["mrr"])
    assert not list(path.parent.glob(".*.tmp"))  # no temporary file left behind


def test_nan_becomes_null(tmp_path):
    result = Result({"x": float("nan")}, {"ties": "average"})
    result.save(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["metrics"]["x"] is None


def test_event_csv(tmp_path):
    result = _small_result(tmp_path)
    result.save_events(tmp_path / "events.csv")
    with open(tmp_path / "events.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == result.manifest["segment"]["num_events"]
    for column in ("event", "src", "dst", "t", "score", "rank", "above", "equal", "stratum"):
        assert column in rows[0]
    for row in rows:
        assert float(row["rank"]) == 1 + int(row["above"]) + int(row["equal"]) / 2
        assert row["stratum"] in ("repeated", "new_pair", "new_node")


def test_write_atomic_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_atomic(path, "old")

    def boom(*args):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        write_atomic(path, "new")
    assert path.read_text() == "old" and not list(tmp_path.glob(".*.tmp"))
