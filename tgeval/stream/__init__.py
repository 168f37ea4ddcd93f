"""A stream on its way through time: batches of whole timestamp groups (``loader``), model state, its
snapshots and guards (``state``), and the walk every pass of tgeval takes (``walk``). Imports :mod:`tgeval.data`
and :mod:`tgeval.core` only.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES: dict[str, str] = {
    "TimestampBatchLoader": "tgeval.stream.loader",
    **dict.fromkeys(("Stateful", "no_state_change"), "tgeval.stream.state"),
    **dict.fromkeys(("Step", "Walk"), "tgeval.stream.walk"),
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
