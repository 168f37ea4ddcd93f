"""DGB / DyGLib ``ml_<name>.csv`` files: a header ``,u,i,ts,label,idx``, then one comma-separated event
per line."""

from __future__ import annotations

from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.io._columns import Roles
from tgeval.data.io._events import Reading, read_file
from tgeval.data.io._headers import refuse_other_format
from tgeval.data.io._table import Layout, Table
from tgeval.data.io._reader import documented
from tgeval.data.io._text import PathLike
from tgeval.data.io.info import ReadInfo
from tgeval.errors import DataFormatError

_DGB = Layout(delimiter=",", has_header=True, comments=(), min_cols=3, layout="header ',u,i,ts,label,idx'")


def _dgb_roles(table: Table) -> Roles:
    refuse_other_format(table, "dgb")
    lowered = [h.lower() for h in table.names]
    missing = [name for name in ("u", "i", "ts") if name not in lowered]
    if missing:
        raise DataFormatError(
            f"{table.path}, line {table.header_line}: expected a DGB header with columns "
            f"'u', 'i', 'ts' (e.g. ',u,i,ts,label,idx'), found {','.join(table.names)!r} "
            f"(missing {missing}). Use format='csv' with an explicit column mapping."
        )
    return Roles(src=lowered.index("u"), dst=lowered.index("i"), t=lowered.index("ts"),
                 y=lowered.index("label") if "label" in lowered else None)


@documented(returns="tuple: ``(data, info)``; ``data.y`` int64 ``[E]`` when the file has ``label``.",
            raises="DataFormatError: missing header columns or a malformed line.")
def read_dgb(path: PathLike, *, remap: Optional[bool] = None, bipartite: bool = False, sort: bool = False,
             directed: bool = True) -> tuple[TemporalData, ReadInfo]:
    """Read a DGB / DyGLib ``ml_<name>.csv`` file.

    Layout: a header ``,u,i,ts,label,idx`` (the unnamed first column is a row index),
    then one comma-separated event per line. Columns are picked by header name
    (case-insensitive): ``u`` -> ``src``, ``i`` -> ``dst``, ``ts`` -> ``t``, ``label``
    (optional) -> ``y``; the row index and ``idx`` are ignored. Edge features, which DGB
    keeps in a separate ``.npy`` file, are not read.
    """
    return read_file(path, Reading.of("dgb", _DGB, _dgb_roles, remap=remap, bipartite=bipartite, sort=sort,
                                      directed=directed))
