"""A disk that fills up during training: the write that meets it is an OutputPathError naming the file, the
space left and the fix; the files already written (the last complete epoch, an earlier result) stay as they
were, and the run resumes from them."""

import errno
import os
import re
from pathlib import Path
from unittest import mock

import pytest

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tests.helpers import snap_text

_fsync = os.fsync


@pytest.fixture()
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.txt"
    path.write_text(snap_text(generate_events(num_events=600, num_nodes=40, seed=3)))
    return path


def fills_up_once(full: Path):
    """``os.fsync`` that fails with ENOSPC once ``full`` exists (a disk full from then on), recording the bytes
    of every file of ``full``'s folder at that moment, the temporary file being written aside."""
    seen: dict[str, bytes] = {}

    def fsync(fd: int) -> None:
        if full.exists():
            seen.update({path.name: path.read_bytes() for path in full.parent.iterdir()
                         if not path.name.endswith(".tmp")})  # not the file being written
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        _fsync(fd)

    return fsync, seen


def test_a_full_disk_in_the_second_epoch_keeps_the_first_and_resumes(events, tmp_path, capsys):
    run = tmp_path / "run"
    train = ["train", str(events), "--format", "snap", "--model", "tgn", "--epochs", "2", "--threads", "1",
             "--checkpoint-dir", str(run)]
    fsync, seen = fills_up_once(run / "timings.json")  # written last in an epoch: full from the second on
    with mock.patch("os.fsync", side_effect=fsync):
        assert main(train) == 2
    err = capsys.readouterr().err
    match = re.search(r"tgeval: error: OutputPathError: (\S+) could not be written: no space left on the disk of "
                      r"'(.+?)' \(([\d,.]+) MiB free; No space left on device\)\. The previous \w+\.pt, if any, is "
                      r"unchanged\. Free space, then resume the run from its last complete epoch, (\S+) \(--resume\)",
                      err)
    assert match, err
    assert Path(match[1]).parent == run and Path(match[2]) == run and Path(match[4]) == run / "last.pt"
    # epoch 0's files untouched, no temporary file left
    assert set(seen) == {"best.pt", "last.pt", "timings.json"}
    assert {path.name: path.read_bytes() for path in run.iterdir()} == seen
    assert main(train + ["--resume", str(run / "last.pt")]) == 0
    assert "epoch 1:" in capsys.readouterr().out


def test_a_full_disk_while_writing_the_result_keeps_the_old_one(events, tmp_path, capsys):
    out = tmp_path / "r.json"
    out.write_text("the previous result")
    fsync, _ = fills_up_once(out)
    with mock.patch("os.fsync", side_effect=fsync):
        assert main(["train", str(events), "--format", "snap", "--model", "membership", "--epochs", "1",
                     "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"OutputPathError: {out} could not be written: no space left" in err and "give --out on another disk" in err
    assert out.read_text() == "the previous result"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["events.txt", "r.json"]  # no temporary file left


def test_other_write_errors_are_not_called_a_full_disk(events, tmp_path, capsys):
    with mock.patch("os.fsync", side_effect=OSError(errno.EIO, os.strerror(errno.EIO))):
        assert main(["train", str(events), "--format", "snap", "--model", "membership", "--epochs", "1",
                     "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "OSError: [Errno 5] Input/output error" in err and "no space" not in err
