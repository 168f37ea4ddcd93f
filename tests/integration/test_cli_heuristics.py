"""The recency and popularity heuristics from the command line: --window and --half-life reach the
model (the result equals the Python API's), EdgeBank's window rules, a window, a half-life and the
options of a part that is not measured are refused where they do not apply, and under --preset tgb
(whose window is EdgeBank's) their window stays unlimited, recorded."""

from __future__ import annotations

import contextlib
import json
import re

import pytest

from tgeval import build_catalog, chronological_split, evaluate
from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.models.heuristics import LocalPopularity, LocalRecency
from tgeval.eval.protocol import Protocol
from tests.helpers import snap_text

DATA = generate_events(num_events=800, num_nodes=40, seed=1)


def run(tmp_path, *flags):
    events = tmp_path / "events.txt"
    events.write_text(snap_text(DATA))
    out = tmp_path / "r.json"
    code = main(["evaluate", str(events), "--format", "snap", "--negatives", "0", *flags, "--out", str(out)])
    return code, (json.loads(out.read_text()) if code == 0 else None)


@pytest.mark.parametrize("flags, model", [(("--model", "recency-local", "--window", "50"), LocalRecency(40, window=50)),
                                          (("--model", "popularity-local", "--half-life", "30"),
                                           LocalPopularity(40, half_life=30.0))])
def test_options_reach_the_model(tmp_path, flags, model):
    code, saved = run(tmp_path, *flags)
    assert code == 0
    split = chronological_split(DATA)
    catalog = build_catalog(DATA, "train", train_end=split.train.end, num_nodes=40)
    expected = evaluate(model, DATA, split.test, Protocol(num_negatives=0), catalog=catalog)
    assert saved["metrics"]["all_entity"]["mrr"] == expected.metrics["all_entity"]["mrr"]


@pytest.mark.parametrize("flags, message", [
    (("--model", "recency-global", "--window", "val"), r"--window val is a rule of edgebank-window's window"),
    (("--model", "edgebank", "--half-life", "3"), r"--half-life applies to popularity, popularity-global, "
                                                  r"popularity-local, not to --model edgebank"),
    # accepted and ignored before: a window on a model without one, sampler options with no sampled negatives
    (("--model", "edgebank", "--window", "100"), r"--window applies to edgebank-window, popularity-global, "
                                                 r"popularity-local, recency-global, recency-local, not to --model "
                                                 r"edgebank \(.*its windowed variant is edgebank-window\)"),
    (("--model", "pa", "--window", "5"), r"--window applies to .*, not to --model pa\.$"),
    (("--model", "pa", "--sampler", "historical"), r"--sampler chooses the sampled negatives, and --negatives 0 "
                                                   r"\(given\) draws none"),
    (("--model", "pa", "--seed", "3"), r"--seed seeds the sampled negatives"),
    (("--model", "pa", "--no-all-entity", "--negatives", "5", "--catalog", "all"),
     r"--catalog applies to the all-entity ranking, and --no-all-entity skips it"),
    (("--model", "pa", "--no-all-entity", "--negatives", "5", "--candidate-budget", "9"),
     r"--candidate-budget applies to the all-entity ranking"),
])
def test_options_that_do_not_apply_are_refused(tmp_path, flags, message, capsys):
    code, _ = run(tmp_path, *flags)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert re.search(message, err, flags=re.M), err


def test_the_tgb_preset_leaves_their_window_unlimited(tmp_path):
    code, saved = run(tmp_path, "--model", "recency-local", "--preset", "tgb")
    assert code == 0
    assert saved["manifest"]["model"]["window"] is None
    assert saved["manifest"]["selection"] == {"rule": "unlimited: the preset's window (--window tgb) is EdgeBank's"}


@pytest.mark.parametrize("flags, model", [
    (("--model", "popularity-global", "--half-life", "2", "--clock", "events:7"), "popularity-global"),
    (("--model", "poptrack"), "poptrack")])
def test_an_event_clock_starts_at_the_segments_and_is_named(tmp_path, flags, model, capsys):
    """--clock events:TICK (poptrack's default: 200) ticks from the validation and test starts, as the Python API's
    EventClock; the manifest records it and the protocol line names it."""
    from tgeval.models import registry
    from tgeval.models.clock import EventClock

    code, saved = run(tmp_path, *flags, "--history", "exact")
    assert code == 0
    split = chronological_split(DATA)
    clock = EventClock(7 if model != "poptrack" else 200, (split.val.start, split.test.start))
    options = {"half_life": 2.0} if model != "poptrack" else {}
    built = registry.build(model, num_nodes=40, clock=clock, **options)
    assert saved["manifest"]["model"]["clock"] == clock.describe() == built.describe()["clock"]
    catalog = build_catalog(DATA, "train", train_end=split.train.end, num_nodes=40)
    expected = evaluate(built, DATA, split.test, Protocol(num_negatives=0), catalog=catalog)
    assert saved["metrics"]["all_entity"]["mrr"] == expected.metrics["all_entity"]["mrr"]
    assert f"event clock: one tick per {clock.tick} events from events {split.val.start:,}" in capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (("--model", "edgebank", "--clock", "events:5"), r"--clock applies to poptrack, popularity, popularity-global, "
                                                     r"popularity-local, not to --model edgebank"),
    (("--model", "popularity", "--clock", "events:0"), r"a clock is 'time' or 'events:TICK' with TICK >= 1"),
    (("--model", "popularity", "--clock", "events:5"), r"an event clock ages events for a half-life"),
])
def test_bad_clocks_are_refused(tmp_path, flags, message, capsys):
    with pytest.raises(SystemExit) if "TICK >= 1" in message else contextlib.nullcontext():  # argparse's usage error
        code, _ = run(tmp_path, *flags)
        assert code == 2
    assert re.search(message, capsys.readouterr().err)
