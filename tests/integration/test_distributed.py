"""Sharded evaluation on 2 and 3 gloo processes equals one process: ranks and metrics bit for bit
(issue 18).

Each world size is one ``torch.multiprocessing`` spawn whose ranks run every case in turn; rank
0 sends its results back and the test compares them with :func:`evaluate` in this process.
Cases: EdgeBank through the chunked path (sharded) and through its counting shortcut
(replicated), TGN all-entity and sampled, fixed and time-available catalogs (whose available
prefix grows, so early batches have shards of zero or one item), a budget smaller than one
shard's columns and one larger than the whole catalog, and a catalog of two items on three
ranks (an empty shard on every batch).
"""

import json
import os
import re
import shlex
import subprocess

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tgeval import Protocol, Tuning, evaluate
from tgeval.cli.program import main
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.errors import DistributedError
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler
from tests.helpers import README, free_port, small_neural_model

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="this PyTorch build has no torch.distributed gloo backend")

NUM_NODES = 24


def _case(name):
    """``(model, data, segment, options)`` of one case, built identically in every process."""
    torch.manual_seed(0)
    data = generate_events(300, NUM_NODES, seed=3)
    split = chronological_split(data)
    fixed = build_catalog(data, "train", train_end=split.train.end, num_nodes=NUM_NODES)
    grown = build_catalog(data, "time-available", num_nodes=NUM_NODES)
    tiny = Catalog("custom", fixed.items[:2].clone(), None, NUM_NODES)
    edgebank, tgn = EdgeBank(NUM_NODES), small_neural_model("tgn", NUM_NODES)
    cases = {
        "edgebank-chunked": (edgebank, dict(protocol=Protocol(num_negatives=4), catalog=fixed,
                                            tuning=Tuning(use_shortcut=False, candidate_budget=5),
                                            sampler=UniformSampler(fixed))),
        "edgebank-shortcut": (edgebank, dict(protocol=Protocol(num_negatives=4), catalog=grown,
                                             sampler=UniformSampler(fixed))),
        "edgebank-grown": (edgebank, dict(protocol=Protocol(batch_size=7), catalog=grown,
                                          tuning=Tuning(use_shortcut=False))),
        "edgebank-tiny": (edgebank, dict(catalog=tiny, tuning=Tuning(use_shortcut=False, candidate_budget=1))),
        "tgn": (tgn, dict(protocol=Protocol(num_negatives=5, batch_size=20), catalog=fixed,
                          sampler=UniformSampler(fixed))),
        "tgn-grown": (tgn, dict(protocol=Protocol(replay="fixed"), catalog=grown,
                               tuning=Tuning(candidate_budget=2**22))),
    }
    model, options = cases[name]
    return model, data, split.test, options


CASES = ["edgebank-chunked", "edgebank-shortcut", "edgebank-grown", "edgebank-tiny", "tgn", "tgn-grown"]


def _summary(result):
    """What must be identical: every per-event record and the metrics (JSON text, bit for bit)."""
    records = {key: value.clone() for key, value in result.records.items()}
    return records, json.dumps(result.metrics, sort_keys=True)


def _worker(rank, world, port, path):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        out = {}
        for name in CASES:
            model, data, segment, options = _case(name)
            result = evaluate(model, data, segment, distributed=True, **options)
            out[name] = (*_summary(result), result.manifest["distributed"])
        if rank == 0:
            torch.save(out, path)
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def single_process(one_thread):
    out = {}
    for name in CASES:
        model, data, segment, options = _case(name)
        out[name] = _summary(evaluate(model, data, segment, **options))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_sharded_evaluation_equals_one_process(world, single_process, tmp_path):
    path = tmp_path / "rank0.pt"
    mp.start_processes(_worker, args=(world, free_port(), path), nprocs=world, join=True, start_method="spawn")
    sharded = torch.load(path)
    for name in CASES:
        records, metrics, manifest = sharded[name]
        expected_records, expected_metrics = single_process[name]
        assert manifest["world_size"] == world and manifest["backend"] == "gloo", name
        assert records.keys() == expected_records.keys(), name
        for key, value in expected_records.items():
            assert torch.equal(records[key], value), (name, key)
        assert metrics == expected_metrics, name
    # the cases exercise what they claim: ranks differ from 1 somewhere, ties and an uncovered count
    assert any(bool((r["above"] > 0).any()) for r, _ in single_process.values())


def test_distributed_without_a_process_group_names_the_fix():
    model, data, segment, options = _case("edgebank-tiny")
    with pytest.raises(DistributedError, match="launch with torchrun .* torch.distributed.init_process_group"):
        evaluate(model, data, segment, distributed=True, **options)


def _readme_commands():
    """The shell commands of the README's *Beyond one device* section (continuation lines joined)."""
    section = README.read_text(encoding="utf-8").split("## Beyond one device")[1].split("\n## ")[0]
    blocks = re.findall(r"^```bash\n(.*?)^```", section, flags=re.S | re.M)
    lines = " ".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.strip().startswith("torchrun")]


