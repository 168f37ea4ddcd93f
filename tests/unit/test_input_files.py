"""Inputs that are no regular file: every reader refuses a named pipe (which would block it until something
writes), a device such as /dev/zero (which never ends), a link that loops or leads nowhere and an empty path,
naming the input and what to give instead, before it opens the file (:func:`tgeval.core.atomic.check_input_file`)."""

import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest

from tgeval.core.atomic import check_input_file
from tgeval.data import read_events
from tgeval.errors import InputPathError
from tgeval.data.io.tgb_negatives import load_tgb_pickle
from tgeval.samplers.fixed import load_negatives, read_tgb_negatives
from tgeval.training.checkpoint import load_checkpoint
from tests.conftest import make_stream

READERS = {
    "read_events": lambda path: read_events(path, "snap"),
    "read_tgb_negatives": lambda path: read_tgb_negatives(path, make_stream([0], [1], [2])),
    "load_tgb_pickle": load_tgb_pickle,
    "load_negatives": load_negatives,
    "load_checkpoint": load_checkpoint,
}


@contextmanager
def at_most(seconds: int):
    """Fail instead of hanging when a reader blocks on a pipe."""
    def stop(signum, frame):
        raise AssertionError(f"the reader blocked for {seconds} s")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def special_files(folder: Path) -> dict[str, tuple[str, str]]:
    """Name -> (path, what the message must say)."""
    os.mkfifo(folder / "fifo")
    (folder / "loop").symlink_to(folder / "loop2")
    (folder / "loop2").symlink_to(folder / "loop")
    (folder / "dangling").symlink_to(folder / "absent")
    return {
        "a named pipe": (str(folder / "fifo"), r"is a named pipe \(FIFO\), not a regular file: .*a reader waits until "
                                               r"something writes them.*Save what it gives to a file first \(e.g. "
                                               r"`cat .*fifo > data.txt`\)"),
        "/dev/zero": ("/dev/zero", r"'/dev/zero' is a character device, not a regular file: a device such as "
                                   r"/dev/zero gives bytes without end.*Give the path of a file\.$"),
        "a symlink loop": (str(folder / "loop"), r"loop' is a symbolic link to .*loop2', which leads in a loop of "
                                                 r"links .*point the link at it"),
        "a dangling symlink": (str(folder / "dangling"), r"dangling' is a symbolic link to .*absent', which does not "
                                                         r"exist: check the path"),
        "an empty path": ("", r"is an empty path: give the path of a file"),
    }


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", ["a named pipe", "/dev/zero", "a symlink loop", "a dangling symlink",
                                  "an empty path"])
def test_every_reader_refuses_what_is_no_regular_file(tmp_path, reader, kind):
    path, message = special_files(tmp_path)[kind]
    with at_most(20), pytest.raises(InputPathError, match=message):
        READERS[reader](path)


def test_the_check_names_the_input_as_the_caller_does(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputPathError, match=r"^--model '.*fifo' is a named pipe"):
        check_input_file(tmp_path / "fifo", what="--model")
    (tmp_path / "file").write_text("x")
    check_input_file(tmp_path / "file")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    check_input_file(tmp_path / "link")  # a link to a regular file is read through


def test_the_advice_keeps_the_path_as_given(tmp_path):
    """The remedy quotes the path with its own letter case."""
    fifo = tmp_path / "Data" / "Events.FIFO"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(InputPathError, match=r"Save what it gives .*`cat .*/Data/Events\.FIFO > data\.txt`"):
        check_input_file(fifo, what="event file")
