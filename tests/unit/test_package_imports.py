"""`import tgeval` loads neither torch nor PyG; its public names and subpackages load on first use."""

import subprocess
import sys
from pathlib import Path

import pytest

import tgeval

REPO = Path(__file__).resolve().parents[2]


def test_import_tgeval_loads_neither_torch_nor_pyg():
    probe = "import sys, tgeval; print('torch' in sys.modules, 'torch_geometric' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_public_names_and_subpackages_resolve():
    from tgeval.eval.engine import evaluate

    assert tgeval.evaluate is evaluate and "evaluate" in dir(tgeval)
    assert tgeval.samplers.UniformSampler.__name__ == "UniformSampler"  # a subpackage, imported on first use
    assert all(getattr(tgeval, name) is not None for name in tgeval.__all__)
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        tgeval.evaluat
