"""Temporal Graph Benchmark edge-list CSV files: columns picked by header name; TGB's JODIE datasets
(tgbl-wiki) read as TGB numbers them."""

from __future__ import annotations

import os
from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.io._columns import Roles
from tgeval.data.io._events import Reading, read_file
from tgeval.data.io._exact import first_failure
from tgeval.data.io._headers import looks_like, refuse_other_format
from tgeval.data.io._table import Layout, Table
from tgeval.data.io._reader import documented
from tgeval.data.io._text import PathLike, check_event_file, first_line
from tgeval.data.io.info import ReadInfo
from tgeval.data.io.jodie import JODIE, jodie_roles
from tgeval.errors import DataFormatError

_TGB = Layout(delimiter=",", has_header=True, comments=(), min_cols=3, layout="header such as 'ts,src,dst,w'")

_TGB_ROLES: dict[str, tuple[str, ...]] = {
    "t": ("ts", "timestamp", "time", "t", "day", "date"),
    "src": ("src", "source", "head", "u", "user_id", "sender", "from"),
    "dst": ("dst", "destination", "target", "tail", "i", "item_id", "receiver", "to"),
    "y": ("label", "state_label"),
}


def _tgb_roles(table: Table, time_format: Optional[str]) -> Roles:
    """Roles by header name; every other column numeric on every line of ``table`` is a feature."""
    refuse_other_format(table, "tgb")
    lowered = [h.lower() for h in table.names]
    picked: dict[str, int] = {}
    for role, aliases in _TGB_ROLES.items():
        hits = [j for j, h in enumerate(lowered) if h in aliases]
        if len(hits) > 1 or (not hits and role != "y"):
            found = f"several columns {[table.names[j] for j in hits]}" if hits else "no column"
            raise DataFormatError(
                f"{table.path}, line {table.header_line}: expected exactly one column for "
                f"`{role}` (one of {list(aliases)}), found {found} in header {list(table.names)}. "
                f"Use format='csv' with src_col, dst_col and t_col."
            )
        if hits:
            picked[role] = hits[0]
    everything = table.fields(table.num_cols)
    msg_js = tuple(
        j
        for j in range(table.num_cols)
        if j not in picked.values() and first_failure(everything.column(j), float) < 0
    )
    return Roles(src=picked["src"], dst=picked["dst"], t=picked["t"], msg=msg_js, y=picked.get("y"),
                 time_format=time_format)


@documented(returns="tuple: ``(data, info)``; ``msg`` float32 ``[E, d]`` when ``d > 0`` extra numeric columns "
                    "exist.",
            raises="DataFormatError: a role found in no column or in several, a malformed line, or ``remap`` with a "
                   "file in JODIE's layout.",
            options='time_format: strptime format for textual timestamps (e.g. ``"%Y-%m-%d"``).')
def read_tgb(
    path: PathLike,
    *,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
    time_format: Optional[str] = None,
) -> tuple[TemporalData, ReadInfo]:
    """Read a TGB edge-list CSV, picking columns by header name (case-insensitive).

    Roles and the header names accepted for them:

    * ``t``: ``ts``, ``timestamp``, ``time``, ``t``, ``day``, ``date``;
    * ``src``: ``src``, ``source``, ``head``, ``u``, ``user_id``, ``sender``, ``from``;
    * ``dst``: ``dst``, ``destination``, ``target``, ``tail``, ``i``, ``item_id``,
      ``receiver``, ``to``;
    * ``y`` (optional): ``label``, ``state_label``.

    Every other column that is numeric on every line (e.g. ``w`` / ``weight``,
    ``relation_type``) becomes a ``msg`` column, in file order; textual columns (e.g.
    ``callsign``) are listed in ``info.ignored_columns``. Textual node ids (airport codes)
    need ``remap=True``.

    TGB ships its JODIE datasets (tgbl-wiki) as JODIE's own CSV (header ``user_id,item_id,
    timestamp,state_label,...``); such a file is read as TGB reads it: users keep their ids, items
    are numbered after them (``item_id + max(user_id) + 1``), the state label is ``y`` and the
    features are ``msg``, so ids, keys of TGB's negatives files and TGB's results match.
    """
    check_event_file(path)  # before its first line is read
    if looks_like(first_line(path).split(",")) == "jodie":
        if remap:
            raise DataFormatError(f"{os.fspath(path)}: a TGB file in JODIE's layout is numbered as TGB numbers it "
                                  f"(items after users); remap would renumber it. Drop remap (--remap), or read it "
                                  f"with format='jodie' (--format jodie) to renumber by first appearance.")
        reading = Reading.of("tgb", JODIE, lambda table: jodie_roles(table, items_after_sources=True), remap=False,
                             bipartite=True, sort=sort, directed=directed)
    else:
        reading = Reading.of("tgb", _TGB, lambda table: _tgb_roles(table, time_format), remap=remap,
                             bipartite=bipartite, sort=sort, directed=directed)
    return read_file(path, reading)
