"""Interrupted writes, rows of the robustness table (issue 13, parts 8 and 11): a SIGTERM or a
Ctrl-C at any step of writing a result and its events file leaves the old pair or the new one,
never a mix and never a temporary file."""

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tgeval.core.atomic import file_sha256
from tgeval.diagnostics.comparison import load_events

REPO = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import os, signal, sys
    import torch
    from tgeval import evaluate
    from tgeval.core import atomic
    from tgeval.cli.program import _terminate
    from tgeval.data.catalog import Catalog
    from tgeval.data.split import Segment
    from tgeval.models.heuristics import EdgeBank
    from tgeval.eval.protocol import Protocol
    from tgeval.samplers import UniformSampler
    from tests.conftest import make_stream

    folder, step, signum = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    data = make_stream(torch.arange(40) % 7, (torch.arange(40) * 3) % 11, torch.arange(40) // 2)
    catalog = Catalog("custom", torch.arange(12), None, 12)
    def run(seed):
        result = evaluate(EdgeBank(12), data, Segment("test", 20, 40, 10, 19), Protocol(num_negatives=3, seed=seed),
                          sampler=UniformSampler(catalog))
        result.manifest["data"]["name"] = f"seed {seed}"
        return result

    run(0).save(f"{folder}/r.json", events=f"{folder}/e.csv")  # the old pair
    signal.signal(signal.SIGTERM, _terminate)  # as the command line does
    # Ctrl-C raises KeyboardInterrupt, as in a shell's foreground (a background job starts with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    calls = {"n": 0}
    def hooked(original):
        def call(*args):
            calls["n"] += 1
            if calls["n"] == step:  # a termination request (or Ctrl-C) arrives during this write step
                os.kill(os.getpid(), signum)
            return original(*args)
        return call
    atomic.os.fsync = hooked(os.fsync)      # steps 1, 2: the CSV's and the JSON's temporary files
    atomic.os.replace = hooked(os.replace)  # steps 3, 4: the two renames
    run(1).save(f"{folder}/r.json", events=f"{folder}/e.csv")  # the new pair
""")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_a_signal_at_each_write_step_leaves_one_whole_pair(tmp_path, step, signum):
    done = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path), str(step), str(int(signum))], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv", "r.json"], done.stderr  # no temporary file
    manifest = json.loads((tmp_path / "r.json").read_text())["manifest"]
    assert manifest["events_sha256"] == file_sha256(tmp_path / "e.csv")  # the JSON and the CSV belong together
    assert load_events(tmp_path / "r.json")["event"].numel() == 20
    # the signal ended the process in every case: SIGTERM through the command line's handler (exit status 143),
    # Ctrl-C as Python's unhandled KeyboardInterrupt. Python then exits by SIGINT, or with status 1 once an
    # exit handler has run Python code (torch._dynamo's, which PyG imports, do in some environments).
    if signum == signal.SIGTERM:
        assert done.returncode == 128 + 15, done.stderr
    else:
        assert done.returncode in (-signal.SIGINT, 1) and done.stderr.rstrip().endswith("KeyboardInterrupt"), done.stderr
    # before the renames the old pair stays; during them the signal waits until both are in place
    assert manifest["data"]["name"] == ("seed 0" if step <= 2 else "seed 1")


SWAPPER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from tgeval.core import atomic
    from tgeval.cli.program import _terminate

    folder, step, signum = Path(sys.argv[1]) / "results", int(sys.argv[2]), int(sys.argv[3])
    folder.mkdir()
    (folder / "old.json").write_text("old run")
    fresh = atomic.fresh_sibling(folder)
    (fresh / "new.json").write_text("new run")
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    calls = {"n": 0}
    def hooked(original):
        def call(*args):
            calls["n"] += 1
            if calls["n"] == step:  # a termination request during this rename
                os.kill(os.getpid(), signum)
            return original(*args)
        return call
    atomic.os.replace = hooked(os.replace)  # steps 1, 2: the old folder aside, the fresh one in
    atomic.replace_folder(fresh, folder)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
@pytest.mark.parametrize("step", [1, 2])
def test_a_signal_during_a_folder_swap_lands_after_it(tmp_path, step, signum):
    """``tgeval run``'s swap (issue 29 part 2): a termination request between its renames waits for both and
    for the old folder's deletion, so the folder is the new run and nothing hidden is left beside it."""
    done = subprocess.run([sys.executable, "-c", SWAPPER, str(tmp_path), str(step), str(int(signum))], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == (128 + 15 if signum == signal.SIGTERM else -signal.SIGINT), done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["results"], done.stderr
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["new.json"]
