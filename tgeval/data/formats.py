"""Event-file formats by name: what :func:`tgeval.data.io.read_events` dispatches on and what the
command line's ``--format`` and ``--option`` offer.

A format is a declarative entry: its name, its reader (``"module:function"``, imported on first
use, so that this module loads without torch) and one line of help::

    register("dgb", "tgeval.data.io:read_dgb", help="DGB ml_*.csv: header ,u,i,ts,label,idx")

Every reader takes the path and the shared keywords ``remap``, ``bipartite``, ``sort`` and
``directed`` (:func:`~tgeval.data.io.read_events`) and returns ``(data, info)``; its other
keywords are the format's options (``--option KEY=VALUE``, typed by the reader's annotations),
read from its signature (:mod:`tgeval.core.registry`). A reader of your own registers the same way.

Example:
    >>> names()
    ('csv', 'dgb', 'jodie', 'snap', 'sociopatterns', 'tgb')
    >>> entry("tgb").options
    ('time_format',)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

from tgeval.core.registry import Entry, Registry, Row

__all__ = ["FormatEntry", "SHARED_KEYWORDS", "register", "names", "entry", "describe"]

#: the reader keywords every format takes (:func:`~tgeval.data.io.read_events` passes them): not options
SHARED_KEYWORDS = ("path", "remap", "bipartite", "sort", "directed")


@dataclass(frozen=True)
class FormatEntry(Entry):
    """A registered event-file format (:class:`~tgeval.core.registry.Entry`: ``name``, ``target``, ``help``;
    ``options`` are its reader's own keywords)."""

    def reader(self) -> Callable[..., Any]:
        """The reader function (imported now when registered as ``"module:function"``)."""
        return self.load()  # type: ignore[no-any-return]


_REGISTRY: Registry[FormatEntry] = Registry("format", ValueError,
                                            unknown="`format` must be one of {choices}, got {name}.")


def register(name: str, reader: Union[str, Callable[..., Any]], *, help: str = "", overwrite: bool = False) -> None:
    """Make ``reader`` (a function, or ``"module:function"``) the reader of format ``name``
    (``ValueError`` if taken, unless ``overwrite``)."""
    _REGISTRY.add(FormatEntry(name, reader, help, SHARED_KEYWORDS), overwrite=overwrite)


def names() -> tuple[str, ...]:
    """Registered format names, sorted."""
    return _REGISTRY.names()


def entry(name: str) -> FormatEntry:
    """The format registered as ``name`` (``ValueError`` listing the names when there is none):
    ``entry(name).reader()`` is its reader, ``entry(name).options`` the names of its options."""
    return _REGISTRY.entry(name)


def describe() -> list[Row]:
    """``(name, help, options)`` of each format, sorted by name: what the docs list."""
    return _REGISTRY.describe()


register("dgb", "tgeval.data.io:read_dgb", help="DGB / DyGLib ml_*.csv: header ,u,i,ts,label,idx")
register("snap", "tgeval.data.io:read_snap", help="SNAP edge list: SRC DST T per line, # or % comments")
register("sociopatterns", "tgeval.data.io:read_sociopatterns", help="SocioPatterns contacts: T I J [class_i class_j]")
register("jodie", "tgeval.data.io:read_jodie",
         help="JODIE csv: user_id,item_id,timestamp,state_label,features...; bipartite by default")
register("tgb", "tgeval.data.io:read_tgb",
         help="Temporal Graph Benchmark csv: roles found by header name (ts, src, dst, ...)")
register("csv", "tgeval.data.io:read_csv_events",
         help="any delimited file with an explicit column mapping (--option src_col=... dst_col=... t_col=...)")
