"""Package attributes imported on first use (PEP 562), so that importing a package loads
neither torch nor PyG until a name that needs them is read.

Example (a package's ``__init__.py``)::

    __getattr__, __dir__ = lazy_exports(__name__, {"TGN": "tgeval.models.tgn"})
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Callable

__all__ = ["lazy_exports"]


def lazy_exports(package: str, sources: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: a name of ``sources`` (public name ->
    module defining it) is imported from its module when first read and kept in the package's
    namespace; any other name that is a submodule (``package.name``) is imported; the rest raise
    ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            if importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(sources[name]), name)
        setattr(sys.modules[package], name, value)  # later reads are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *sources})

    return __getattr__, __dir__
