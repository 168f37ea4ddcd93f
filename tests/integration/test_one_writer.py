"""No output replaces another output, checkpoint or run: a result or a checkpoint is replaced only by its own
kind, and ``--overwrite`` leaves no file of the replaced run."""

import json

import pytest
import torch

from tgeval.atomic import check_distinct
from tgeval.data.catalog import build_catalog
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.errors import OutputPathError
from tgeval.models import TGN, message_dim
from tgeval.samplers import UniformSampler
from tgeval.training.checkpoint import load_checkpoint
from tgeval.training import fitting
from tgeval.training.fitting import Checkpointing, fit
from tests.helpers import small_neural_model


def names(folder):
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
    fit(model, data, split, sampler=UniformSampler(build_catalog(data, "train", train_end=split.train.end)),
        loss="bce", optimizer=torch.optim.Adam(model.parameters()), epochs=1, verbose=False,
        checkpoints=Checkpointing(folder, overwrite=True))
    assert names(folder) == ["last.pt", "timings.json"] and (folder / "timings.json").read_text() != "the replaced run"
    assert load_checkpoint(folder / "last.pt", data=data).epoch == 0
