"""tgeval's modules import only from their own layer or the layers below it (read from the source with ``ast``:
every ``import`` counts, at module level or inside a function)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import tgeval

ROOT = Path(tgeval.__file__).parent

#: the layers, lowest first: a module of tgeval (or a package and all its modules) and the layer it lies in
LAYERS: list[tuple[str, ...]] = [
    ("tgeval", "tgeval.errors", "tgeval.core"),
    ("tgeval.data",),
    ("tgeval.stream",),
    ("tgeval.samplers", "tgeval.models"),
    ("tgeval.eval",),
    ("tgeval.training", "tgeval.diagnostics", "tgeval.static"),
    ("tgeval.cli", "tgeval.__main__"),
]

#: imports up the layers that are known and left for now: (importer, imported) -> why
KNOWN: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> int:
    """The layer of ``module``: that of the longest entry of :data:`LAYERS` it is or lies in."""
    found = [(len(entry), level) for level, entries in enumerate(LAYERS) for entry in entries
             if module == entry or (entry != "tgeval" and module.startswith(entry + "."))]
    if not found and module.startswith("tgeval."):  # a top-level module no layer names
        raise AssertionError(f"{module} lies in no layer: add it to LAYERS")
    return max(found)[1] if found else 0


def imported(module: str, path: Path) -> set[str]:
    """The tgeval modules ``module`` imports: ``from tgeval import name`` names the submodule ``name``, or the
    module that defines the package's lazily exported ``name``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name.split(".")[0] == "tgeval"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tgeval":
            assert node.level == 0, f"{module}: relative import"
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                sources = getattr(importlib.import_module(node.module), "_SOURCES", {})
                out.add(sub if sub in MODULES else sources.get(alias.name, node.module))
    return out


def violations() -> dict[tuple[str, str], str]:
    return {(module, target): f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
            for module, path in MODULES.items() for target in imported(module, path) if layer(target) > layer(module)}


def test_every_module_lies_in_a_layer():
    for module in MODULES:
        layer(module)


def test_no_module_imports_up_the_layers():
    found = violations()
    new = [why for pair, why in sorted(found.items()) if pair not in KNOWN]
    assert not new, "imports up the layers:\n" + "\n".join(new)
    stale = [pair for pair in KNOWN if pair not in found]
    assert not stale, f"known violations that are gone: remove them from KNOWN: {stale}"


def test_an_import_up_is_found(tmp_path):
    """The check itself, on a made-up sampler module: imports of eval (directly, through the package's lazy
    names, inside a function) are found up the layers, those of data and of the package's submodules are not."""
    path = tmp_path / "made_up.py"
    path.write_text("from tgeval import evaluate\nfrom tgeval.core import progress\nfrom tgeval.data.hashing import fingerprint\n"
                    "def f():\n    import tgeval.eval.metrics\n    from tgeval.samplers import get\n")
    targets = imported("tgeval.samplers.made_up", path)
    assert targets == {"tgeval.eval.engine", "tgeval.core.progress", "tgeval.data.hashing", "tgeval.eval.metrics",
                       "tgeval.samplers.registry"}
    up = {target for target in targets if layer(target) > layer("tgeval.samplers.made_up")}
    assert up == {"tgeval.eval.engine", "tgeval.eval.metrics"}
