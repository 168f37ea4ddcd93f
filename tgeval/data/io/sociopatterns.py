"""SocioPatterns contact lists: ``TIME<TAB>i<TAB>j[<TAB>class_i<TAB>class_j]``, no header."""

from __future__ import annotations

from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.io._columns import Roles
from tgeval.data.io._events import Reading, read_file
from tgeval.data.io._table import Layout, Table, column_names
from tgeval.data.io._reader import documented
from tgeval.data.io._text import PathLike
from tgeval.data.io.info import ReadInfo

_SOCIOPATTERNS = Layout(delimiter="\t", has_header=False, comments=(), min_cols=3, layout="TIME i j class_i class_j",
                        names=column_names(("t", "i", "j", "class_i", "class_j"), "extra"))


def _sociopatterns_roles(table: Table) -> Roles:
    return Roles(src=1, dst=2, t=0)


@documented(returns="tuple: ``(data, info)`` with ``src``, ``dst``, ``t`` ``[E]``.",
            raises="DataFormatError: a malformed line.")
def read_sociopatterns(path: PathLike, *, remap: Optional[bool] = None, bipartite: bool = False, sort: bool = False,
                       directed: bool = True) -> tuple[TemporalData, ReadInfo]:
    """Read a SocioPatterns contact list: ``TIME<TAB>i<TAB>j[<TAB>class_i<TAB>class_j]``.

    No header. ``i`` -> ``src``, ``j`` -> ``dst``, ``TIME`` -> ``t``; the class columns
    (node attributes, not event features) are ignored. Contacts are undirected by
    nature: pass ``directed=False`` to record that (the endpoints are kept as written).
    """
    return read_file(path, Reading.of("sociopatterns", _SOCIOPATTERNS, _sociopatterns_roles, remap=remap,
                                      bipartite=bipartite, sort=sort, directed=directed))