@pytest.mark.slow
def test_readme_torchrun_command_runs_and_equals_one_process(tmp_path, monkeypatch):
    """The one-machine command of the README, run as written (2 gloo processes), writes one
    result whose metrics equal `tgeval evaluate` in one process; the multi-machine command
    runs the same evaluation."""
    one_machine, multi_machine = _readme_commands()
    tgeval_args = one_machine[one_machine.index("-m") + 2:]
    assert multi_machine[multi_machine.index("-m") + 2:] == tgeval_args
    data = generate_events(num_events=800, num_nodes=60, seed=4)
    (tmp_path / "events.txt").write_text("".join(f"{u} {v} {t}\n" for u, v, t in
                                                 zip(data.src.tolist(), data.dst.tolist(), data.t.tolist())))
    env = {**os.environ, "PYTHONPATH": str(README.parent), "OMP_NUM_THREADS": "1"}
    port = ["--master-port", str(free_port())]  # a free port instead of torchrun's default 29500
    done = subprocess.run([one_machine[0], *port, *one_machine[1:]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("wrote ") == 1  # rank 0 alone prints and writes
    sharded = json.loads((tmp_path / tgeval_args[tgeval_args.index("--out") + 1]).read_text())
    single_args = list(tgeval_args)
    single_args[single_args.index("--out") + 1] = "single.json"
    monkeypatch.chdir(tmp_path)
    assert main(single_args) == 0
    single = json.loads((tmp_path / "single.json").read_text())
    assert sharded["manifest"]["distributed"]["world_size"] == 2
    assert single["manifest"]["distributed"]["world_size"] == 1
    assert sharded["metrics"] == single["metrics"]


def test_commands_without_a_sharded_form_refuse_torchrun(monkeypatch, capsys, tmp_path):
    for name, value in {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}.items():
        monkeypatch.setenv(name, value)
    assert main(["run", "--out", str(tmp_path / "r")]) == 2
    assert "`tgeval run` runs in one process; only `tgeval evaluate` and `tgeval train`" in capsys.readouterr().err
    events = str(tmp_path / "events.txt")  # refused before anything is read
    for argv in (["diagnose", events, "--format", "snap", "--out", str(tmp_path / "d")],
                 ["compare", events, "--out", str(tmp_path / "c.json")],
                 ["report", str(tmp_path), "--out", str(tmp_path / "r.html")],
                 ["static", events, "--format", "snap", "--out", str(tmp_path / "s")],
                 ["shift", events, "--format", "snap", "--heuristic", "cn", "--thresholds", "1,2", "--out",
                  str(tmp_path / "h")]):
        assert main(argv) == 2, argv
        assert f"`tgeval {argv[0]}` runs in one process" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


#: `tgeval train` of a small TGN on the events written by :func:`_training_run` (no --epochs)
TRAIN = ["train", "events.txt", "--format", "snap", "--model", "tgn", "--memory-dim", "8", "--time-dim", "4",
         "--embedding-dim", "8", "--num-neighbors", "3", "--threads", "1"]


def _training_run(folder):
    """Write a generated stream to ``folder/events.txt``; return ``torchrun(*argv)``, which runs
    ``torchrun --nproc-per-node 2 -m tgeval *argv`` in ``folder`` and returns its stdout."""
    data = generate_events(num_events=800, num_nodes=60, seed=4)
    (folder / "events.txt").write_text("".join(f"{u} {v} {t}\n" for u, v, t in
                                               zip(data.src.tolist(), data.dst.tolist(), data.t.tolist())))
    env = {**os.environ, "PYTHONPATH": str(README.parent), "OMP_NUM_THREADS": "1"}

    def torchrun(*argv):
        done = subprocess.run(["torchrun", "--nproc-per-node", "2", "--master-port", str(free_port()), "-m",
                               "tgeval", *argv], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout
    return torchrun


@pytest.mark.slow
def test_torchrun_train_writes_one_run_that_matches_one_process(tmp_path, monkeypatch):
    """`torchrun --nproc-per-node 2 -m tgeval train ...`: data-parallel epochs, rank 0 alone prints
    and writes the checkpoints and the result, whose validation metrics match one process's."""
    torchrun = _training_run(tmp_path)
    out = torchrun(*TRAIN, "--epochs", "1", "--checkpoint-dir", "run", "--out", "r.json")
    assert out.count("wrote r.json") == 1 and out.count("epoch 0:") == 1  # rank 0 alone
    assert {p.name for p in (tmp_path / "run").iterdir()} == {"last.pt", "best.pt", "timings.json"}
    monkeypatch.chdir(tmp_path)
    assert main([*TRAIN, "--epochs", "1", "--checkpoint-dir", "single", "--out", "single.json"]) == 0
    sharded, single = (json.loads((tmp_path / name).read_text()) for name in ("r.json", "single.json"))
    assert sharded["manifest"]["distributed"]["world_size"] == 2
    for key in ("ap", "auroc"):
        assert sharded["metrics"]["sampled"][key]["global"] == pytest.approx(
            single["metrics"]["sampled"][key]["global"], abs=1e-3)


@pytest.mark.slow
def test_torchrun_resume_continues_the_run_bit_for_bit(tmp_path):
    """An interrupted `torchrun` training run resumed from its last.pt (every rank reads it) ends with
    the checkpoints and the result of the run that was never interrupted."""
    torchrun = _training_run(tmp_path)
    args = [*TRAIN, "--lr", "0.01"]
    torchrun(*args, "--epochs", "2", "--checkpoint-dir", "whole", "--out", "whole.json")
    torchrun(*args, "--epochs", "1", "--checkpoint-dir", "parts", "--out", "first.json")
    torchrun(*args, "--epochs", "2", "--checkpoint-dir", "parts", "--resume", "parts/last.pt", "--out", "resumed.json")
    whole, resumed = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("whole", "resumed"))
    assert resumed["metrics"] == whole["metrics"]
    for name in ("last.pt", "best.pt"):
        assert (tmp_path / "parts" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
