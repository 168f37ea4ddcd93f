"""A delimited file as a table of text fields: the layout a format expects, the lines that hold events
(blank and comment lines counted and skipped, the header split off) and their fields.

Every data line must have as many fields as the header (when it names them) or the first data line;
a line that does not raises :class:`~tgeval.errors.DataFormatError` naming the file, the line and the
fix. The exact path parses the whole file this way, the fast path only its first lines.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Callable, Optional

from tgeval.data.io._text import PathLike, read_text
from tgeval.errors import DataFormatError


@dataclass(frozen=True)
class Layout:
    """How a format lays out its lines: the separator (``None``: runs of whitespace), whether the first
    non-blank, non-comment line is a header, comment prefixes, the fewest columns, the expected fields in
    words for error messages, and ``names(num_cols)`` for formats whose header does not name the fields."""

    delimiter: Optional[str]
    has_header: bool
    comments: tuple[str, ...]
    min_cols: int
    layout: str
    names: Optional[Callable[[int], tuple[str, ...]]] = None


def column_names(known: tuple[str, ...], extra: str) -> Callable[[int], tuple[str, ...]]:
    """A :attr:`Layout.names`: the ``known`` names of the first columns, then ``{extra}0``, ``{extra}1``, ..."""
    return lambda num_cols: known[:num_cols] + tuple(f"{extra}{k}" for k in range(num_cols - len(known)))


@dataclass(frozen=True)
class Table:
    """The data lines of a delimited file, checked to have ``num_cols`` fields each."""

    path: str
    header: Optional[tuple[str, ...]]
    header_line: Optional[int]
    names: tuple[str, ...]
    delimiter: Optional[str]
    quoted: bool
    lines: list[str]
    line_nos: list[int]
    num_lines: int
    comment_lines: int
    blank_lines: int

    @property
    def num_cols(self) -> int:
        return len(self.names)

    def fields(self, width: int) -> Fields:
        """The first ``width`` fields of every line, split once."""
        d = self.delimiter
        if self.quoted:
            rows = csv.reader(self.lines, delimiter=d or ",", strict=True)
            tokens = [field for row in rows for field in row[:width]]
        elif width == self.num_cols:
            tokens = " ".join(self.lines).split() if d is None else d.join(self.lines).split(d)
        else:
            tokens = [field for line in self.lines for field in line.split(d, width)[:width]]
        return Fields(self, tokens, width)


@dataclass(frozen=True)
class Fields:
    """Row-major fields ``[num_rows * width]`` of the first ``width`` columns of a table."""

    table: Table
    tokens: list[str]
    width: int

    def column(self, j: int) -> list[str]:
        return self.tokens[j :: self.width]

    def name(self, j: int) -> str:
        return self.table.names[j]

    def where(self, row: int) -> str:
        return f"{self.table.path}, line {self.table.line_nos[row]}"


def looks_numeric(field: str) -> bool:
    """Whether Python's ``float`` reads ``field``."""
    try:
        float(field)
    except ValueError:
        return False
    return True


def _separator_name(delimiter: Optional[str]) -> str:
    names = {None: "whitespace", "\t": "tab", ",": "comma", ";": "semicolon", " ": "space"}
    return names.get(delimiter, repr(delimiter))


def _field_counts(
    path: str, lines: list[str], line_nos: list[int], delimiter: Optional[str], quoted: bool
) -> list[int]:
    """Number of fields on each line; quoted fields (``"a,b"``) are parsed with :mod:`csv`."""
    if delimiter is None:
        return [len(line.split()) for line in lines]
    if not quoted:
        return [line.count(delimiter) + 1 for line in lines]
    counts: list[int] = []
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    for line, number in zip(lines, line_nos):
        try:
            counts.append(len(next(reader)))
        except csv.Error as exc:
            raise DataFormatError(
                f"{path}, line {number}: expected {_separator_name(delimiter)}-separated fields "
                f"with balanced double quotes, found {line!r} ({exc}). Fix the quoting."
            ) from None
    return counts


