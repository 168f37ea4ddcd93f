"""No output replaces another output, checkpoint or run: a result or a checkpoint is replaced only by its own
kind; one writer per run or checkpoint folder (a second is refused at once, naming the holder; a killed holder
leaves no stale lock); ``--overwrite`` leaves no file of the replaced run; the hidden work folders of a killed
``tgeval run`` and the folders a failed command made are removed."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from tgeval.training.train import Recipe
from tgeval.core.atomic import check_distinct, folder_lock, writing_outputs
from tgeval.cli.program import main
from tgeval.data.catalog import build_catalog
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.errors import OutputPathError
from tgeval.models import TGN, message_dim
from tgeval.samplers import UniformSampler
from tgeval.training.checkpoint import load_checkpoint
from tgeval.training import fitting
from tgeval.training.fitting import Checkpointing, fit
from tests.helpers import small_neural_model, snap_text

REPO = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent("""
    import sys
    from tgeval.core.atomic import folder_lock

    with folder_lock(sys.argv[1], what="folder", command=sys.argv[2]):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes stdin, or kills this process
""")


@contextmanager
def held_by_another_process(folder: Path, command: str):
    """A process that holds ``folder``'s lock (as ``command``) until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), command], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.stdin.close()
        holder.stdout.close()
        holder.wait(timeout=60)


@pytest.fixture
def snap_file(tmp_path):
    path = tmp_path / "events.txt"
    path.write_text(snap_text(generate_events(num_events=600, num_nodes=40, seed=3)))
    return path


def _train(data, folder, *options):
    return ["train", str(data), "--format", "snap", "--model", "tgn", "--epochs", "1", "--threads", "1",
            "--memory-dim", "4", "--time-dim", "2", "--embedding-dim", "4", "--num-neighbors", "2",
            "--checkpoint-dir", str(folder), *options]


def _run(data, folder):
    return ["run", "--data", str(data), "--out", str(folder), "--tgn-epochs", "0", "--negatives", "3"]


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_an_output_replaces_a_result_or_a_checkpoint_only_with_its_own_kind(tmp_path):
    result, checkpoint, other = tmp_path / "r.json", tmp_path / "last.pt", tmp_path / "notes.json"
    result.write_text(json.dumps({"manifest": {}, "metrics": {}, "performance": {}}))
    checkpoint.write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:00\nbody")
    other.write_text('{"metrics": {}}')
    check_distinct({}, {"--out": result}, writes={"--out": "result"})  # evaluated again
    check_distinct({}, {"--checkpoint-dir last.pt": checkpoint}, writes={"--checkpoint-dir last.pt": "checkpoint"})
    check_distinct({}, {"--out": other}, writes={"--out": "comparison"})  # no result: replaced
    with pytest.raises(OutputPathError, match="r.json' holds a tgeval result, which this command would replace with "
                                              "a comparison. Give --out another path, or move the result away"):
        check_distinct({}, {"--out": result}, writes={"--out": "comparison"})
    with pytest.raises(OutputPathError, match="holds a tgeval checkpoint, which this command would replace with "
                                              "another file"):
        check_distinct({}, {"--out novelty.csv": checkpoint})


@pytest.mark.parametrize("command", ["train", "run"])
def test_a_second_writer_of_a_folder_is_refused_at_once_naming_the_holder(snap_file, tmp_path, capsys, command):
    folder = tmp_path / "out"
    argv = _train(snap_file, folder) if command == "train" else _run(snap_file, folder)
    what = "checkpoint folder (--checkpoint-dir)" if command == "train" else "--out"
    with held_by_another_process(folder, f"tgeval {command} ... (the first)") as holder:
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert (f"OutputPathError: {what} {str(folder)!r} is being written by process {holder.pid} (tgeval "
                f"{command} ... (the first)), which holds its lock {str(tmp_path / '.out.lock')!r}: two writers would "
                f"mix their files. Wait until it ends, or choose another {what}.") in err, err
        assert "epoch 0" not in out and "data:" not in out  # refused before any work
        assert names(tmp_path) == [".out.lock", "events.txt"]  # nothing written: the holder's lock file alone
    assert main(argv) == 0  # the holder gone, the folder is this writer's
    assert names(tmp_path) == ["events.txt", "out"]  # its lock file deleted with the lock


def test_a_killed_holder_leaves_no_stale_lock(snap_file, tmp_path):
    folder = tmp_path / "run"
    with held_by_another_process(folder, "tgeval train ...") as holder:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    assert names(tmp_path) == [".run.lock", "events.txt"]  # the file stays; the kernel released its lock
    assert main(_train(snap_file, folder)) == 0
    assert names(tmp_path) == ["events.txt", "run"] and names(folder) == ["best.pt", "last.pt", "timings.json"]


def test_fit_holds_its_checkpoint_folder(tmp_path):
    data = generate_events(300, 30, seed=1)
    split = chronological_split(data)
    model = small_neural_model(TGN, 30, message_dim(data))
    folder = tmp_path / "run"
    with held_by_another_process(folder, "a notebook") as holder:
        with pytest.raises(OutputPathError, match=rf"checkpoint folder \(Checkpointing.folder\) .* is being written "
                                                  rf"by process {holder.pid} \(a notebook\)"):
            fit(model, data, split,
                recipe=Recipe(UniformSampler(build_catalog(data, "train", train_end=split.train.end)), "bce"),
                optimizer=torch.optim.Adam(model.parameters()), epochs=1, verbose=False,
                checkpoints=Checkpointing(folder))
    assert not folder.exists()


