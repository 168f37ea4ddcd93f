"""Issue 29, part 1 and part 2's first bullet: an output never destroys an input or another output
(the same file by resolved path, symlink or hard link), and ``tgeval run`` writes one run per folder,
swapped in whole."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tgeval.core.atomic import check_distinct
from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.errors import OutputPathError
from tests.helpers import snap_text

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def snap_file(tmp_path):
    data = generate_events(num_events=1200, num_nodes=80, seed=5)
    path = tmp_path / "events.txt"
    path.write_text(snap_text(data))
    return path


def _evaluate(data, *options):
    return ["evaluate", str(data), "--format", "snap", "--model", "edgebank", "--negatives", "3", *options]


def _refused(argv, capsys, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "OutputPathError" in err and message in err, err


@pytest.mark.parametrize("link", ["same path", "relative spelling", "symlink", "hard link"])
def test_evaluate_out_onto_the_data_file_is_refused_and_the_data_kept(snap_file, tmp_path, monkeypatch, capsys, link):
    before = snap_file.read_bytes()
    out = {"same path": snap_file, "relative spelling": Path("sub/../events.txt"), "symlink": tmp_path / "r.json",
           "hard link": tmp_path / "r.json"}[link]
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    if link == "symlink":
        out.symlink_to(snap_file)
    elif link == "hard link":
        os.link(snap_file, out)
    _refused(_evaluate(snap_file, "--out", str(out)), capsys, f"is also the data file {str(snap_file)!r}")
    assert snap_file.read_bytes() == before


def test_save_events_onto_the_data_file_is_refused(snap_file, tmp_path, capsys):
    _refused(_evaluate(snap_file, "--out", str(tmp_path / "r.json"), "--save-events", str(snap_file)), capsys,
             "--save-events")
    assert not (tmp_path / "r.json").exists()


def test_out_and_save_events_on_one_path_are_refused(snap_file, tmp_path, capsys):
    same = str(tmp_path / "r.json")
    _refused(_evaluate(snap_file, "--out", same, "--save-events", same), capsys,
             f"--save-events {same!r} is also --out {same!r}")
    assert not Path(same).exists()


def test_out_onto_the_negatives_file_or_the_checkpoint_is_refused(snap_file, tmp_path, capsys):
    negatives, checkpoint = tmp_path / "neg.pt", tmp_path / "model.pt"
    negatives.write_bytes(b"negatives")
    checkpoint.write_bytes(b"checkpoint")
    _refused(_evaluate(snap_file, "--sampler", f"mixture:uniform=0.5,fixed:path={negatives}", "--out",
                       str(negatives)), capsys, "is also --sampler path 1")
    _refused(["evaluate", str(snap_file), "--format", "snap", "--model", str(checkpoint), "--out", str(checkpoint)],
             capsys, "is also --model")
    assert negatives.read_bytes() == b"negatives" and checkpoint.read_bytes() == b"checkpoint"


def test_the_other_commands_check_their_paths(snap_file, tmp_path, capsys):
    _refused(["train", str(snap_file), "--format", "snap", "--model", "membership", "--out", str(snap_file)], capsys,
             "is also the data file")
    data = tmp_path / "novelty.csv"  # diagnose writes novelty.csv into its folder
    data.write_bytes(snap_file.read_bytes())
    _refused(["diagnose", str(data), "--format", "snap", "--out", str(tmp_path)], capsys, "--out novelty.csv")
    assert main(_evaluate(snap_file, "--out", str(tmp_path / "r.json"), "--save-events", str(tmp_path / "r.csv"))) == 0
    for argv in (["compare", str(tmp_path / "r.csv"), "--out", str(tmp_path / "r.csv")],
                 ["report", str(tmp_path), "--out", str(tmp_path / "r.json")]):
        _refused(argv, capsys, "is also")
    _refused(["static", str(tmp_path / "static.json"), "--format", "snap", "--out", str(tmp_path)], capsys,
             "--out static.json")
    assert data.read_bytes() == snap_file.read_bytes() and main(["compare", str(tmp_path / "r.json")]) == 0


def test_check_distinct_compares_resolved_paths_and_inodes(tmp_path):
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")  # equal content, other file: allowed
    check_distinct({"the data file": tmp_path / "a"}, {"--out": tmp_path / "b", "--save-events": None})
    check_distinct({"the data file": tmp_path / "a", "--resume": None}, {}, {"--out": tmp_path / "results"})
    with pytest.raises(OutputPathError, match="is also --out"):  # two outputs not yet written
        check_distinct({}, {"--out": tmp_path / "new.json", "--save-events": tmp_path / "." / "new.json"})
    with pytest.raises(OutputPathError, match="lies inside --out .* replaces whole"):
        check_distinct({"--data": tmp_path / "results" / "data.txt"}, {}, {"--out": tmp_path / "results"})


# -- tgeval run: one run per folder ----------------------------------------------------------------------
def _run(data, out, *options):
    return ["run", "--data", str(data), "--out", str(out), "--tgn-epochs", "0", "--negatives", "3", *options]


def _tree(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_run_refuses_a_used_folder_unless_overwrite_and_then_holds_one_run(snap_file, tmp_path, capsys):
    out = tmp_path / "results"
    assert main(_run(snap_file, out)) == 0
    first = _tree(out)
    (out / "tgn.json").write_text("{}")  # as a model of an earlier run that this one does not run
    _refused(_run(snap_file, out, "--seed", "1"), capsys, "pass --overwrite")
    assert _tree(out) == {**first, "tgn.json": b"{}"}
    assert main(_run(snap_file, out, "--seed", "1", "--overwrite")) == 0
    second = _tree(out)
    assert sorted(second) == sorted(first) and second["edgebank.json"] != first["edgebank.json"]  # no tgn.json
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.txt", "results"]  # no hidden sibling left


def test_run_overwrite_refuses_a_folder_that_is_no_run_or_holds_the_data(snap_file, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    _refused(_run(snap_file, mine, "--overwrite"), capsys, "no folder of `tgeval run`")
    inside = mine / "events.txt"
    inside.write_bytes(snap_file.read_bytes())
    (mine / "summary.json").write_text("{}")
    _refused(_run(inside, mine, "--overwrite"), capsys, "lies inside --out")
    assert (mine / "thesis.tex").read_text() == "years of work"


STOPPED_RUN = textwrap.dedent("""
    import os, signal, sys
    from tgeval.cli import commands
    from tgeval.cli.program import main

    def stop(*args, **kwargs):  # a Ctrl-C while the new run's report is being written
        os.kill(os.getpid(), signal.SIGINT)
    commands.write_report = stop
    sys.exit(main(["run", "--data", sys.argv[1], "--out", sys.argv[2], "--tgn-epochs", "0", "--negatives", "3",
                   "--seed", "1", "--overwrite"]))
""")


@pytest.mark.slow
def test_a_run_stopped_midway_leaves_the_old_folder_whole(snap_file, tmp_path):
    out = tmp_path / "results"
    assert main(_run(snap_file, out)) == 0
    before = _tree(out)
    done = subprocess.run([sys.executable, "-c", STOPPED_RUN, str(snap_file), str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, done.stderr
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.txt", "results"]  # the fresh folder removed


def test_diagnose_declares_every_file_it_writes(snap_file, tmp_path):
    """``cli.DIAGNOSE_FILES`` (the outputs checked against the inputs) are the files diagnose writes."""
    from tgeval.cli.program import DIAGNOSE_FILES

    assert main(["diagnose", str(snap_file), "--format", "snap", "--out", str(tmp_path / "d")]) == 0
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == sorted(DIAGNOSE_FILES)
