"""Every second of an evaluation is counted in a phase (progress.Timeline, evaluate's performance), and
the replay's records hold the E x K scores once."""

from __future__ import annotations

import json
import time

import pytest
import torch

import tgeval.eval.metrics as metrics
from tgeval import Protocol, build_catalog, chronological_split, evaluate
from tgeval.core import progress
from tgeval.eval import engine
from tgeval.eval.metrics import count_above_equal
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream


class _Clock:
    """A perf_counter that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(progress.time, "perf_counter", fake)
    return fake


def test_phases_sum_to_the_wall_time_and_nest_exclusively(clock: _Clock) -> None:
    with progress.timing() as timeline:
        with progress.phase("read"):
            clock.tick(2)
            with progress.phase("parse"):  # inside "read": counted once, as "parse"
                clock.tick(3)
        clock.tick(1)  # in no phase: "other"
        with progress.phase("read"):  # a repeated name adds up
            clock.tick(1)
        snap = timeline.snapshot()
    assert snap == {"wall_seconds": 7.0, "phases": {"parse": 3.0, "read": 3.0, "other": 1.0}}
    assert timeline.summary() == "7.0 s: parse 3.0, read 3.0, other 1.0"


def test_open_phases_count_up_to_now_and_outer_timelines_keep_counting(clock: _Clock) -> None:
    with progress.timing() as outer:
        clock.tick(1)
        with progress.phase("write"):
            clock.tick(2)
            with progress.timing() as inner:
                with progress.phase("serialise"):
                    clock.tick(4)
                    open_snap = outer.snapshot()  # both phases open
            assert inner.snapshot() == {"wall_seconds": 4.0, "phases": {"serialise": 4.0, "other": 0.0}}
            clock.tick(8)
    assert open_snap == {"wall_seconds": 7.0, "phases": {"write": 2.0, "serialise": 4.0, "other": 1.0}}
    assert outer.snapshot()["phases"] == {"write": 10.0, "serialise": 4.0, "other": 1.0}
    with progress.phase("unseen"):  # no timeline open: nothing to count into, no error
        pass
    assert "unseen" not in outer.snapshot()["phases"]


def _result(k: int = 3):
    src = [0, 1, 2, 0, 1, 3, 0, 2, 1, 0, 3, 2, 1, 0, 2, 3]
    dst = [1, 2, 3, 1, 3, 1, 2, 1, 2, 1, 2, 3, 0, 3, 0, 1]
    data = make_stream(src, dst, list(range(16)))
    split = chronological_split(data, (0.5, 0.25, 0.25))
    catalog = build_catalog(data, "train", train_end=split.train.end)
    with progress.timing() as command:
        result = evaluate(EdgeBank(4), data, split.test, Protocol(num_negatives=k, batch_size=2, history="batch"),
                          sampler=UniformSampler(catalog, replace=True), catalog=catalog)
    return result, command


def test_evaluate_records_its_phases_and_tells_the_command() -> None:
    result, command = _result()
    perf = result.performance
    assert {"prepare", "warm_up", "replay", "metrics", "manifest", "other"} <= set(perf["phases"])
    assert sum(perf["phases"].values()) == pytest.approx(perf["wall_seconds"], abs=1e-9)
    assert perf["phases"]["replay"] >= perf["seconds"] > 0  # the scoring loop is inside the replay phase
    assert perf["wall_seconds"] <= command.snapshot()["wall_seconds"]
    for name in ("prepare", "replay", "metrics"):  # an enclosing command's timeline sees the same phases
        assert command.snapshot()["phases"][name] >= perf["phases"][name] - 1e-9


def test_a_timeline_in_performance_is_written_as_its_snapshot(tmp_path) -> None:
    result, _ = _result()
    with progress.timing() as command:
        with progress.phase("read"):
            time.sleep(0.01)
        result.performance["command"] = command
        with progress.phase("write"):
            result.save(tmp_path / "r.json")
    written = json.loads((tmp_path / "r.json").read_text())["performance"]["command"]
    assert written["phases"]["read"] >= 0.01 and "write" in written["phases"]
    assert sum(written["phases"].values()) == pytest.approx(written["wall_seconds"], abs=1e-9)


def test_records_hold_the_scores_once() -> None:
    result, _ = _result()
    score, neg = result.records["score"], result.records["neg_score"]
    assert neg.shape == (score.numel(), 3)
    assert score.untyped_storage().data_ptr() == neg.untyped_storage().data_ptr()  # views of one matrix


@pytest.mark.parametrize("tolerance", [0.0, 1e-6])
def test_count_above_equal_in_row_chunks(tolerance: float, monkeypatch) -> None:
    gen = torch.Generator().manual_seed(0)
    pos = torch.randint(-2, 3, (23,), generator=gen).double()
    neg = torch.randint(-2, 3, (23, 4), generator=gen).double()
    neg[3, 1] = pos[3] + 1e-9  # within the tie band when tolerance > 0
    mask = torch.rand(23, 4, generator=gen) < 0.7
    whole = count_above_equal(pos, neg, mask, tolerance)
    monkeypatch.setattr(metrics, "CHUNK_SCORES", 9)  # rows of 2
    chunked = count_above_equal(pos, neg, mask, tolerance)
    assert all(torch.equal(a, b) for a, b in zip(whole, chunked))
    empty = count_above_equal(torch.zeros(0), torch.zeros(0, 4))
    assert empty[0].shape == (0,)


def test_windows_bound_the_prepared_queries(monkeypatch) -> None:
    """With many negatives per event, a window prepares at most WINDOW_QUERIES (event, item) queries
    (unless one batch alone holds more), and the records do not depend on it."""
    whole, _ = _result(k=5)
    sizes = []
    original = engine._Window.__init__

    def spy(self, events, keys, bounds, first, last, **kwargs):
        original(self, events, keys, bounds, first, last, **kwargs)
        sizes.append((bounds[last] - bounds[first], last - first))

    monkeypatch.setattr(engine._Window, "__init__", spy)
    monkeypatch.setattr(engine, "WINDOW_QUERIES", 6 * 2)  # 2 events of 1 + 5 queries: one batch
    windowed, _ = _result(k=5)
    assert len(sizes) > 1 and all(events * 6 <= 12 or batches == 1 for events, batches in sizes)
    for key in ("score", "neg_score", "neg", "sampled_above", "sampled_equal", "above", "equal"):
        assert torch.equal(windowed.records[key], whole.records[key]), key
    assert windowed.metrics == whole.metrics