def test_overwrite_leaves_no_file_of_the_replaced_run(tmp_path, monkeypatch):
    """The replaced run's ``best.pt`` goes with the first files of the new run, also when no epoch of it improves
    (so it writes no ``best.pt`` of its own): an old best.pt beside a new last.pt would mix the two runs."""
    data = generate_events(300, 30, seed=1)
    split = chronological_split(data)
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("last.pt", "best.pt", "timings.json"):
        (folder / name).write_text("the replaced run")
    monkeypatch.setattr(fitting, "val_metrics", lambda result: {})  # no validation metric: no epoch improves
    torch.manual_seed(0)
    model = small_neural_model(TGN, 30, message_dim(data))
    fit(model, data, split,
        recipe=Recipe(UniformSampler(build_catalog(data, "train", train_end=split.train.end)), "bce"),
        optimizer=torch.optim.Adam(model.parameters()), epochs=1, verbose=False,
        checkpoints=Checkpointing(folder, overwrite=True))
    assert names(folder) == ["last.pt", "timings.json"] and (folder / "timings.json").read_text() != "the replaced run"
    assert load_checkpoint(folder / "last.pt", data=data).epoch == 0


def test_the_holder_of_a_folder_removes_the_work_folders_of_killed_writers(tmp_path):
    """Work folders of ``results`` (``.results.XXXXXXXX.tmp`` / ``.old``, real folders) go; look-alikes, links and
    files stay; with ``results`` missing and an ``.old`` folder holding files (a swap cut between its renames), all
    stay, to be recovered."""
    results = tmp_path / "results"
    results.mkdir()
    stale = [".results.abcdefgh.tmp", ".results.a1b2c3d_.old"]
    for name in stale:
        (tmp_path / name).mkdir()
        (tmp_path / name / "edgebank.json").write_text("{}")
    kept = [".results.abcdefg.tmp", ".resultsx.abcdefgh.tmp", ".results.ABCDEFGH.tmp", "results.abcdefgh.tmp"]
    for name in kept:
        (tmp_path / name).mkdir()
    (tmp_path / ".results.file0000.tmp").write_text("a file")
    (tmp_path / ".results.link0000.tmp").symlink_to(results)
    with folder_lock(results, what="--out"):
        assert names(tmp_path) == sorted([".results.lock", "results", ".results.file0000.tmp",
                                          ".results.link0000.tmp", *kept])
    (tmp_path / ".results.link0000.tmp").unlink()
    (results / "summary.json").write_text("{}")
    results.rename(tmp_path / ".results.zzzzzzzz.old")  # a swap cut between its renames: no results
    (tmp_path / ".results.yyyyyyyy.tmp").mkdir()
    before = names(tmp_path)
    with folder_lock(results, what="--out"):
        pass
    assert names(tmp_path) == before


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from tgeval.cli import commands
    from tgeval.cli.program import main

    def killed(*args, **kwargs):  # killed while the run writes its report: no handler runs
        os.kill(os.getpid(), signal.SIGKILL)
    commands.write_report = killed
    main(["run", "--data", sys.argv[1], "--out", sys.argv[2], "--tgn-epochs", "0", "--negatives", "3"])
""")


@pytest.mark.slow
def test_a_killed_run_leaves_nothing_the_next_run_keeps(snap_file, tmp_path):
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, "-c", KILLED_RUN, str(snap_file), str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = [name for name in names(tmp_path) if name.startswith(".results.")]
    assert sorted(name.rsplit(".", 1)[-1] for name in left) == ["lock", "tmp"]  # its work folder and lock file
    assert main(_run(snap_file, out)) == 0
    assert names(tmp_path) == ["events.txt", "results"]


def test_a_failed_command_removes_the_folders_it_made(tmp_path):
    """Ctrl-C and SIGTERM (SystemExit) included; a folder that was there, or holds a file, stays."""
    (tmp_path / "kept").mkdir()
    for stop in (KeyboardInterrupt(), SystemExit(143), OSError("failed")):
        with pytest.raises(type(stop)):
            with writing_outputs({"--out": tmp_path / "a" / "b" / "r.json", "--save-events": tmp_path / "kept" / "e"},
                                 {"--checkpoint-dir": tmp_path / "c" / "run"}):
                (tmp_path / "a" / "b").mkdir(parents=True)
                (tmp_path / "c" / "run").mkdir(parents=True)
                raise stop
        assert names(tmp_path) == ["kept"]
    with pytest.raises(OSError):
        with writing_outputs({"--out": tmp_path / "a" / "b" / "r.json"}):
            (tmp_path / "a" / "b").mkdir(parents=True)
            (tmp_path / "a" / "notes.txt").write_text("a file")
            raise OSError("failed")
    assert names(tmp_path) == ["a", "kept"] and names(tmp_path / "a") == ["notes.txt"]
    with writing_outputs({"--out": tmp_path / "new" / "r.json"}):  # success: what it made stays
        (tmp_path / "new").mkdir()
    assert (tmp_path / "new").is_dir()


def test_the_lock_records_this_process_by_default(tmp_path):
    """Without ``command``, the lock records this process's command line."""
    with folder_lock(tmp_path / "run", what="folder"):
        record = (tmp_path / ".run.lock").read_text()
    assert f'"pid": {os.getpid()}' in record and "command" in record
