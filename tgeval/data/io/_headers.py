"""Which known format a header line belongs to, so that a file read with the wrong format is refused with
the right one named (judged from the header's names, never guessed from the data)."""

from __future__ import annotations

from typing import Optional, Sequence

from tgeval.data.io._table import Table
from tgeval.errors import DataFormatError


def looks_like(header: Optional[Sequence[str]]) -> Optional[str]:
    """The format a header line belongs to, judged from its names (``None``: not recognised)."""
    names = [h.strip().lower() for h in header or ()]
    if {"u", "i", "ts"} <= set(names) and (not names[0] or "idx" in names):
        return "dgb"  # DGB's ",u,i,ts,label,idx": an unnamed row index first, or an idx column
    if names[:3] == ["user_id", "item_id", "timestamp"]:
        return "jodie"
    return None


def refuse_other_format(table: Table, fmt: str) -> None:
    """Raise when the header is that of another known format.

    Raises:
        DataFormatError: the header is another known format's (the message names it).
    """
    other = looks_like(table.header)
    if other is not None and other != fmt:
        raise DataFormatError(f"{table.path}, line {table.header_line}: the header {','.join(table.header or ())!r} "
                              f"is a {other!r} file's, not {fmt!r}: read it with format={other!r} "
                              f"(--format {other}).")
