import json

import pytest
import torch

from tgeval.training.train import Recipe
from tgeval.data import read_events
from tgeval.data.catalog import build_catalog
from tgeval.data.split import chronological_split
from tgeval.models import message_dim
from tgeval.eval.protocol import DEFAULT_VAL_NEGATIVES
from tgeval.samplers import HistoricalSampler
from tgeval.training.checkpoint import load_checkpoint, seed_all
from tgeval.training.fitting import fit
from tgeval.core.choices import flag
from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.training.fitting import TIMING_KEYS
from tgeval.models import registry
from tgeval.stream.state import first_difference


def config_flags(model):
    """The command-line flags of the registered model's small test config."""
    return [part for key, value in registry.entry(model).test_config.items() for part in (flag(key), str(value))]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The same generated stream as a SNAP edge list (no features) and a JODIE CSV (2 features)."""
    folder = tmp_path_factory.mktemp("data")
    data = generate_events(num_events=1200, num_nodes=60, seed=4, feature_dim=2)
    rows = list(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist(), data.msg.tolist()))
    snap, jodie = folder / "events.txt", folder / "events.csv"
    snap.write_text("".join(f"{u} {v} {t}\n" for u, v, t, _ in rows))
    jodie.write_text("user_id,item_id,timestamp,state_label,features\n"
                     + "".join(f"{u},{v},{t},0,{m[0]},{m[1]}\n" for u, v, t, m in rows))
    return {"snap": snap, "jodie": jodie}


def train(path, fmt, model, folder, *extra):
    out = folder / "train.json"
    code = main(["train", str(path), "--format", fmt, "--model", model, *config_flags(model), "--epochs", "2",
                 "--lr", "0.01", "--batch-size", "100", "--checkpoint-dir", str(folder), "--out", str(out), *extra])
    assert code == 0
    return json.loads(out.read_text())


def evaluate(path, fmt, checkpoint, out, *extra):
    code = main(["evaluate", str(path), "--format", fmt, "--model", str(checkpoint), "--batch-size", "100",
                 "--out", str(out), *extra])
    assert code == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("model,fmt,msg_dim", [(name, *(("jodie", 2), ("snap", 1))[i % 2])  # every registered model
                                               for i, name in enumerate(registry.names("neural"))])
def test_train_then_evaluate_the_checkpoint(files, tmp_path, model, fmt, msg_dim, capsys):
    trained = train(files[fmt], fmt, model, tmp_path, "--sampler", "historical:replace=true", "--loss", "bpr",
                    "--num-negatives", "2", "--val-negatives", "5")
    training = trained["manifest"]["training"]
    assert trained["manifest"]["model"]["msg_dim"] == msg_dim  # features when the data has them
    assert training["model"] == model and training["training"]["sampler_spec"] == "historical:replace=true"
    assert training["training"]["loss"] == "bpr" and training["training"]["num_negatives"] == 2
    assert training["val_metric"] == "ap" and len(training["history"]) == 2
    best = training["best_epoch"]
    # the final validation result is the best epoch's: same negatives (seed), same parameters
    assert trained["metrics"]["sampled"]["ap"]["global"] == training["history"][best]["val"]["ap"]
    out = capsys.readouterr().out
    assert "epoch 1: loss" in out and "validation AP (K=5, uniform) " in out
    assert training["training"]["validation"]["names"]["ap"] == "AP (K=5, uniform)"
    train_events = trained["manifest"]["split"]["train"]["num_events"]
    assert [record["sampler"]["num_events"] for record in training["history"]] == [train_events] * 2

    checkpoint = tmp_path / "best.pt"
    # evaluating the checkpoint on validation reproduces the training command's result exactly
    again = evaluate(files[fmt], fmt, checkpoint, tmp_path / "val.json", "--segment", "val", "--negatives", "5")
    assert again["metrics"] == trained["metrics"]
    manifest = again["manifest"]["checkpoint"]
    assert manifest["path"] == str(checkpoint) and manifest["sha256"] == load_checkpoint(checkpoint).sha256
    assert manifest["training"]["sampler_spec"] == "historical:replace=true" and manifest["epoch"] == best
    # provenance: the training sampler's options, and its real counts over the checkpoint's epoch
    assert manifest["training"]["sampler"]["name"] == "historical"
    assert "num_events" not in manifest["training"]["sampler"]
    assert manifest["sampler_counts"] == training["history"][best]["sampler"]
    for protocol in ("fixed", "online"):
        result = evaluate(files[fmt], fmt, checkpoint, tmp_path / f"{protocol}.json", "--protocol", protocol,
                          "--negatives", "3", "--sampler", "popularity", "--catalog", "all", "--ties", "pessimistic")
        assert result["manifest"]["protocol"]["replay"] == protocol and result["manifest"]["catalog"]["kind"] == "all"
        assert result["manifest"]["model"]["name"].lower() == model
        assert 0 < result["metrics"]["all_entity"]["mrr"]["micro"] <= 1
    assert "best.pt" in capsys.readouterr().out


def test_train_validates_by_the_all_entity_pass_alone_with_no_negatives(files, tmp_path, capsys):
    """``--val-negatives 0``: no validation sampler, every epoch and the final result measure the all-entity pass
    only, and the final result is the best epoch's."""
    trained = train(files["snap"], "snap", "tgn", tmp_path, "--val-negatives", "0", "--val-metric", "all_entity_mrr")
    training = trained["manifest"]["training"]
    assert training["training"]["validation"]["sampler"] is None and "sampled" not in trained["metrics"]
    assert all(set(record["val"]) == {"all_entity_mrr"} for record in training["history"])
    assert trained["metrics"]["all_entity"]["mrr"]["micro"] == training["best_value"]
    assert "validation all-entity MRR (catalog train, " in capsys.readouterr().out


