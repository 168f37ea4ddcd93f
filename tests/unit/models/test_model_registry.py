"""The model registry: one ``register`` line makes a model a CLI choice with its config flags,
checkpointable, and covered by the contract tests (``tests/toy_model.py`` is that line's proof:
it is parametrised into ``test_neural_models``, ``test_neural_properties`` and
``test_cli_neural`` like the built-in models); models of other packages join through entry points."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from tgeval.cli.program import build_parser, hyperparameter_flags, main
from tgeval.errors import ModelConfigError
from tgeval.models import DyRepConfig, EdgeBank, TGN, TGNConfig, registry
from tests.helpers import fake_distribution
from tests.toy_model import Toy, ToyConfig

REPO = Path(__file__).resolve().parents[3]


def test_the_toy_model_is_registered_like_the_built_in_ones():
    assert registry.names("neural") == ("dyrep", "graphmixer", "tgn", "toy")
    assert set(registry.names("heuristic")) == {"edgebank", "edgebank-window", "node-memory", "pa", "popularity",
                                                 "membership", "recency-local", "recency-global", "popularity-local",
                                                 "popularity-global", "local-global", "recency-popularity-local",
                                                 "recency-popularity-global", "poptrack"}
    assert registry.names(trainable=True) == ("dyrep", "graphmixer", "membership", "tgn", "toy")
    assert registry.entry("toy").model_class() is Toy and registry.entry("tgn").model_class() is TGN
    assert registry.name_of(Toy(ToyConfig(5))) == "toy" and registry.name_of(TGN(TGNConfig(5))) == "tgn"


def test_the_cli_offers_every_registered_model_and_its_config_fields():
    train = next(action for action in build_parser()._subparsers._group_actions[0].choices["train"]._actions
                 if "--model" in action.option_strings)
    assert set(train.choices) == set(registry.names(trainable=True))
    flags = hyperparameter_flags()
    assert flags["embedding_dim"] == (int, {"graphmixer": 100, "tgn": 100, "toy": 16})
    assert flags["dropout"][0] is float and "num_nodes" not in flags and "msg_dim" not in flags
    assert "node_dim" not in flags  # GraphMixer's comes from its node features
    args = build_parser().parse_args(["train", "x.txt", "--format", "snap", "--model", "toy", "--embedding-dim", "6"])
    assert args.model == "toy" and args.embedding_dim == 6 and args.memory_dim is None


def test_a_flag_of_another_model_is_refused(tmp_path, capsys):
    path = tmp_path / "events.txt"
    path.write_text("".join(f"{i % 7} {(i * 3) % 7} {i}\n" for i in range(200)))
    code = main(["train", str(path), "--format", "snap", "--model", "toy", "--memory-dim", "8"])
    assert code == 2 and "--memory-dim does not apply to toy; its config flags: --embedding-dim, --num-neighbors" \
        in capsys.readouterr().err
    code = main(["train", str(path), "--format", "snap", "--model", "membership", "--embedding-dim", "8"])
    assert code == 2 and "--embedding-dim apply to the neural models" in capsys.readouterr().err


def test_build_fills_the_config_and_checks_it():
    model = registry.build("toy", num_nodes=9, embedding_dim=4)
    assert model.config == ToyConfig(9, 1, 4, 5)
    with pytest.raises(ModelConfigError,
                       match=r"model 'toy' takes no option \['memory_dim'\]; its config ToyConfig has"):
        registry.build("toy", num_nodes=9, memory_dim=4)
    with pytest.raises(ValueError, match="DyRepConfig.memory_dim must be even"):
        registry.build("dyrep", num_nodes=9, memory_dim=7)
    with pytest.raises(ValueError, match="TGNConfig.dropout must be in"):
        TGNConfig(9, dropout=1.0)
    with pytest.raises(ValueError, match="TGNConfig.num_neighbors must be an int"):
        TGNConfig(9, num_neighbors=2.5)
    # a heuristic takes the options its constructor has and ignores the others
    bank = registry.build("edgebank-window", num_nodes=9, window=3.0, directed=False, memory_dim=4)
    assert isinstance(bank, EdgeBank) and bank.window == 3.0 and not bank.directed


def test_registration_errors_name_the_fix(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", registry._REGISTRY.copy())
    with pytest.raises(ModelConfigError, match="unknown model 'tgm'; registered: dyrep, edgebank"):
        registry.entry("tgm")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("toy", Toy, config=ToyConfig)

    @dataclasses.dataclass
    class NoNodes:
        width: int = 3

    with pytest.raises(TypeError, match="dataclass with the fields num_nodes and msg_dim"):
        registry.register("bad", Toy, config=NoNodes)
    with pytest.raises(TypeError, match="must be a dataclass"):
        registry.register("bad", Toy, config=dict)
    registry.register("toy2", Toy, config=ToyConfig, help="a second name")
    registry.unregister("toy2")
    with pytest.raises(ModelConfigError, match="unknown model 'toy2'"):
        registry.unregister("toy2")
    with pytest.raises(ModelConfigError, match="not a registered model"):
        registry.name_of(object())
    assert DyRepConfig in {registry.entry(n).config for n in registry.names()}


def test_an_entry_point_of_another_package_registers_its_models(tmp_path):
    """A package declaring a ``tgeval.models`` entry point: the shell command lists its model."""
    entry_points = fake_distribution(
        tmp_path, "plugin_models", "from tgeval.models import registry\n"
        "from tests.toy_model import Toy, ToyConfig\n"
        "registry.register('plugin-toy', Toy, config=ToyConfig, help='a model of another package')\n",
        "tgeval.models", "plugin-toy")
    env = {"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "tgeval", "train", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    assert "plugin-toy" in done.stdout and "a model of another package" in done.stdout
    entry_points.write_text("[tgeval.models]\nbroken = no_such_module\n")
    done = subprocess.run([sys.executable, "-m", "tgeval", "train", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)
    assert done.returncode != 0 and "entry point 'broken' = 'no_such_module' failed to import" in done.stderr
