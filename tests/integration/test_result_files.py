"""A result and its per-event file are one pair: the JSON records the CSV's sha256, both are
written through temporary names, a SIGTERM at any write step leaves the old pair or the new one
(never a mix, never a temporary file), and readers refuse a pair that does not match."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tgeval import evaluate
from tgeval.atomic import file_sha256
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.diagnostics.compare import load_events
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream

REPO = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import os, signal, sys
    import torch
    from tgeval import atomic, evaluate
    from tgeval.cli import _terminate
    from tgeval.data.catalog import Catalog
    from tgeval.data.split import Segment
    from tgeval.models.heuristics import EdgeBank
    from tgeval.samplers import UniformSampler
    from tests.conftest import make_stream

    folder, step = sys.argv[1], int(sys.argv[2])
    data = make_stream(torch.arange(40) % 7, (torch.arange(40) * 3) % 11, torch.arange(40) // 2)
    catalog = Catalog("custom", torch.arange(12), None, 12)
    run = lambda seed: evaluate(EdgeBank(12), data, Segment("test", 20, 40, 10, 19),
                                sampler=UniformSampler(catalog), num_negatives=3, seed=seed, data_name=f"seed {seed}")
    run(0).save(f"{folder}/r.json", events=f"{folder}/e.csv")  # the old pair
    signal.signal(signal.SIGTERM, _terminate)  # as the command line does
    calls = {"n": 0}
    def hooked(original):
        def call(*args):
            calls["n"] += 1
            if calls["n"] == step:  # a termination request arrives during this write step
                os.kill(os.getpid(), signal.SIGTERM)
            return original(*args)
        return call
    atomic.os.fsync = hooked(os.fsync)      # steps 1, 2: the CSV's and the JSON's temporary files
    atomic.os.replace = hooked(os.replace)  # steps 3, 4: the two renames
    run(1).save(f"{folder}/r.json", events=f"{folder}/e.csv")  # the new pair
""")


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_sigterm_at_each_write_step_leaves_one_whole_pair(tmp_path, step):
    done = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path), str(step)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv", "r.json"], done.stderr  # no temporary file
    manifest = json.loads((tmp_path / "r.json").read_text())["manifest"]
    assert manifest["events_sha256"] == file_sha256(tmp_path / "e.csv")  # the JSON and the CSV belong together
    assert load_events(tmp_path / "r.json")["event"].numel() == 20
    assert done.returncode == 128 + 15  # the SIGTERM ended the process in every case
    # before the renames the old pair stays; during them the signal waits until both are in place
    assert manifest["data"]["name"] == ("seed 0" if step <= 2 else "seed 1")


def test_readers_refuse_a_broken_pair_or_a_path_outside_the_results_folder(tmp_path):
    data = make_stream(torch.arange(30) % 5, (torch.arange(30) * 2) % 9, torch.arange(30) // 3)
    catalog = Catalog("custom", torch.arange(10), None, 10)
    result = evaluate(EdgeBank(10), data, Segment("test", 15, 30, 5, 9), sampler=UniformSampler(catalog),
                      num_negatives=2)
    out = tmp_path / "r.json"
    result.save(out, events=tmp_path / "e.csv")
    assert torch.equal(load_events(out)["event"], load_events(tmp_path / "e.csv")["event"])
    payload = json.loads(out.read_text())
    for events_file, message in (("/dev/zero", "not a regular file inside"), ("../e.csv", "not a regular file inside"),
                                 (".", "not a regular file inside")):
        payload["manifest"]["events_file"] = events_file
        out.write_text(json.dumps(payload))
        with pytest.raises(ValueError, match=message):
            load_events(out)
    payload["manifest"]["events_file"] = "e.csv"
    out.write_text(json.dumps(payload))
    with open(tmp_path / "e.csv", "a") as handle:  # the CSV changed after the pair was written
        handle.write("\n")
    with pytest.raises(ValueError, match="does not match this result"):
        load_events(out)