def test_resume_through_the_cli_equals_one_run(files, tmp_path):
    whole = train(files["snap"], "snap", "tgn", tmp_path / "whole", "--epochs", "3")
    train(files["snap"], "snap", "tgn", tmp_path / "cut")  # 2 epochs
    resumed = train(files["snap"], "snap", "tgn", tmp_path / "cut", "--epochs", "3",
                    "--resume", str(tmp_path / "cut" / "last.pt"))
    a, b = (load_checkpoint(tmp_path / run / "last.pt") for run in ("whole", "cut"))
    assert a.epoch == b.epoch == 2
    assert first_difference(a.model.state_dict(), b.model.state_dict()) is None

    def strip(result):
        return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in result["manifest"]["training"]["history"]]

    assert strip(whole) == strip(resumed) and whole["metrics"] == resumed["metrics"]


def test_neural_cli_errors_exit_2(files, tmp_path, capsys):
    snap = str(files["snap"])
    assert main(["train", snap, "--format", "snap", "--model", "graphmixer", "--memory-dim", "8", "--epochs", "1"]) == 2
    assert "--memory-dim does not apply to graphmixer" in capsys.readouterr().err
    assert main(["train", snap, "--format", "snap", "--checkpoint-dir", str(tmp_path), "--epochs", "1"]) == 2
    assert "not to membership" in capsys.readouterr().err
    assert main(["evaluate", snap, "--format", "snap", "--model", str(tmp_path / "missing.pt")]) == 2
    assert "neither a model name" in capsys.readouterr().err
    train(files["snap"], "snap", "dyrep", tmp_path, "--epochs", "1")
    other = tmp_path / "other.txt"
    other.write_text("".join(files["snap"].read_text().splitlines(keepends=True)[:-1]))  # one event less
    assert main(["evaluate", str(other), "--format", "snap", "--model", str(tmp_path / "last.pt")]) == 2
    assert "trained on other data" in capsys.readouterr().err
    (tmp_path / "broken.pt").write_bytes((tmp_path / "last.pt").read_bytes()[:-10])
    assert main(["evaluate", snap, "--format", "snap", "--model", str(tmp_path / "broken.pt")]) == 2
    assert "corrupted" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["graphmixer", "tgn"])
def test_models_with_query_time_gaps_train_and_evaluate_sampled_only(name, files, tmp_path, capsys):
    trained = train(files["snap"], "snap", name, tmp_path, "--time-gap", "query")
    assert trained["manifest"]["model"]["time_gap"] == "query" and "all_entity" not in trained["metrics"]
    assert "cannot rank a whole catalog" in capsys.readouterr().out
    checkpoint = str(tmp_path / "best.pt")
    assert main(["evaluate", str(files["snap"]), "--format", "snap", "--model", checkpoint]) == 2
    assert "cannot rank a whole catalog" in capsys.readouterr().err
    sampled = evaluate(files["snap"], "snap", checkpoint, tmp_path / "test.json", "--no-all-entity")
    assert sampled["manifest"]["model"]["time_gap"] == "query" and 0 < sampled["metrics"]["sampled"]["mrr"]["micro"]
    history = {"graphmixer": "exact", "tgn": "batch"}[name]  # each one's default
    assert sampled["manifest"]["history"]["mode"] == history
    if name == "tgn":  # DyGLib's TGN: neighbours inside a batch, validation from the state training left
        again = evaluate(files["snap"], "snap", checkpoint, tmp_path / "neighbors.json", "--no-all-entity",
                         "--history", "neighbors")
        assert again["manifest"]["history"]["mode"] == "neighbors"
        dyglib = train(files["snap"], "snap", name, tmp_path / "dyglib", "--time-gap", "query", "--history",
                       "neighbors", "--val-state", "training")
        spec = dyglib["manifest"]["training"]["training"]
        assert spec["history"] == "neighbors" and spec["validation"]["history"] == "neighbors"
        assert spec["validation"]["state"].startswith("the state training left")
        assert dyglib["manifest"]["history"]["mode"] == "neighbors"
        assert main(["train", str(files["snap"]), "--format", "snap", "--model", "tgn", "--history", "neighbors"]) == 2
        assert "batch_neighbors is False" in capsys.readouterr().err


def test_train_and_fit_share_the_default_validation(files, tmp_path):
    """`tgeval train` and `fit` with their defaults validate the same model and seed under one protocol, to the
    same numbers."""
    trained = train(files["snap"], "snap", "tgn", tmp_path, "--epochs", "1", "--sampler", "historical")
    cli = trained["manifest"]["training"]
    data, info = read_events(files["snap"], "snap")
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=info.num_nodes)
    seed_all(0)
    sampler = HistoricalSampler(info.num_nodes, catalog=catalog)
    model = registry.build("tgn", num_nodes=info.num_nodes, msg_dim=message_dim(data),
                           **registry.entry("tgn").test_config)
    api = fit(model, data, split, recipe=Recipe(sampler, "bce", batch_size=100),
              optimizer=torch.optim.Adam(model.parameters(), lr=0.01), epochs=1)
    assert api["training"]["validation"] == cli["training"]["validation"]
    assert api["training"]["validation"]["names"]["ap"] == f"AP (K={DEFAULT_VAL_NEGATIVES}, uniform)"
    assert api["history"][0]["val"] == cli["history"][0]["val"]
