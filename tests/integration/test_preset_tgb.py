"""The TGB preset: TGB's whole link-prediction protocol under one name, checked against a plain
re-implementation of TGB's EdgeBank example (dict memory, slices of 200, every destination in
the id range except the source's positives at that time, TGB's mean of optimistic and
pessimistic ranks) and, on the shared Wikipedia file, against TGB's published EdgeBank MRR."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch
from torch_geometric.data import TemporalData

from tgeval.eval.tuning import Tuning
from tgeval import evaluate
from tgeval.cli.program import main
from tgeval.data.datasets import load_dataset
from tgeval.data.synthetic import generate_events
from tgeval.models.base import pairwise_scorer
from tgeval.models.heuristics import EdgeBank
from tgeval.models import registry
from tgeval.models.clock import EventClock
from tgeval.eval.presets import EXACT_HISTORY_MODELS, TGB
from tgeval.samplers import write_tgb_negatives
from tests.conftest import require_dataset
from tests.helpers import StatelessModel, snap_text


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
@pytest.mark.parametrize("model, published", [("edgebank", 0.495), ("edgebank-window", 0.571), ("local-global", 0.821)])
def test_wikipedia_reaches_tgbs_published_mrr(tmp_path, model, published):
    path = require_dataset("wikipedia")
    out = tmp_path / "r.json"
    assert main(["evaluate", str(path), "--format", "snap", "--model", model, "--preset", "tgb", "--out", str(out)]) == 0
    mrr = json.loads(out.read_text())["metrics"]["all_entity"]["mrr"]["micro"]
    assert round(mrr, 3) == published  # TGB's leaderboard: EdgeBank (unlimited), EdgeBank (time window), LocalGlobal


@pytest.mark.parametrize("model", ["recency-local", "recency-global", "popularity-local", "popularity-global",
                                   "local-global", "recency-popularity-local", "recency-popularity-global", "poptrack"])
def test_the_heuristics_get_their_leaderboard_history(tmp_path, model, capsys):
    assert model in EXACT_HISTORY_MODELS and "edgebank" not in EXACT_HISTORY_MODELS
    saved = run(tmp_path, "--model", model, "--preset", "tgb")
    preset = saved["manifest"]["preset"]
    assert saved["manifest"]["history"]["mode"] == "exact" and preset["settings"]["history"] == "exact"
    assert preset["reasons"]["history"].startswith("the heuristic's leaderboard protocol")
    assert "history exact (the heuristic's leaderboard protocol" in capsys.readouterr().out
    data = distinct_times_stream()
    split = TGB.split(data)
    protocol = TGB.protocol(model=model)
    assert protocol.history == "exact"
    # the command line's clock for poptrack: ticks of 200 events from the validation and test starts
    options = {"clock": EventClock(200, (split.val.start, split.test.start))} if model == "poptrack" else {}
    expected = evaluate(registry.build(model, num_nodes=int(data.dst.max()) + 1, **options), data, split.test,
                        protocol, catalog=TGB.catalog(data))
    assert saved["metrics"]["all_entity"]["mrr"] == expected.metrics["all_entity"]["mrr"]
    stale = run(tmp_path, "--model", model, "--preset", "tgb", "--history", "batch")  # a flag beside it wins
    assert stale["manifest"]["history"]["mode"] == "batch" and stale["manifest"]["preset"]["reasons"] == {}
    assert stale["manifest"]["preset"]["overridden"] == {"history": "batch"}
    # distinct times: stale; poptrack's ticks are the batches of 200 (on a stream of distinct times), so it sees the
    # same events from either
    assert (stale["metrics"]["all_entity"]["mrr"] == saved["metrics"]["all_entity"]["mrr"]) == (model == "poptrack")


def short_rows_file(tmp_path):
    """TGB's negatives of the test segment of :func:`distinct_times_stream` (every other page), the rows of every
    tenth event one shorter: TGB's file where a simultaneous positive was left out."""
    data = distinct_times_stream()
    test = TGB.split(data).test
    src, dst, t = (x[test.start:test.end] for x in (data.src, data.dst, data.t))
    pages = torch.arange(int(data.dst.min()), int(data.dst.max()) + 1)
    negatives = [pages[pages != d].tolist()[: pages.numel() - 1 - (i % 10 == 0)] for i, d in enumerate(dst.tolist())]
    write_tgb_negatives(tmp_path / "ns.pkl", src, dst, t, negatives)
    return tmp_path / "ns.pkl", negatives


