"""The notebooks run, in their small setting, top to bottom in a real Jupyter kernel (nbclient and
ipykernel, from the `dev` extra), as a reader runs them, and are committed without outputs."""

import copy
import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
EXPECTED = ["01_quickstart.ipynb", "02_samplers.ipynb", "03_birth_death.ipynb", "04_static_degree_bias.ipynb"]


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_the_notebooks_are_there_and_committed_without_outputs():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED
    for path in NOTEBOOKS.glob("*.ipynb"):
        for i, cell in enumerate(cells(path)):
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, f"{path.name} cell {i} has output"


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_in_its_small_setting(name, monkeypatch):
    """Every cell in order in a fresh ``python3`` kernel started in the repository root (so that it
    imports this checkout), plots on the non-interactive backend; a last cell checks the small setting.
    A cell that raises fails the test with the cell and its traceback."""
    monkeypatch.delenv("TGEVAL_NOTEBOOK_FULL", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    notebook = nbformat.read(str(NOTEBOOKS / name), as_version=4)
    original = copy.deepcopy(notebook)
    notebook.cells.append(nbformat.v4.new_code_cell("assert FULL is False, 'the notebook ran its full setting'"))
    client = NotebookClient(notebook, kernel_name="python3", timeout=600,
                            resources={"metadata": {"path": str(REPO)}})
    client.execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code), "a cell was not executed"
    errors = [output for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors
    assert nbformat.read(str(NOTEBOOKS / name), as_version=4) == original  # the file is left as it was
