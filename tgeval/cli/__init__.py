"""The command line, ``tgeval ...``: the parser and entry point (``program``), and each command's module
(``commands``, ``diagnose``, ``static``, ``leaks``). Nothing else in tgeval imports it.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES: dict[str, str] = {"main": "tgeval.cli.program"}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
