"""Upper bounds of the neural models' config fields: a width, neighbour count or depth far above any
sensible one, or a model whose parameters would not fit in memory, is a ``ModelConfigError`` naming the field
and the fix when the config is made, before anything is allocated (the command line: exit 2)."""

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.cli.program import main
from tgeval.errors import ModelConfigError
from tgeval.models import DyRepConfig, GraphMixerConfig, TGNConfig, registry
from tgeval.models.config import MAX_LAYERS, MAX_NEIGHBORS, MAX_PARAMETERS, MAX_WIDTH

CONFIGS = (TGNConfig, DyRepConfig, GraphMixerConfig)
BOUNDS = {"memory_dim": MAX_WIDTH, "time_dim": MAX_WIDTH, "embedding_dim": MAX_WIDTH, "hidden_dim": MAX_WIDTH,
          "num_neighbors": MAX_NEIGHBORS, "num_layers": MAX_LAYERS}
CASES = [(config, field.name) for config in CONFIGS for field in dataclasses.fields(config) if field.name in BOUNDS]


def test_every_bounded_field_is_covered():
    """Every int hyperparameter of the three models has a bound (dropout, literals: their own checks)."""
    ints = {(config, name) for config in CONFIGS for name, (kind, _) in registry.entry(
        {TGNConfig: "tgn", DyRepConfig: "dyrep", GraphMixerConfig: "graphmixer"}[config]).hyperparameters().items()
        if kind is int}
    assert ints == set(CASES)


@pytest.mark.parametrize("config, field", CASES)
def test_a_field_above_its_bound_is_refused_with_the_fix(config, field):
    bound = BOUNDS[field]
    assert getattr(config(10, **{field: bound}), field) == bound  # the bound itself is allowed
    for value in (bound + 2, 10**12, 2**70):
        with pytest.raises(ModelConfigError, match=rf"{config.__name__}\.{field} must be <= {bound:,}, got {value:,}: pass a "
                                             rf"smaller {field} \(the recipes use \d+\)"):
            config(10, **{field: value})


@pytest.mark.parametrize("config, options", [
    (GraphMixerConfig, dict(hidden_dim=MAX_WIDTH, num_layers=MAX_LAYERS)),
    (TGNConfig, dict(msg_dim=10**6, memory_dim=2048, embedding_dim=2048)),
    (DyRepConfig, dict(msg_dim=10**6, memory_dim=MAX_WIDTH)),
])
def test_a_model_too_large_for_memory_is_refused(config, options):
    """Each field within its bound, the parameters together beyond 2^30."""
    with pytest.raises(ModelConfigError, match=rf"{config.__name__} with .* has [\d,]+ parameters, more than "
                                         rf"{MAX_PARAMETERS:,} .*: pass smaller widths"):
        config(10, **options)


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["tgn", "dyrep", "graphmixer"]), msg_dim=st.integers(1, 5), node_dim=st.integers(0, 3),
       widths=st.lists(st.integers(1, 6).map(lambda w: 2 * w), min_size=4, max_size=4),
       neighbors=st.integers(1, 7), layers=st.integers(1, 3))
def test_the_parameter_count_is_the_built_models(name, msg_dim, node_dim, widths, neighbors, layers):
    entry = registry.entry(name)
    options = dict(zip(("memory_dim", "time_dim", "embedding_dim", "hidden_dim"), widths), num_neighbors=neighbors,
                   num_layers=layers, node_dim=node_dim)
    fields = {f.name for f in dataclasses.fields(entry.config)}
    config = entry.config(num_nodes=6, msg_dim=msg_dim, **{k: v for k, v in options.items() if k in fields})
    model = entry.model_class()(config)
    assert config.parameter_count() == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("flags, message", [
    (["--model", "tgn", "--memory-dim", "1000000000000"],
     "TGNConfig.memory_dim must be <= 4,096, got 1,000,000,000,000"),
    (["--model", "graphmixer", "--num-neighbors", "100000"], "GraphMixerConfig.num_neighbors must be <= 1,024"),
    (["--model", "graphmixer", "--hidden-dim", "4096", "--num-layers", "64"], "parameters, more than 1,073,741,824"),
])
def test_the_command_line_refuses_it_before_any_work(tmp_path, capsys, flags, message):
    path = tmp_path / "events.txt"
    path.write_text("".join(f"{i % 7} {(i * 3) % 7} {i}\n" for i in range(200)))
    torch.manual_seed(0)
    assert main(["train", str(path), "--format", "snap", "--epochs", "1", *flags]) == 2
    err = capsys.readouterr().err
    assert "tgeval: error: ModelConfigError:" in err and message in err, err
