"""Every model the README and the guides show trains with ``fit`` as written: tgeval's TGN, DyRep and GraphMixer
(their documented default configs) and the PyG-built models of the guide (``PygTGN`` and its variants
``GatedMeanTGN``, a message module of one's own with ``MeanAggregator``, and ``MemoryOnly``, ``LastAggregator``
with memory-only embeddings), their classes run from the guide's blocks, not copied here.

Each trains for three epochs with validation after every one (from the rebuilt state, which switches modes
and resets the state between training and validation: where PyG's ``TGNMemory`` used to keep an autograd graph)
and checkpoints; a second run is killed (SIGKILL, in its own process) after its first epoch and resumed here
from its ``last.pt`` by a fresh model: it must end bit-identical to the uninterrupted run (parameters, history,
checkpoint bytes, the all-entity evaluation), and the validation metric must move from epoch 0.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tgeval
from tgeval.training.train import Recipe
from tgeval.data.synthetic import generate_events
from tgeval.models import registry
from tgeval.samplers import UniformSampler
from tgeval.stream.state import first_difference
from tgeval.training.checkpoint import seed_all
from tgeval.training.fitting import TIMING_KEYS, Checkpointing, fit
from tests.helpers import guide_models

REPO = Path(__file__).resolve().parents[2]
NUM_NODES, EPOCHS = 30, 3
#: registry name of each documented model, and the guide's classes (model, config) to register
GUIDE = {"pyg-tgn": ("PygTGN", "PygTGNConfig"), "gated-mean-tgn": ("GatedMeanTGN", "PygTGNConfig"),
         "memory-only": ("MemoryOnly", "MemoryOnlyConfig")}
MODELS = ["tgn", "dyrep", "graphmixer", *GUIDE]

pytestmark = pytest.mark.usefixtures("one_thread")


def register_guide_models() -> None:
    classes = guide_models()
    for name, (model, config) in GUIDE.items():
        registry.register(name, classes[model], config=classes[config])


def stream():
    data = generate_events(700, NUM_NODES, seed=5, feature_dim=2)
    split = tgeval.chronological_split(data, (0.7, 0.15, 0.15))
    catalog = tgeval.build_catalog(data, "train", train_end=split.train.end, num_nodes=NUM_NODES)
    return data, split, catalog


def train(name: str, folder: Path, resume=None, seed: int = 0, on_epoch=None, verbose: bool = False):
    """Build ``name`` with its default config and fit it for :data:`EPOCHS` epochs into ``folder``, every
    generator seeded with ``seed`` (checkpoints record them all: the same bytes in any process)."""
    data, split, catalog = stream()
    seed_all(seed)
    model = registry.build(name, num_nodes=NUM_NODES, msg_dim=data.msg.size(1))
    history = fit(model, data, split, recipe=Recipe(UniformSampler(catalog), "bce"),
                  optimizer=torch.optim.Adam(model.parameters(), lr=1e-3), epochs=EPOCHS,
                  checkpoints=Checkpointing(folder, resume=resume), on_epoch=on_epoch, verbose=verbose)
    return model, history


@pytest.fixture(scope="module", autouse=True)
def registered():
    register_guide_models()
    yield
    for name in GUIDE:
        registry.unregister(name)


def untimed(history):
    return [{k: v for k, v in record.items() if k not in TIMING_KEYS} for record in history["history"]]


@pytest.mark.parametrize("name", MODELS)
def test_a_documented_model_trains_validates_and_resumes_bit_identically_after_a_kill(name, tmp_path, capsys):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the killed run's: another thread count sums floats in another order (bit-identical
    # runs are promised at a fixed thread count)
    try:
        _trains_validates_and_resumes(name, tmp_path, capsys)
    finally:
        torch.set_num_threads(threads)


def _trains_validates_and_resumes(name, tmp_path, capsys):
    model, history = train(name, tmp_path / "full", verbose=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")]
    assert len(lines) == EPOCHS and all("AP (K=1, uniform)" in line and " s (training " in line for line in lines)
    values = [record["val"]["ap"] for record in history["history"]]
    assert len(values) == EPOCHS and all(v == v for v in values)
    assert any(v != values[0] for v in values[1:]), f"{name}: the validation AP never moved from epoch 0 ({values})"

    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, name, str(tmp_path / "cut")], cwd=REPO,
                            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert (tmp_path / "cut" / "last.pt").is_file()

    resumed, resumed_history = train(name, tmp_path / "cut", resume=tmp_path / "cut" / "last.pt", seed=7)
    assert resumed_history["resumed_from"].endswith("last.pt")
    assert first_difference(model.state_dict(), resumed.state_dict()) is None
    assert untimed(resumed_history) == untimed(history)
    for file in ("last.pt", "best.pt"):
        assert (tmp_path / "full" / file).read_bytes() == (tmp_path / "cut" / file).read_bytes(), file

    data, split, catalog = stream()
    results = [tgeval.evaluate(m, data, split.test, tgeval.Protocol(num_negatives=0), catalog=catalog)
               for m in (model, resumed)]
    mrr = [r.metrics["all_entity"]["mrr"]["micro"] for r in results]
    assert mrr[0] == mrr[1] and 0.0 < mrr[0] <= 1.0


#: the same run in its own process, killed with SIGKILL right after its first epoch's checkpoints
KILLED_RUN = """
import os, signal, sys
import torch
torch.set_num_threads(1)
from tests.integration.test_documented_models import register_guide_models, train
register_guide_models()
train(sys.argv[1], sys.argv[2], on_epoch=lambda record: os.kill(os.getpid(), signal.SIGKILL))
"""
