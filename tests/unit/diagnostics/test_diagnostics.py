"""Lifetimes / surprise / novelty diagnostics against plain-Python references, and ``tgeval diagnose``."""

import json
import math
import random

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tests.conftest import make_stream
from tests.strategies import streams
from tgeval.data.split import chronological_split
from tgeval.data.strata import NEW_NODE, NEW_PAIR, REPEATED
from tgeval.errors import SplitError
from tgeval.diagnostics import (SURPRISE_RATIOS, class_counts, lifetime_summary, novelty_series,
                                segment_strata_shares, surprise_index, surprise_table)
from tgeval.cli.program import build_parser
from tgeval.cli.diagnose import diagnose_command
from tgeval.diagnostics.plots import birth_death_panels, is_bipartite
from tgeval.samplers.lifespans import node_lifetimes, pair_lifetimes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---- plain-Python references ------------------------------------------------------------------
def ref_lifetimes(data, kind, directed):
    out = {}
    for u, v, t in zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()):
        keys = [u, v] if kind == "nodes" else [(u, v) if directed else (min(u, v), max(u, v))]
        for k in keys:
            b, d = out.get(k, (t, t))
            out[k] = (min(b, t), max(d, t))
    return out


def ref_counts(lifetimes, t_split):
    h = sum(1 for b, d in lifetimes.values() if d < t_split)
    o = sum(1 for b, d in lifetimes.values() if b < t_split <= d)
    i = sum(1 for b, d in lifetimes.values() if b >= t_split)
    return h, o, i


def ref_novelty(data, directed):
    by_t = {}
    for u, v, t in zip(data.src.tolist(), data.dst.tolist(), data.t.tolist()):
        by_t.setdefault(t, set()).add((u, v) if directed else (min(u, v), max(u, v)))
    seen, rows = set(), []
    for t in sorted(by_t):
        pairs = by_t[t]
        rows.append((t, len(pairs - seen) / len(pairs), len(pairs)))
        seen |= pairs
    return rows


# ---- lifetimes and surprise -----------------------------------------------------------------------
def test_boundary_event_at_split_is_after_the_split():
    # nodes: 0 lives [1, 1]; 1 lives [1, 2]; 2 lives [2, 3]; 3 lives [3, 3]
    data = make_stream([0, 1, 2], [1, 2, 3], [1, 2, 3])
    counts = class_counts(node_lifetimes(data), 2)
    # t_split = 2: node 0 dies at 1 < 2 -> H; node 1 born 1 < 2 <= death 2 -> O (dies exactly at the split);
    # node 2 born exactly at 2 -> I; node 3 born at 3 -> I. surprise = 2 / (1 + 2)
    assert (counts.historical, counts.overlap, counts.inductive) == (1, 1, 2)
    assert counts.surprise == pytest.approx(2 / 3)
    # pairs (0,1)@1, (1,2)@2, (2,3)@3 at t_split = 2: H, I, I -> surprise 2 / 2
    pairs = class_counts(pair_lifetimes(data), 2)
    assert (pairs.historical, pairs.overlap, pairs.inductive) == (1, 0, 2)
    assert pairs.surprise == 1.0
    # a fractional split between 1 and 2 behaves like 2 for integer times (ceil)
    assert class_counts(node_lifetimes(data), 1.5) == counts


def test_surprise_is_nan_when_nothing_lives_after_the_split():
    data = make_stream([0], [1], [5])
    assert math.isnan(surprise_index(node_lifetimes(data), 6))
    assert lifetime_summary(data, 6, directed=True)["nodes"]["surprise"] is None


