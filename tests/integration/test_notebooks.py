"""The notebooks run, in their small setting, as a reader would run them top to bottom, and are
committed without outputs (nbclient is not a dependency: each code cell is executed in order in
one namespace, which is what a kernel does for a linear notebook)."""

import json
from pathlib import Path

import matplotlib
import pytest
import torch

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
EXPECTED = ["01_quickstart.ipynb", "02_samplers.ipynb", "03_birth_death.ipynb", "04_static_degree_bias.ipynb"]


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_the_notebooks_are_there_and_committed_without_outputs():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED
    for path in NOTEBOOKS.glob("*.ipynb"):
        for i, cell in enumerate(cells(path)):
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, f"{path.name} cell {i} has output"


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_in_its_small_setting(name, monkeypatch):
    monkeypatch.delenv("TGEVAL_NOTEBOOK_FULL", raising=False)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__main__"}
    threads = torch.get_num_threads()  # the notebooks set their own
    try:
        for i, cell in enumerate(cells(NOTEBOOKS / name)):
            if cell["cell_type"] == "code":
                exec(compile("".join(cell["source"]), f"{name}, cell {i}", "exec"), namespace)
    finally:
        plt.close("all")
        torch.set_num_threads(threads)
    assert namespace["FULL"] is False
