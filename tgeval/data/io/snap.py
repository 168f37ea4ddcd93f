"""SNAP temporal edge lists: ``SRC DST TIME`` per line, separated by whitespace, ``#`` / ``%`` comments."""

from __future__ import annotations

from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.io._columns import Roles
from tgeval.data.io._events import Reading, read_file
from tgeval.data.io._table import Layout, Table, column_names, looks_numeric
from tgeval.data.io._reader import documented
from tgeval.data.io._text import PathLike
from tgeval.data.io.info import ReadInfo
from tgeval.errors import DataFormatError

_SNAP = Layout(delimiter=None, has_header=False, comments=("#", "%"), min_cols=3, layout="SRC DST TIME",
               names=column_names(("src", "dst", "t"), "extra"))


def _snap_roles(table: Table) -> Roles:
    if table.num_cols == 5 and table.lines:  # SocioPatterns' layout: TIME i j class_i class_j, classes as text
        first = table.lines[0].split()
        if not looks_numeric(first[3]) and not looks_numeric(first[4]):
            raise DataFormatError(
                f"{table.path}, line {table.line_nos[0]}: 5 fields with text in the last two ({first[3]!r}, "
                f"{first[4]!r}) are a 'sociopatterns' file's (TIME i j class_i class_j), not 'snap' (SRC DST TIME): "
                f"read it with format='sociopatterns' (--format sociopatterns).")
    return Roles(src=0, dst=1, t=2)


@documented(returns="tuple: ``(data, info)`` with ``src``, ``dst``, ``t`` ``[E]``.",
            raises="DataFormatError: a malformed line, or a SocioPatterns file (the message names that format).")
def read_snap(path: PathLike, *, remap: Optional[bool] = None, bipartite: bool = False, sort: bool = False,
              directed: bool = True) -> tuple[TemporalData, ReadInfo]:
    """Read a SNAP temporal edge list: ``SRC DST TIME`` separated by whitespace.

    No header; lines starting with ``#`` or ``%`` are comments. Every line must have the
    same number of fields (at least 3); fields after the third are ignored (listed in
    ``info.ignored_columns``). Also reads ``ml_wikipedia.txt`` (``u i ts``).
    """
    return read_file(path, Reading.of("snap", _SNAP, _snap_roles, remap=remap, bipartite=bipartite, sort=sort,
                                      directed=directed))
