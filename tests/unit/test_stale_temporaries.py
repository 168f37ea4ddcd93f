"""A write killed before its renames (``SIGKILL``) leaves its hidden temporary files ``.NAME.XXXXXXXX.tmp``
beside its outputs; the next write of an output removes those of that output, and nothing else: not the
temporary files of other outputs, not look-alike names, links or folders, not a live writer's file."""

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tgeval.core.atomic import write_atomic, write_atomic_group

REPO = Path(__file__).resolve().parents[2]

KILLED = textwrap.dedent("""
    import os, signal, sys
    from tgeval.core import atomic

    folder, step = sys.argv[1], int(sys.argv[2])
    calls = {"n": 0}
    def replace(*args):
        calls["n"] += 1
        if calls["n"] == step:  # killed before this rename: no handler runs, nothing is cleaned
            os.kill(os.getpid(), signal.SIGKILL)
        return os.rename(*args)
    atomic.os.replace = replace
    atomic.write_atomic_group([(f"{folder}/e.csv", "new events"), (f"{folder}/r.json", "new result")])
""")


def killed_write(folder: Path, step: int) -> None:
    """A pair write of ``e.csv`` then ``r.json`` in ``folder``, killed before its ``step``-th rename."""
    done = subprocess.run([sys.executable, "-c", KILLED, str(folder), str(step)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def temporaries(folder: Path, target: str) -> list[str]:
    return [name for name in names(folder) if name.startswith(f".{target}.") and name.endswith(".tmp")]


#: names beside ``r.json`` that its next write must leave: other outputs' temporary files and look-alikes
LOOK_ALIKES = [".r.json.bak.abcdefgh.tmp", ".rr.json.abcdefgh.tmp", "r.json.abcdefgh.tmp", ".r.json.ABCDEFGH.tmp",
               ".r.json.abcdefg.tmp", ".r.json.abcdefghi.tmp", ".r.json.abcdefgh.tmp.keep", ".r.json.abcd.fgh.tmp",
               ".r.jsonxabcdefghxtmp", "notes.txt"]


@pytest.mark.parametrize("step", [1, 2], ids=["before the first rename", "between the renames"])
def test_the_next_write_of_an_output_removes_its_stale_temporaries_only(tmp_path, step):
    write_atomic_group([(tmp_path / "e.csv", "old events"), (tmp_path / "r.json", "old result")])
    killed_write(tmp_path, step)
    stale = temporaries(tmp_path, "r.json")
    assert len(stale) == 1 and (tmp_path / stale[0]).read_text() == "new result"  # mkstemp's own name
    assert len(temporaries(tmp_path, "e.csv")) == (1 if step == 1 else 0)
    assert (tmp_path / "e.csv").read_text() == ("old events" if step == 1 else "new events")
    for name in LOOK_ALIKES:
        (tmp_path / name).write_text("keep")
    (tmp_path / ".r.json.folder00.tmp").mkdir()  # a folder of that form (fresh_sibling's) is no temporary file
    (tmp_path / ".r.json.symlink0.tmp").symlink_to(tmp_path / "notes.txt")  # nor a link
    before = set(names(tmp_path))

    write_atomic(tmp_path / "r.json", "next result")

    assert set(names(tmp_path)) == before - set(stale)
    assert (tmp_path / "r.json").read_text() == "next result"
    assert all((tmp_path / name).read_text() == "keep" for name in LOOK_ALIKES)
    assert (tmp_path / ".r.json.symlink0.tmp").is_symlink() and (tmp_path / ".r.json.folder00.tmp").is_dir()
    write_atomic(tmp_path / "e.csv", "next events")  # each output cleans its own
    assert temporaries(tmp_path, "e.csv") == []


def test_a_live_writers_temporary_file_is_left(tmp_path):
    live = tmp_path / ".r.json.abcdefgh.tmp"  # another writer's, still being written: it holds the lock
    live.write_text("half")
    with open(live) as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        write_atomic(tmp_path / "r.json", "result")
        assert live.read_text() == "half"
    write_atomic(tmp_path / "r.json", "result")  # its writer gone (the lock with it): stale now
    assert names(tmp_path) == ["r.json"]


def test_a_write_leaves_no_temporary_file_and_no_open_descriptor(tmp_path):
    opened = len(os.listdir("/proc/self/fd"))
    write_atomic_group([(tmp_path / "e.csv", "events"), (tmp_path / "r.json", "result")])
    assert names(tmp_path) == ["e.csv", "r.json"] and len(os.listdir("/proc/self/fd")) == opened