def test_the_preset_reads_short_rows_as_tgb_defines_them(tmp_path, capsys):
    path, negatives = short_rows_file(tmp_path)
    events = tmp_path / "events.txt"
    events.write_text(snap_text(distinct_times_stream()))
    flags = ["evaluate", str(events), "--format", "snap", "--model", "edgebank"]
    assert main([*flags, "--sampler", f"tgb:path={path}"]) == 2  # outside the preset a short row is refused
    assert "short='allow'" in capsys.readouterr().err
    assert main([*flags, "--preset", "tgb", "--sampler", f"tgb:path={path},short=error"]) == 2  # given: it wins
    assert "rows shorter than" in capsys.readouterr().err
    saved = run(tmp_path, "--model", "edgebank", "--preset", "tgb", "--sampler", f"tgb:path={path}")
    sampler, preset = saved["manifest"]["sampler"], saved["manifest"]["preset"]
    width = max(map(len, negatives))
    assert sampler["short"] == "allow" and preset["settings"]["sampler_options"] == {"short": "allow"}
    assert preset["overridden"] == {"sampler": f"tgb:path={path}"}
    short = sum(len(row) < width for row in negatives)
    assert sampler["num_padded_rows"] == sampler["effective_num_negatives"]["num_short_rows"] == short > 0
    assert sampler["effective_num_negatives"]["mean"] == pytest.approx(sum(map(len, negatives)) / len(negatives))
    assert saved["metrics"]["sampled"]["num_events"] == len(negatives)  # no event dropped
    line = f"{short} of {len(negatives)} rows below K, each event ranked against its own row"
    assert line in capsys.readouterr().out


class ResidueModel(StatelessModel):
    """Scores ``(7 src + 3 dst) mod 5``: five levels, many ties, no table of every pair."""

    def score(self, src, dst, t):
        return ((7 * src + 3 * dst) % 5).double()

    def candidate_scorer(self, src, t, candidates):
        return pairwise_scorer(self.score, src, t, candidates)


@pytest.fixture(scope="module")
def tgbl_wiki(tmp_path_factory):
    """tgbl-wiki in TGB's numbering (the shared file's ids minus one, as ``benchmarks/reproduce_tgb.py``), its
    edge list as TGB ships it and TGB's validation and test negatives written by py-tgb's own generator."""
    pytest.importorskip("tgb.linkproppred.negative_generator",
                        reason="py-tgb is not installed (optional: pip install -e '.[tgb]')")
    from tgb.linkproppred.negative_generator import NegativeEdgeGenerator

    require_dataset("wikipedia")
    data, _ = load_dataset("wikipedia")
    data = TemporalData(src=data.src - 1, dst=data.dst - 1, t=data.t)
    split = TGB.split(data)
    folder = tmp_path_factory.mktemp("tgbl-wiki")
    for mode in ("val", "test"):
        segment = split[mode]
        generator = NegativeEdgeGenerator("tgbl-wiki", first_dst_id=int(data.dst.min()),
                                          last_dst_id=int(data.dst.max()), num_neg_e=1000, strategy="rnd",
                                          rnd_seed=42)
        generator.generate_negative_samples(segment.select(data), mode, str(folder))
    users = int(data.src.max()) + 1
    (folder / "tgbl-wiki_edgelist.csv").write_text(
        "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n"
        + "".join(f"{u},{v - users},{t},0\n" for u, v, t in zip(data.src.tolist(), data.dst.tolist(),
                                                                  data.t.tolist())))
    return data, split, folder


