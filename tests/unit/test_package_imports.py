"""Importing tgeval or any of its packages loads neither torch nor PyG; their public names and
subpackages load on first use, each the very object its defining module holds."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import tgeval

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("tgeval", "tgeval.data", "tgeval.diagnostics", "tgeval.eval", "tgeval.models", "tgeval.samplers",
            "tgeval.static", "tgeval.training")


@pytest.mark.parametrize("package", PACKAGES)
def test_import_loads_neither_torch_nor_pyg(package):
    probe = f"import sys, {package}; print('torch' in sys.modules, 'torch_geometric' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_public_names_and_subpackages_resolve():
    from tgeval.eval.engine import evaluate

    assert tgeval.evaluate is evaluate and "evaluate" in dir(tgeval)
    assert tgeval.samplers.UniformSampler.__name__ == "UniformSampler"  # a subpackage, imported on first use
    for name, source in tgeval._SOURCES.items():
        assert getattr(tgeval, name) is getattr(importlib.import_module(source), name), name
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        tgeval.evaluat


def test_the_sampler_registry_holds_every_sampler_whichever_name_is_read_first():
    probe = "import tgeval.samplers as s; print(' '.join(s.names()))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert {"uniform", "historical", "source_history", "inductive", "time_available", "popularity", "degree",
            "degree_time", "mixture", "fixed", "tgb", "HS", "OE"} <= set(done.stdout.split()), done.stderr
