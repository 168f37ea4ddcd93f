"""The documentation every reader shares: the path and the keywords ``remap``, ``bipartite``, ``sort`` and
``directed`` described once (:func:`documented`). Each reader still spells out its signature, which the format
registry reads from the source (:mod:`tgeval.core.registry`) to list the options without importing torch."""

from __future__ import annotations

import inspect
import textwrap
from typing import Any, Callable, TypeVar

Reader = TypeVar("Reader", bound=Callable[..., Any])

#: the Args lines of the path and the keywords every reader takes
_SHARED_ARGS = """\
path: the file (plain or gzip).
remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``).
bipartite: keep sources and destinations in disjoint id ranges.
sort: stable-sort unsorted events instead of raising.
directed: recorded in ``info.directed``."""
_UNSORTED = "TemporalDataError: unsorted events with ``sort=False``."


def documented(*, returns: str, raises: str, options: str = "") -> Callable[[Reader], Reader]:
    """Decorator of a reader: its docstring (what it reads and how) followed by ``Args`` (the shared keywords,
    then ``options``, the format's own), ``Returns`` and ``Raises`` (``raises``, then unsorted events)."""
    def section(title: str, *parts: str) -> str:
        return f"{title}:\n" + "\n".join(textwrap.indent(inspect.cleandoc(part), "    ") for part in parts if part)

    def complete(reader: Reader) -> Reader:
        reader.__doc__ = "\n\n".join([inspect.cleandoc(reader.__doc__ or ""), section("Args", _SHARED_ARGS, options),
                                      section("Returns", returns), section("Raises", raises, _UNSORTED)])
        return reader
    return complete