@pytest.mark.slow
@pytest.mark.datasets
@pytest.mark.parametrize("mode", ["val", "test"])
def test_tgbs_own_files_of_both_segments(tgbl_wiki, mode):
    """TGB's file of the segment (rows of 998 where TGB left out a simultaneous positive) gives every event the
    rank it has against every other page, warm-up = the events before the segment (val: the training events),
    and the rank against its own row of a static scorer with ties."""
    data, split, folder = tgbl_wiki
    num_nodes = int(data.dst.max()) + 1
    segment = split[mode]
    path = folder / f"tgbl-wiki_{mode}_ns.pkl"
    sampler = TGB.tgb_negatives(path, segment.select(data), num_nodes=num_nodes)
    effective = sampler.describe()["effective_num_negatives"]
    assert (effective["min"], effective["max"], effective["num_rows_without"]) == (998, 999, 0)
    assert effective["num_short_rows"] > 0
    result = evaluate(EdgeBank(num_nodes), data, segment, TGB.protocol(num_negatives=sampler.num_negatives),
                      sampler=sampler, catalog=TGB.catalog(data, num_nodes), tuning=Tuning(records="events"))
    events = result.event_table()
    assert result.metrics["sampled"]["num_events"] == segment.num_events
    assert torch.equal(events["sampled_rank"], events["rank"])
    static = evaluate(ResidueModel(num_nodes), data, segment, TGB.protocol(num_negatives=sampler.num_negatives),
                      sampler=sampler, tuning=Tuning(records="events")).event_table()
    table = pickle.loads(path.read_bytes())  # written by py-tgb in this test, so a plain load is safe
    src, dst, t = static["src"].numpy(), static["dst"].numpy(), static["t"].numpy()
    own = [table[key] for key in zip(src.tolist(), dst.tolist(), t.tolist())]  # each event's row
    lengths = np.array([len(row) for row in own])
    rows = np.full((src.size, lengths.max()), -1)
    rows[np.arange(lengths.max()) < lengths[:, None]] = np.concatenate(own)
    level = lambda u, v: (7 * u + 3 * v) % 5  # noqa: E731
    positive, negative = level(src, dst)[:, None], np.where(rows >= 0, level(src[:, None], rows), -1)
    expected = 1 + (negative > positive).sum(1) + 0.5 * (negative == positive).sum(1)
    assert static["sampled_rank"].tolist() == expected.tolist()


@pytest.mark.slow
@pytest.mark.datasets
def test_the_validation_file_through_the_command(tgbl_wiki, tmp_path, capsys):
    _, split, folder = tgbl_wiki
    out = tmp_path / "val.json"
    assert main(["evaluate", str(folder / "tgbl-wiki_edgelist.csv"), "--format", "tgb", "--model", "edgebank",
                 "--preset", "tgb", "--segment", "val", "--sampler", f"tgb:path={folder / 'tgbl-wiki_val_ns.pkl'}",
                 "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["manifest"]["segment"]["start"] == split.train.end  # warmed up on the training events
    assert saved["manifest"]["sampler"]["short"] == "allow"
    assert saved["metrics"]["sampled"]["mrr"] == saved["metrics"]["all_entity"]["mrr"]
    assert "rows below K, each event ranked against its own row" in capsys.readouterr().out


def test_a_decayed_popularity_keeps_tgbs_batch_history(tmp_path):
    saved = run(tmp_path, "--model", "popularity-local", "--half-life", "100", "--preset", "tgb")
    assert saved["manifest"]["history"]["mode"] == "batch" and saved["manifest"]["preset"]["reasons"] == {}


def test_a_popularity_decayed_in_time_keeps_tgbs_history_in_python_as_on_the_command_line():
    assert TGB.protocol(model="popularity-global").history == "exact"
    assert TGB.protocol(model="popularity-global", decayed_in_time=True).history == "batch"
