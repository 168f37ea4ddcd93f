"""Sphinx configuration of the tgeval documentation.

Build (offline, warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Markdown pages go through MyST, the notebooks of ``notebooks/`` through myst-nb without being run
(the tests run them), and the API reference is generated from the docstrings (Google style, napoleon)
of the names each package lists in ``__all__`` (directive ``tgeval-package`` below).
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import os
import re
import sys
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document this checkout, installed or not
os.environ.setdefault("MPLBACKEND", "Agg")

import tgeval  # noqa: E402 (after the path)

project = "tgeval"
author = "the tgeval authors"
copyright = "the tgeval authors"
release = version = tgeval.__version__

extensions = [
    "myst_nb",  # Markdown (MyST) pages and the notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx-mathjax-offline",  # MathJax served from _static: the pages render math without a network
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
smartquotes = False  # text as typed: a flag stays --window, not an en dash
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]

# MyST: $...$ / $$...$$ math, ::: fences, (target)= labels with headings reachable as anchors
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# Notebooks are rendered as committed (without outputs); tests/integration/test_notebooks.py runs them.
nb_execution_mode = "off"

# API reference
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autodoc_preserve_defaults = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_inherit_docstrings = False  # torch's own docstrings (forward, ...) are not tgeval's
python_maximum_signature_line_length = 96  # long signatures wrap, one parameter a line
python_use_unqualified_type_names = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields, not as second descriptions of the attributes autodoc lists
napoleon_use_rtype = False
napoleon_preprocess_types = True

html_theme = "furo"
html_title = f"tgeval {release}"
html_static_path = ["_static"]
html_css_files = ["tgeval.css"]
html_show_sourcelink = False
html_theme_options = {"navigation_with_keys": True}

#: the public packages documented in docs/api/, most specific owner of a name last
PACKAGES = ["tgeval", "tgeval.data", "tgeval.eval", "tgeval.samplers", "tgeval.models", "tgeval.training",
            "tgeval.diagnostics", "tgeval.static", "tgeval.errors"]


def public_names(package: str) -> list[str]:
    """The names ``package`` exports (its ``__all__``), dunders such as ``__version__`` left out."""
    return [name for name in importlib.import_module(package).__all__ if not name.startswith("__")]


def source_module(package: str, name: str) -> str:
    """The module that defines ``package.name``: the package's ``_SOURCES`` entry, else the object's
    ``__module__`` (a tgeval module), else the loaded submodule of the package whose source documents it with a ``#:``
    comment, else the package."""
    sources = getattr(importlib.import_module(package), "_SOURCES", {})
    if name in sources:
        return sources[name]
    module = getattr(getattr(importlib.import_module(package), name), "__module__", None)
    if isinstance(module, str) and module.startswith("tgeval"):  # a typing alias says 'builtins' or 'typing'
        return module
    submodules = sorted(m for m in sys.modules if m.startswith(package + "."))
    return next((m for m in submodules if ("", name) in ModuleAnalyzer.for_module(m).find_attr_docs()), package)


def constant_doc(package: str, name: str) -> list[str]:
    """The ``#:`` comment documenting the constant ``package.name`` where it is defined."""
    return list(ModuleAnalyzer.for_module(source_module(package, name)).find_attr_docs().get(("", name), []))


def home(package: str, name: str) -> str:
    """The documented package whose page describes ``package.name``: of the packages exporting the same
    object, the longest one that contains its defining module (``tgeval.evaluate`` -> ``tgeval.eval``)."""
    obj, source = getattr(importlib.import_module(package), name), source_module(package, name)
    owners = [p for p in PACKAGES if name in public_names(p) and getattr(importlib.import_module(p), name) is obj
              and (source == p or source.startswith(p + "."))]
    return max(owners, key=len, default=package)


def entry_lines(package: str, name: str) -> list[str]:
    """The reST lines describing ``package.name`` in full."""
    obj, full = getattr(importlib.import_module(package), name), f"{package}.{name}"
    if inspect.isclass(obj):
        kind = "autoexception" if issubclass(obj, BaseException) else "autoclass"
        return [f".. {kind}:: {full}", ""]
    if inspect.isroutine(obj):
        return [f".. autofunction:: {full}", ""]
    # a constant or a type alias: its ``#:`` comment in the defining module, and its value when short
    doc = constant_doc(package, name)
    lines = [f".. py:data:: {full}"]
    value = repr(obj)
    if len(value) <= 120:
        lines.append(f"   :value: {value}")
    return [*lines, "", *(f"   {line}" for line in doc), ""]


class PackageAPI(SphinxDirective):
    """``.. tgeval-package:: tgeval.data``: the package's docstring, a summary table of every name of its
    ``__all__``, then the full entry of each name this page owns (see :func:`home`); a name another
    package owns links there."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        package = self.arguments[0]
        names = public_names(package)
        owned = [name for name in names if home(package, name) == package]
        lines = [f".. automodule:: {package}", "   :no-members:", "", ".. py:currentmodule:: None", "",
                 ".. rubric:: Summary", "", ".. list-table::", "   :class: autosummary", "   :widths: 30 70", ""]
        for name in names:
            lines += [f"   * - :py:obj:`~{home(package, name)}.{name}`", f"     - {self.summary(package, name)}"]
        lines.append("")
        if owned:
            lines += [".. rubric:: Reference", ""]
        for name in owned:
            lines += entry_lines(package, name)
        self.env.note_dependency(importlib.import_module(package).__file__)
        return list(nested_parse_to_nodes(self.state, StringList(lines, source=f"<{package}.__all__>")))

    def summary(self, package: str, name: str) -> str:
        """The first paragraph of the docstring (of the ``#:`` comment for a constant) of ``package.name``."""
        obj = getattr(importlib.import_module(package), name)
        routine = inspect.isclass(obj) or inspect.isroutine(obj)
        doc = (inspect.getdoc(obj) or "").splitlines() if routine else constant_doc(package, name)
        paragraph = [line.strip() for line in itertools.takewhile(str.strip, doc)]
        return " ".join(paragraph) or "\\"


def escaped(text: str) -> str:
    """``text`` as plain reST text: every markup character escaped."""
    return re.sub(r"([\\*`_|\[\]<>])", r"\\\1", text)


class RegistryTable(SphinxDirective):
    """``.. tgeval-registry:: tgeval.samplers.registry``: a table of every entry of a registry module
    (its ``describe()``): name, help and options with their types and defaults, so the docs list
    exactly what the command line and :func:`get`-style calls accept."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module(self.arguments[0])
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 18 42 40", "",
                 "   * - name", "     - what it does", "     - options (type = default)"]
        for row in module.describe():
            lines += [f"   * - ``{row.name}``", f"     - {escaped(row.help) or chr(92)}",
                      f"     - ``{row.options}``" if row.options else "     - none"]
        self.env.note_dependency(module.__file__)
        return list(nested_parse_to_nodes(self.state, StringList(lines, source=f"<{module.__name__}.describe()>")))


def setup(app):
    app.add_directive("tgeval-package", PackageAPI)
    app.add_directive("tgeval-registry", RegistryTable)
    return {"parallel_read_safe": True}
