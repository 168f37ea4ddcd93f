"""The command line names every metric with its protocol, scores a negatives file whole unless told
otherwise, and speaks in its own flags."""

import json

import pytest
import torch

from tgeval.cli.program import _subparser, build_parser, cli_message, main
from tgeval.data import read_events
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.samplers import write_tgb_negatives
from tests.helpers import snap_text

WIDTH = 25  # more than the default K of 20: a file cut to the default would go unnoticed


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A SNAP edge list and a TGB negatives file of WIDTH negatives for each of its test events."""
    folder = tmp_path_factory.mktemp("data")
    stream = generate_events(num_events=1500, num_nodes=120, seed=4)
    snap = folder / "events.txt"
    snap.write_text(snap_text(stream))
    data, info = read_events(snap, "snap")
    test = chronological_split(data).test.select(data)  # the CLI's default split
    negatives = torch.randint(0, info.num_nodes, (test.num_events, WIDTH), generator=torch.Generator().manual_seed(0))
    tgb = folder / "tgb_test_ns.pkl"
    write_tgb_negatives(tgb, test.src, test.dst, test.t, negatives.tolist())
    return snap, tgb


def evaluate(snap, out, *extra):
    return main(["evaluate", str(snap), "--format", "snap", "--model", "edgebank", "--no-all-entity", "--out",
                 str(out), *extra])


def test_a_negatives_file_is_scored_whole_unless_k_is_chosen(files, tmp_path, capsys):
    snap, tgb = files
    assert evaluate(snap, tmp_path / "whole.json", "--sampler", f"tgb:path={tgb}") == 0
    manifest = json.loads((tmp_path / "whole.json").read_text())["manifest"]
    assert manifest["protocol"]["num_negatives"] == manifest["sampler"]["num_negatives"] == WIDTH
    assert f"sampled MRR = MRR (K={WIDTH}, fixed)" in capsys.readouterr().out
    for extra in (["--negatives", "5"], ["--sampler", f"tgb:path={tgb},num_negatives=5"]):
        assert evaluate(snap, tmp_path / "five.json", "--sampler", f"tgb:path={tgb}", *extra) == 0
        manifest = json.loads((tmp_path / "five.json").read_text())["manifest"]
        assert manifest["protocol"]["num_negatives"] == manifest["sampler"]["num_negatives"] == 5
        assert manifest["sampler"]["stored_num_negatives"] == WIDTH
        assert manifest["sampler"]["rule"].startswith(f"the first 5 of the {WIDTH} stored columns, chosen explicitly")
        assert f"sampled MRR = MRR (K=5 of {WIDTH} stored, fixed)" in capsys.readouterr().out
    assert evaluate(snap, tmp_path / "x.json", "--sampler", f"tgb:path={tgb}", "--negatives", str(WIDTH + 1)) == 2
    assert f"--negatives {WIDTH + 1} exceeds the {WIDTH} negatives per positive" in capsys.readouterr().err
    assert evaluate(snap, tmp_path / "x.json", "--sampler", f"tgb:path={tgb},num_negatives=5", "--negatives", "7") == 2
    assert "--negatives 7 contradicts `num_negatives=5` in --sampler 'tgb:path=" in capsys.readouterr().err


@pytest.mark.parametrize("argv,named,not_named", [
    (["evaluate", "{unsorted}", "--model", "edgebank"], "pass --sort.", "sort=True"),
    (["evaluate", "{snap}", "--model", "edgebank", "--prefilter", "0"], "--prefilter must be", "Protocol."),
    (["evaluate", "{snap}", "--model", "edgebank", "--batch-size", "0"], "--batch-size >= 1", "batch_size"),
    (["train", "{snap}", "--model", "membership", "--negatives", "0"],
     "--negatives must be an integer >= 1 for training", "num_negatives"),
    (["train", "{snap}", "--model", "membership", "--overwrite"],
     "--overwrite replaces the run in --checkpoint-dir, and no folder is given", "Checkpointing"),
])
def test_errors_name_the_flags(files, tmp_path, capsys, argv, named, not_named):
    unsorted = tmp_path / "unsorted.txt"
    unsorted.write_text("1 2 10\n2 3 5\n")
    argv = [part.format(unsorted=unsorted, snap=files[0]) for part in argv]
    assert main([*argv, "--format", "snap"]) == 2
    err = capsys.readouterr().err
    assert named in err and not_named not in err


def test_cli_message_translates_only_the_commands_own_options():
    train = _subparser(build_parser(), "train")
    assert cli_message("resume it (resume=.../last.pt, --resume), replace it (overwrite=True, --overwrite).",
                       train) == "resume it (--resume .../last.pt), replace it (--overwrite)."
    assert cli_message("got epochs=3, patience=0; val_metric", train) == "got --epochs 3, --patience 0; --val-metric"
    assert cli_message("Validation(negatives=0) needs an all-entity Validation.metric; or Validation(state='rebuilt'); "
                       "Validation.sampler", train) == \
        "--val-negatives 0 needs an all-entity --val-metric; or --val-state rebuilt; Validation.sampler"
    assert cli_message("or pass allow_whole_stream=True to do it on purpose.", train) == \
        "or pass --allow-whole-stream to do it on purpose."
    # the fields of the grouped options are their flags
    assert cli_message("Validation.patience must be None; Recipe.batch_size and Recipe(history='exact')", train) == \
        "--patience must be None; --batch-size and --history exact"
    evaluate = _subparser(build_parser(), "evaluate")
    assert cli_message("Tuning.candidate_budget must be >= 1; Tuning(records='all')", evaluate) == \
        "--candidate-budget must be >= 1; Tuning(records='all')"
    untouched = ("call `validate(data, sort=True)`, pass strict=True, read /data/batch_size/x.txt, "
                 "keep prefilter=None, info.node_ids, --sampler 'historical:num_negatives=3'")
    assert cli_message(untouched, train) == untouched
    # a value's closing quote opens no quoted input: the spec after it stays as written
    quoted = "option x='1.2' in 'popularity:batch_size=3'"
    assert cli_message(quoted, train) == quoted
