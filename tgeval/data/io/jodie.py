"""JODIE CSV files: ``user_id,item_id,timestamp,state_label,f_1,...,f_d``, users and items numbered
separately from 0 (TGB ships its JODIE datasets in this layout too, :mod:`tgeval.data.io.tgb`)."""

from __future__ import annotations

from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.io._columns import Roles
from tgeval.data.io._events import Reading, read_file
from tgeval.data.io._headers import refuse_other_format
from tgeval.data.io._table import Layout, Table, column_names
from tgeval.data.io._reader import documented
from tgeval.data.io._text import PathLike
from tgeval.data.io.info import ReadInfo

#: a JODIE CSV: its header names the feature list as one column
JODIE = Layout(delimiter=",", has_header=True, comments=(), min_cols=4,
               layout="user_id,item_id,timestamp,state_label,features...",
               names=column_names(("user_id", "item_id", "timestamp", "state_label"), "f"))


def jodie_roles(table: Table, *, items_after_sources: bool = False) -> Roles:
    """JODIE's columns: user, item, time, state label, then the features; ``items_after_sources`` as TGB
    numbers them (:class:`~tgeval.data.io._columns.Roles`)."""
    return Roles(src=0, dst=1, t=2, msg=tuple(range(4, table.num_cols)), y=3, items_after_sources=items_after_sources)


def _checked_jodie_roles(table: Table) -> Roles:
    refuse_other_format(table, "jodie")
    return jodie_roles(table)


@documented(returns="tuple: ``(data, info)``; ``info.header`` holds the header as written, the feature columns are "
                    "named ``f0 .. f{d-1}`` in ``info.msg_columns``.",
            raises="DataFormatError: a malformed line, a first line that is data, not a header, or another known "
                   "format's header.")
def read_jodie(path: PathLike, *, remap: Optional[bool] = None, bipartite: bool = True, sort: bool = False,
               directed: bool = True) -> tuple[TemporalData, ReadInfo]:
    """Read a JODIE CSV: ``user_id,item_id,timestamp,state_label,f_1,...,f_d``.

    One header line (skipped; its text varies between releases and it names the
    feature list as a single column), then comma-separated events with the same number
    of fields as the first event line (at least 4). Features -> ``msg`` float32
    ``[E, d]`` (omitted when ``d = 0``), ``state_label`` -> ``y`` int64 ``[E]``.

    JODIE numbers users and items separately from 0, so the default
    ``bipartite=True`` (with remap) places users in ``[0, n_users)`` and items in
    ``[n_users, n_users + n_items)``.
    """
    return read_file(path, Reading.of("jodie", JODIE, _checked_jodie_roles, remap=remap, bipartite=bipartite,
                                      sort=sort, directed=directed))