def _header_fields(line: str, delimiter: Optional[str]) -> tuple[str, ...]:
    if delimiter is None:
        return tuple(line.split())
    return tuple(field.strip() for field in next(csv.reader([line], delimiter=delimiter)))


def parse_table(path: PathLike, spec: Layout, text: Optional[str] = None) -> Table:
    """Split a file (or ``text``, its first lines) into fields; every data line must have the same number
    of fields.

    The expected count is the header's when there is one and ``spec.names`` is not given,
    else the first data line's.

    Raises:
        DataFormatError: no header or no event line where the layout needs one, a header that is data,
            too few columns, a line with another number of fields, unbalanced quotes, or a file that
            is not UTF-8 (or gzip that does not decompress).
    """
    delimiter, has_header, comments, min_cols, layout, names = (
        spec.delimiter, spec.has_header, spec.comments, spec.min_cols, spec.layout, spec.names)
    name = os.fspath(path)
    lines = (read_text(path) if text is None else text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    data: list[str] = []
    line_nos: list[int] = []
    blank = comment = 0
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            blank += 1
        elif comments and stripped.startswith(comments):
            comment += 1
        else:
            data.append(line)
            line_nos.append(number)

    header: Optional[tuple[str, ...]] = None
    header_line: Optional[int] = None
    if has_header:
        if not data:
            raise DataFormatError(f"{name}: expected a header line ({layout}), found an empty file.")
        header_text = data.pop(0)
        header_line = line_nos.pop(0)
        header = _header_fields(header_text, delimiter)
        if all(looks_numeric(f) for f in header[:min_cols]):
            raise DataFormatError(
                f"{name}, line {header_line}: expected a header line ({layout}), found data "
                f"{header_text!r}. Skipping it would drop an event: add a header or read the "
                f"file as header-less."
            )

    if not data:
        raise DataFormatError(f"{name}: expected at least one event line ({layout}), found none.")
    if header is not None:
        again = next((i for i, line in enumerate(data) if _header_fields(line, delimiter) == header), None)
        if again is not None:
            raise DataFormatError(
                f"{name}, line {line_nos[again]}: repeats the header of line {header_line} ({header_text!r}), as "
                f"where files were joined with their headers (e.g. `cat a.csv b.csv`). Remove that line: a file "
                f"has one header.")
    quoted = delimiter is not None and any('"' in line for line in data)
    counts = _field_counts(name, data, line_nos, delimiter, quoted)
    from_header = header is not None and names is None
    num_cols = len(header) if from_header else counts[0]
    reference = f"line {header_line}, the header" if from_header else f"line {line_nos[0]}"
    sep = _separator_name(delimiter)
    if num_cols < min_cols:
        raise DataFormatError(
            f"{name}, {reference}: expected at least {min_cols} {sep}-separated fields ({layout}), "
            f"found {num_cols}. Check the delimiter and the format."
        )
    bad = next((i for i, c in enumerate(counts) if c != num_cols), None)
    if bad is not None:
        comment = next((data[bad][data[bad].index(p):] for p in (*comments, "#") if p in data[bad].lstrip()[1:]), None)
        fix = ("Fix or remove that line; rows are never skipped silently." if comment is None else
               f"It ends in an inline comment ({comment.strip()!r}), and comments are read only on lines of their own: "
               f"move it to a line of its own, or remove it.")
        raise DataFormatError(
            f"{name}, line {line_nos[bad]}: expected {num_cols} {sep}-separated fields "
            f"({layout}; as on {reference}), found {counts[bad]}: {data[bad]!r}. {fix}"
        )
    if names is not None:
        labels = names(num_cols)
    elif header is not None:
        labels = header
    else:
        labels = tuple(str(j) for j in range(num_cols))
    return Table(
        path=name,
        header=header,
        header_line=header_line,
        names=labels,
        delimiter=delimiter,
        quoted=quoted,
        lines=data,
        line_nos=line_nos,
        num_lines=len(lines),
        comment_lines=comment,
        blank_lines=blank,
    )
