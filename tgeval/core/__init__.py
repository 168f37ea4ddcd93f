"""The bottom layer: what every other layer may use, importing nothing of tgeval but :mod:`tgeval.errors`.

Atomic file writes and path checks (``atomic``), the named choices of every option (``choices``), chunk sizes
(``chunks``), the one door to PyG's and torch's private names (``compat``), devices (``device``),
``torch.distributed`` helpers (``distributed``), lazy exports (``lazy``), option parsing (``options``),
progress reporting (``progress``), provenance (``provenance``), registries (``registry``) and counter-based
random numbers (``rng``).
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES: dict[str, str] = {}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