@settings(max_examples=60, deadline=None)
@given(data=streams(max_events=30), directed=st.booleans(), split=st.integers(-1, 13), frac=st.booleans())
def test_counts_and_surprise_match_reference(data, directed, split, frac):
    t_split = split + 0.5 if frac else split
    for kind, lt in (("nodes", node_lifetimes(data)), ("pairs", pair_lifetimes(data, directed=directed))):
        ref = ref_lifetimes(data, kind, directed)
        keys = lt.keys.tolist()
        n = int(max(data.src.max(), data.dst.max())) + 1
        decoded = keys if kind == "nodes" else [(k // n, k % n) for k in keys]
        assert {k: (b, d) for k, b, d in zip(decoded, lt.birth.tolist(), lt.death.tolist())} == ref
        counts = class_counts(lt, t_split)
        h, o, i = ref_counts(ref, t_split)
        assert (counts.historical, counts.overlap, counts.inductive) == (h, o, i)
        expected = i / (o + i) if o + i else math.nan
        assert surprise_index(lt, t_split) == pytest.approx(expected, nan_ok=True)


@settings(max_examples=30, deadline=None)
@given(data=streams(max_events=30), directed=st.booleans())
def test_surprise_table_matches_reference(data, directed):
    table = surprise_table(data, directed=directed)
    assert [row["test_ratio"] for row in table] == list(SURPRISE_RATIOS)
    assert SURPRISE_RATIOS == (0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50)
    times = np.asarray(data.t.tolist(), dtype=np.float64)
    for row in table:
        t_split = float(np.quantile(times, 1.0 - row["test_ratio"]))
        assert row["t_split"] == t_split
        for kind in ("nodes", "pairs"):
            h, o, i = ref_counts(ref_lifetimes(data, kind, directed), t_split)
            entry = row[kind]
            assert (entry["historical"], entry["overlap"], entry["inductive"]) == (h, o, i)
            assert entry["surprise"] == pytest.approx(i / (o + i))  # the quantile <= max t: O + I > 0
            assert 0.0 <= entry["surprise"] <= 1.0


def test_float_times_and_undirected_pairs():
    data = TemporalData(src=torch.tensor([0, 1, 0]), dst=torch.tensor([1, 0, 2]), t=torch.tensor([0.5, 1.0, 1.5]))
    # undirected: (0,1) lives [0.5, 1.0], (0,2) lives [1.5, 1.5]; t_split = 1.0 -> O, I
    summary = lifetime_summary(data, 1.0, directed=False)
    assert summary["pairs"] == {"historical": 0, "overlap": 1, "inductive": 1, "surprise": 0.5}
    # directed: (0,1)@0.5 -> H, (1,0)@1.0 -> I, (0,2)@1.5 -> I
    assert lifetime_summary(data, 1.0, directed=True)["pairs"]["inductive"] == 2


# ---- novelty ------------------------------------------------------------------------------------
def test_novelty_hand_computed():
    # t=1: pairs {(0,1)} (two records), new -> 1; t=2: {(0,1), (1,2)}, (1,2) new -> 1/2;
    # t=3: {(1,0)} directed: new -> 1; undirected: (0,1) seen -> 0
    data = make_stream([0, 0, 0, 1, 1], [1, 1, 1, 2, 0], [1, 1, 2, 2, 3])
    s = novelty_series(data, directed=True)
    assert s.t.tolist() == [1, 2, 3]
    assert s.novelty.tolist() == [1.0, 0.5, 1.0]
    assert s.num_pairs.tolist() == [1, 2, 1]  # distinct pairs, not the 2 records at t=1
    assert novelty_series(data, directed=False).novelty.tolist() == [1.0, 0.5, 0.0]


@settings(max_examples=60, deadline=None)
@given(data=streams(max_events=40), directed=st.booleans(), seed=st.integers(0, 2**16))
def test_novelty_matches_set_reference(data, directed, seed):
    expected = ref_novelty(data, directed)
    order = list(range(data.src.numel()))
    random.Random(seed).shuffle(order)  # any event order gives the same series
    idx = torch.tensor(order)
    shuffled = TemporalData(src=data.src[idx], dst=data.dst[idx], t=data.t[idx])
    for stream in (data, shuffled):
        s = novelty_series(stream, directed=directed)
        got = s.to_rows()
        assert [(t, size) for t, _, size in got] == [(t, size) for t, _, size in expected]
        assert [nu for _, nu, _ in got] == pytest.approx([nu for _, nu, _ in expected])


@settings(max_examples=30, deadline=None)
@given(data=streams(min_events=10, max_events=40), directed=st.booleans())
def test_segment_shares_match_reference(data, directed):
    try:
        split = chronological_split(data, (0.6, 0.2, 0.2))
    except SplitError:  # too few distinct timestamps for three segments
        assume(False)
        return
    shares = segment_strata_shares(data, split, directed=directed)
    src, dst = data.src.tolist(), data.dst.tolist()
    key = (lambda u, v: (u, v)) if directed else (lambda u, v: (min(u, v), max(u, v)))
    for name in ("val", "test"):
        seg = split[name]
        nodes = set(src[: seg.start]) | set(dst[: seg.start])
        pairs = {key(u, v) for u, v in zip(src[: seg.start], dst[: seg.start])}
        ref = [0, 0, 0]
        for u, v in zip(src[seg.start: seg.end], dst[seg.start: seg.end]):
            ref[NEW_NODE if not (u in nodes and v in nodes) else REPEATED if key(u, v) in pairs else NEW_PAIR] += 1
        entry = shares[name]
        assert [entry["repeated"], entry["new_pair"], entry["new_node"]] == ref
        assert entry["events"] == seg.num_events
        if seg.num_events:
            assert entry["repeated_share"] + entry["new_pair_share"] + entry["new_node_share"] == pytest.approx(1.0)


# ---- plots and CLI --------------------------------------------------------------------------------
def test_bipartite_panels():
    data = make_stream([0, 1, 2], [3, 4, 3], [1, 2, 3])
    assert is_bipartite(data)
    panels = birth_death_panels(data, kind="nodes")
    assert [lt.keys.tolist() for _, lt in panels] == [[0, 1, 2], [3, 4]]
    assert len(birth_death_panels(data, kind="nodes", bipartite=False)) == 1
    assert len(birth_death_panels(data, kind="pairs")) == 1
    assert not is_bipartite(make_stream([0, 1], [1, 0], [1, 2]))
    with pytest.raises(ValueError, match="kind"):
        birth_death_panels(data, kind="edges")  # type: ignore[arg-type]


def _parse(argv):
    return build_parser().parse_args(argv)


@pytest.mark.parametrize("flag", ["--directed", "--undirected"])
def test_diagnose_command_writes_json_and_plots(tmp_path, capsys, flag):
    rng = np.random.default_rng(0)
    e = 400
    src, dst = rng.integers(0, 30, e), rng.integers(0, 30, e)
    t = np.sort(rng.integers(0, 200, e))
    path = tmp_path / "events.txt"
    path.write_text("".join(f"{u} {v} {s}\n" for u, v, s in zip(src, dst, t)))
    out = tmp_path / "diag"
    args = _parse(["diagnose", str(path), "--format", "snap", "--test-ratio", "0.2", flag, "--out", str(out)])
    assert args.handler == ("tgeval.cli.diagnose", "diagnose_command")
    assert diagnose_command(args) == 0
    report = json.loads((out / "diagnose.json").read_text())
    for kind in ("nodes", "pairs"):
        assert set(report["lifetimes"][kind]) >= {"historical", "overlap", "inductive", "surprise"}
        assert 0.0 <= report["lifetimes"][kind]["surprise"] <= 1.0
    assert report["lifetimes"]["t_split"] == float(np.quantile(t.astype(float), 0.8))
    assert len(report["surprise_table"]) == 9
    assert set(report["novelty"]) >= {"summary", "segments"}
    assert report["data"]["directed"] is (flag == "--directed")
    for name in ("birth_death_nodes.png", "birth_death_pairs.png", "novelty.png"):
        blob = (out / name).read_bytes()
        assert blob.startswith(PNG_MAGIC) and len(blob) > 1000
    assert (out / "novelty.csv").read_text().startswith("t,novelty,distinct_pairs,new_pairs\n")
    printed = capsys.readouterr().out
    assert "surprise" in printed and "diagnose.json" in printed


def test_diagnose_without_a_valid_split_still_reports(tmp_path):
    from tgeval.cli.diagnose import diagnose, format_summary
    report = diagnose(make_stream([0, 1, 2], [1, 2, 0], [1, 1, 1]), tmp_path)  # one timestamp: no val/test split
    assert report["novelty"]["segments"] is None and "segments_error" in report["novelty"]
    assert report["lifetimes"]["nodes"] == {"historical": 0, "overlap": 0, "inductive": 3, "surprise": 1.0}
    assert "segments" in format_summary(report)
    assert (tmp_path / "birth_death_pairs.png").read_bytes().startswith(PNG_MAGIC)


def test_diagnose_rejects_bad_test_ratio(tmp_path):
    from tgeval.cli.diagnose import diagnose
    with pytest.raises(ValueError, match="test_ratio"):
        diagnose(make_stream([0, 1], [1, 2], [1, 2]), tmp_path, test_ratio=0.7)


def test_directed_flags_are_exclusive():
    with pytest.raises(SystemExit):
        _parse(["diagnose", "x", "--format", "snap", "--directed", "--undirected", "--out", "o"])
