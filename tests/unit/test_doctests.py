"""Every docstring example of the package runs: each module of ``tgeval`` (found by walking the source
tree, so a new module is covered without a list to keep) is imported and its examples executed with
doctest; a module without examples passes vacuously, one with a failing example fails here."""

import doctest
import importlib
from pathlib import Path

import pytest
import torch

PACKAGE = Path(__file__).resolve().parents[2] / "tgeval"
# ``tgeval.__main__`` runs the command line on import: it holds no examples.
MODULES = sorted(
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for path in PACKAGE.rglob("*.py") if path.name != "__main__.py"
)


def test_the_walk_finds_the_package():
    assert "tgeval" in MODULES and "tgeval.eval.engine" in MODULES and len(MODULES) > 60


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, one_thread):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"torch": torch}, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
    if ">>>" in Path(module.__file__).read_text(encoding="utf-8"):  # an example written is an example found
        found = sum(len(test.examples) for test in doctest.DocTestFinder().find(module))
        assert found > 0, f"{name} writes examples that doctest does not find"
