"""Any delimited event file, read with an explicit column mapping (the ``"csv"`` format)."""

from __future__ import annotations

from typing import Optional, Sequence

from torch_geometric.data import TemporalData

from tgeval.data.io._columns import Column, Roles
from tgeval.data.io._events import Reading, read_file
from tgeval.data.io._exact import resolve
from tgeval.data.io._table import Layout, Table
from tgeval.data.io._text import PathLike
from tgeval.data.io.info import ReadInfo


def read_csv_events(
    path: PathLike,
    *,
    src_col: Column,
    dst_col: Column,
    t_col: Column,
    feature_cols: Sequence[Column] = (),
    label_col: Optional[Column] = None,
    delimiter: Optional[str] = ",",
    has_header: bool = True,
    comment: Optional[str] = None,
    time_format: Optional[str] = None,
    remap: Optional[bool] = None,
    bipartite: bool = False,
    sort: bool = False,
    directed: bool = True,
) -> tuple[TemporalData, ReadInfo]:
    """Read any delimited event file with an explicit column mapping.

    Columns are header names (case-insensitive; needs ``has_header=True``) or 0-based
    indices (negative indices count from the end). Fields may be quoted (``"a,b"``).

    Args:
        path: the file (plain or gzip).
        src_col: column of source ids.
        dst_col: column of destination ids.
        t_col: column of timestamps: numbers, or text parsed with ``time_format``.
        feature_cols: numeric columns stacked, in this order, into ``msg`` float32
            ``[E, len(feature_cols)]``.
        label_col: integer column stored as ``y`` int64 ``[E]``.
        delimiter: one-character field separator; ``None`` splits on runs of
            whitespace.
        has_header: whether the first non-blank line names the columns.
        comment: prefix of comment lines to skip (e.g. ``"#"``); ``None`` for none.
        time_format: strptime format for textual timestamps, e.g.
            ``"%m/%d/%y %I:%M %p"`` for ``4/15/04 2:56 PM``. Times without a zone are
            read as UTC; the result is Unix seconds, int64 when whole.
        remap: renumber ids to ``0..n-1`` (default: only when ``bipartite``); needed
            for textual ids.
        bipartite: keep sources and destinations in disjoint id ranges.
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed``.

    Returns:
        tuple: ``(data, info)``.

    Raises:
        TypeError: a column given as neither str nor int.
        ValueError: a ``delimiter`` of more than one character.
        DataFormatError: a column name or index that the file does not have, a malformed line or an
            unparsable value.
        TemporalDataError: unsorted events with ``sort=False``.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "msgs.csv"
        >>> _ = p.write_text("Source,Target,Timestamp\\n1,2,4/15/04 2:56 PM\\n")
        >>> data, info = read_csv_events(p, src_col="Source", dst_col="Target",
        ...     t_col="Timestamp", time_format="%m/%d/%y %I:%M %p")
        >>> data.t
        tensor([1082040960])
    """
    if delimiter is not None and len(delimiter) != 1:
        raise ValueError(
            f"`delimiter` must be one character or None (runs of whitespace), got {delimiter!r}."
        )
    spec = Layout(delimiter=delimiter, has_header=has_header, comments=(comment,) if comment else (), min_cols=1,
                  layout="columns " + ", ".join(repr(c) for c in (src_col, dst_col, t_col)))

    def roles(table: Table) -> Roles:
        return Roles(
            src=resolve(table, src_col, "src_col"),
            dst=resolve(table, dst_col, "dst_col"),
            t=resolve(table, t_col, "t_col"),
            msg=tuple(resolve(table, c, "feature_cols") for c in feature_cols),
            y=resolve(table, label_col, "label_col") if label_col is not None else None,
            time_format=time_format,
        )

    return read_file(path, Reading.of("csv", spec, roles, remap=remap, bipartite=bipartite, sort=sort,
                                      directed=directed))
