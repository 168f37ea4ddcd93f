"""Event-file formats by name: what :func:`tgeval.data.io.read_events` dispatches on and what the
command line's ``--format`` and ``--option`` offer.

A format is a declarative entry: its name, its reader (``"module:function"``, imported on first
use, so that this module loads without torch), the reader's own options (``--option KEY=VALUE``,
typed by the reader's annotations) and one line of help::

    register("dgb", "tgeval.data.io:read_dgb", help="DGB ml_*.csv: header ,u,i,ts,label,idx")

Every reader takes the shared keywords ``remap``, ``bipartite``, ``sort`` and ``directed``
(:func:`~tgeval.data.io.read_events`) and returns ``(data, info)``; a reader of your own
registers the same way (``register("myformat", my_reader, options=("sheet",))``).

Example:
    >>> names()
    ('csv', 'dgb', 'jodie', 'snap', 'sociopatterns', 'tgb')
    >>> entry("tgb").options
    ('time_format',)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Union

__all__ = ["FormatEntry", "register", "names", "entry"]


@dataclass(frozen=True)
class FormatEntry:
    """A registered event-file format.

    Attributes:
        name: the ``format`` of :func:`~tgeval.data.io.read_events` and ``--format``.
        target: the reader, or ``"module:function"`` (see :meth:`reader`).
        options: the reader's own keywords (``--option KEY=VALUE``).
        help: one line for the command line.
    """

    name: str
    target: Union[str, Callable[..., Any]]
    options: tuple[str, ...]
    help: str

    def reader(self) -> Callable[..., Any]:
        """The reader function (imported now when registered as ``"module:function"``)."""
        if not isinstance(self.target, str):
            return self.target
        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)


_REGISTRY: dict[str, FormatEntry] = {}


def register(name: str, reader: Union[str, Callable[..., Any]], *, options: tuple[str, ...] = (), help: str = "",
             overwrite: bool = False) -> None:
    """Make ``reader`` the reader of format ``name`` (``ValueError`` if taken, unless ``overwrite``)."""
    if not overwrite and name in _REGISTRY:
        raise ValueError(f"a format named {name!r} is already registered; pass overwrite=True to replace it.")
    _REGISTRY[name] = FormatEntry(name, reader, tuple(options), help)


def names() -> tuple[str, ...]:
    """Registered format names, sorted."""
    return tuple(sorted(_REGISTRY))


def entry(name: str) -> FormatEntry:
    """The format registered as ``name`` (``ValueError`` listing the names when there is none)."""
    if name not in _REGISTRY:
        raise ValueError(f"`format` must be one of {list(names())}, got {name!r}.")
    return _REGISTRY[name]


register("dgb", "tgeval.data.io:read_dgb", help="DGB / DyGLib ml_*.csv: header ,u,i,ts,label,idx")
register("snap", "tgeval.data.io:read_snap", help="SNAP edge list: SRC DST T per line, # or % comments")
register("sociopatterns", "tgeval.data.io:read_sociopatterns", help="SocioPatterns contacts: T I J [class_i class_j]")
register("jodie", "tgeval.data.io:read_jodie",
         help="JODIE csv: user_id,item_id,timestamp,state_label,features...; bipartite by default")
register("tgb", "tgeval.data.io:read_tgb", options=("time_format",),
         help="Temporal Graph Benchmark csv: roles found by header name (ts, src, dst, ...)")
register("csv", "tgeval.data.io:read_csv_events",
         options=("src_col", "dst_col", "t_col", "feature_cols", "label_col", "delimiter", "has_header", "comment",
                  "time_format"),
         help="any delimited file with an explicit column mapping (--option src_col=... dst_col=... t_col=...)")
