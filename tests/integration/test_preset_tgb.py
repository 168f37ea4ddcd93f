"""The TGB preset: TGB's whole link-prediction protocol under one name, checked against a plain
re-implementation of TGB's EdgeBank example (dict memory, slices of 200, every destination in
the id range except the source's positives at that time, TGB's mean of optimistic and
pessimistic ranks) and, on the shared Wikipedia file, against TGB's published EdgeBank MRR."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tgeval import evaluate
from tgeval.cli import main
from tgeval.data.synthetic import generate_events
from tgeval.models.heuristics import EdgeBank
from tgeval.presets import TGB
from tgeval.samplers import write_tgb_negatives
from tests.conftest import require_dataset
from tests.helpers import snap_text


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
    data = distinct_times_stream()
    split = TGB.split(data)
    catalog = TGB.catalog(data)
    options = dict(window=TGB.edgebank_window(data, split), anchor="latest") if window else {}
    result = evaluate(EdgeBank(int(data.dst.max()) + 1, **options), data, split.test, TGB.protocol(), catalog=catalog)
    src, dst, t = data.src.numpy(), data.dst.numpy(), data.t.numpy()
    expected = tgb_edgebank_mrr(src, dst, t, split.test.start, split.test.end, split.train.end, window)
    assert result.metrics["all_entity"]["mrr"]["micro"] == pytest.approx(expected, abs=1e-12)


def distinct_times_stream():
    """A bipartite stream whose timestamps are all distinct: TGB's fixed slices of 200 are then
    tgeval's timestamp batches."""
    data = generate_events(num_events=1500, num_nodes=40, seed=3, bipartite=True)
    data.t = torch.arange(data.num_events) * 7
    return data


def run(tmp_path, *flags):
    events = tmp_path / "events.txt"
    events.write_text(snap_text(distinct_times_stream()))
    out = tmp_path / "r.json"
    assert main(["evaluate", str(events), "--format", "snap", *flags, "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("model", ["edgebank", "edgebank-window"])
def test_the_flag_gives_the_python_presets_numbers(tmp_path, model, capsys):
    saved = run(tmp_path, "--model", model, "--preset", "tgb")
    data = distinct_times_stream()
    split = TGB.split(data)
    options = dict(window=TGB.edgebank_window(data, split), anchor="latest") if model == "edgebank-window" else {}
    expected = evaluate(EdgeBank(int(data.dst.max()) + 1, **options), data, split.test, TGB.protocol(),
                        catalog=TGB.catalog(data))
    assert saved["metrics"]["all_entity"]["mrr"] == expected.metrics["all_entity"]["mrr"]
    assert saved["metrics"].get("sampled") is None and saved["manifest"]["catalog"]["kind"] == "range"
    preset = saved["manifest"]["preset"]
    assert preset["name"] == "tgb" and preset["overridden"] == {}
    assert preset["settings"]["history"] == "batch" and preset["settings"]["negatives"] == 0
    assert "preset tgb; online replay, history batch" in capsys.readouterr().out
    command = saved["performance"]["command"]  # every second of the command, by phase
    assert {"read", "warm_up", "replay", "metrics", "write", "other"} <= command["phases"].keys()
    assert sum(command["phases"].values()) == pytest.approx(command["wall_seconds"], rel=1e-9)


def test_flags_beside_the_preset_win_and_are_recorded(tmp_path, capsys):
    saved = run(tmp_path, "--model", "edgebank", "--preset", "tgb", "--history", "exact", "--catalog=train")
    assert saved["manifest"]["history"]["mode"] == "exact" and saved["manifest"]["catalog"]["kind"] == "train"
    assert saved["manifest"]["preset"]["overridden"] == {"history": "exact", "catalog": "train"}
    assert "history" not in saved["manifest"]["preset"]["settings"]
    assert "preset tgb (overridden: history=exact, catalog=train)" in capsys.readouterr().out


def test_a_tgb_negatives_file_sets_k(tmp_path):
    data = distinct_times_stream()
    test = TGB.split(data).test
    src, dst, t = (x[test.start:test.end] for x in (data.src, data.dst, data.t))
    pages = torch.arange(int(data.dst.min()), int(data.dst.max()) + 1)
    negatives = [pages[pages != d].tolist() for d in dst.tolist()]  # every other page, as tgbl-wiki-v2's
    write_tgb_negatives(tmp_path / "ns.pkl", src, dst, t, negatives)
    saved = run(tmp_path, "--model", "edgebank", "--preset", "tgb", "--sampler", f"tgb:path={tmp_path / 'ns.pkl'}")
    assert saved["manifest"]["protocol"]["num_negatives"] == pages.numel() - 1
    assert saved["manifest"]["preset"]["overridden"] == {"sampler": f"tgb:path={tmp_path / 'ns.pkl'}"}
    # against every other page, the file's MRR is the range catalog's
    assert saved["metrics"]["sampled"]["mrr"] == pytest.approx(saved["metrics"]["all_entity"]["mrr"], abs=1e-12)


@pytest.mark.datasets
@pytest.mark.parametrize("model, published", [("edgebank", 0.495), ("edgebank-window", 0.571)])
def test_wikipedia_reaches_tgbs_published_mrr(tmp_path, model, published):
    path = require_dataset("wikipedia")
    out = tmp_path / "r.json"
    assert main(["evaluate", str(path), "--format", "snap", "--model", model, "--preset", "tgb", "--out", str(out)]) == 0
    mrr = json.loads(out.read_text())["metrics"]["all_entity"]["mrr"]["micro"]
    assert round(mrr, 3) == published  # TGB's leaderboard: EdgeBank (unlimited) and EdgeBank (time window)
