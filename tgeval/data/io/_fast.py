"""The fast path: a well-formed numeric file parsed block by block in C straight into the final dtypes (int64 ids,
times and labels, float32 features): by pandas' C reader (:func:`pandas.read_csv`) where pandas is installed and the
block is delimited, else by numpy's (:func:`numpy.loadtxt`).

The file is streamed in blocks of whole lines (:func:`tgeval.data.io._text.blocks`), so peak memory is
about twice the final arrays. The path takes printable ASCII data, no quotes, whole-line comments and
numbers that the C parsers and Python read alike, and raises :class:`~tgeval.data.io._columns._Doubt` at the first
doubt (textual ids or times, whitespace-only lines in delimited files, fractional times longer than
:data:`_SHORT_DECIMAL` characters, ...): the exact path then reads the file.

pandas (an optional accelerator, :func:`_with_pandas`) reads a delimited block whose lines all hold the same number
of fields and no whitespace; its float parser is correctly rounded, as Python's ``float`` (fast_float from pandas
3.1, ``float_precision="round_trip"`` before), and only columns it reads as int64 or float64 are taken. numpy reads
the other blocks, and whitespace-separated files (SNAP), where it is as fast: plain decimals (at most 15 digits, no
exponent) as integers divided by their power of ten (:func:`decimals`), exactly as Python's ``float``, other
fractions through its slower correctly rounded parser.
"""

from __future__ import annotations

import csv
import re
import warnings
from io import BytesIO, StringIO
from typing import Any, Optional

import numpy as np

from tgeval.data.io._columns import MAX_EXACT_FLOAT_INT, Columns, _Doubt, Roles, non_whole
from tgeval.data.io._table import Layout, Table
from tgeval.data.io._text import PathLike, blocks

#: bytes data lines may hold on the fast path: printable ASCII but the double quote (quoted fields), tab, LF
_DATA_BYTES = bytes(range(0x20, 0x7F)).replace(b'"', b"") + b"\t\n"
_NOT_INT = re.compile(r"to int64 at row \d+, column (\d+)\.$")
#: decimals of at most this many characters (so at most DBL_DIG significant digits) in float64's normal range
#: parse to distinct floats: no two distinct times of such a file merge
_SHORT_DECIMAL = 15
_POWERS_OF_TEN = 10.0 ** np.arange(23)  # exact in float64


def _pandas() -> Optional[Any]:
    """The pandas module when it is installed (an optional accelerator), else ``None``."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _correctly_rounded(pandas: Any) -> dict[str, str]:
    """The :func:`pandas.read_csv` options whose float parser is correctly rounded, as Python's ``float``: pandas 3.1
    parses every float with fast_float (and deprecates ``float_precision``), earlier versions need ``"round_trip"``
    (Python's own parser)."""
    major, minor = (int(part) for part in re.findall(r"\d+", pandas.__version__)[:2])
    return {} if (major, minor) >= (3, 1) else {"float_precision": "round_trip"}


def _without_line(block: bytes, number: int) -> bytes:
    """``block`` without its line ``number`` (1-based)."""
    start = 0
    for _ in range(number - 1):
        start = block.index(b"\n", start) + 1
    end = block.find(b"\n", start)
    return block[:start] + (block[end + 1:] if end >= 0 else b"")


def _loadtxt(text: str, dtype: np.dtype, delimiter: Optional[str], **options: object) -> np.ndarray:
    """:func:`numpy.loadtxt` of ASCII ``text`` with no comments nor quotes, ``[rows]`` even for one line; a
    warning of numpy's (e.g. an empty block) is raised as an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return np.loadtxt(StringIO(text), dtype=dtype, delimiter=delimiter, comments=None, quotechar=None, ndmin=1,
                          **options)


def _records(kinds: list[str]) -> np.dtype:
    return np.dtype([(f"c{j}", kind) for j, kind in enumerate(kinds)])


def _load(block: bytes, kinds: list[str], delimiter: Optional[str]) -> np.ndarray:
    """Records ``[rows]`` of a block, field ``c{j}`` of kind ``kinds[j]`` per column (numpy's C parser checks
    every line has ``len(kinds)`` fields); an int64 column holding another number turns float64 (in
    ``kinds``, for the blocks that follow)."""
    text = block.decode("ascii")
    while True:
        try:
            return _loadtxt(text, _records(kinds), delimiter)
        except ValueError as exc:
            found = _NOT_INT.search(str(exc))
            if found is None or kinds[int(found[1]) - 1] != "i8":
                raise _Doubt from None
            kinds[int(found[1]) - 1] = "f8"
        except Warning:
            raise _Doubt from None


def _uniform_rows(block: bytes, width: int, delimiter: Optional[str]) -> Optional[int]:
    """The lines of a delimited block when each holds ``width`` fields and no whitespace (no blank line), else
    ``None``: the block less the bytes of numbers, compared in C with ``width - 1`` delimiters and a line end
    per line.

    Raises:
        _Doubt: a byte on data lines outside :data:`_DATA_BYTES`.
    """
    if delimiter is None:
        if block.translate(None, _DATA_BYTES):
            raise _Doubt
        return None
    separators = (delimiter + " \t\n").encode("ascii")
    skeleton = block.translate(None, _DATA_BYTES.translate(None, separators))
    if not block.endswith(b"\n"):
        skeleton += b"\n"
    line = delimiter.encode("ascii") * (width - 1) + b"\n"
    if skeleton == line * (len(skeleton) // len(line)):
        return len(skeleton) // len(line)
    if skeleton.translate(None, separators):
        raise _Doubt
    return None


def _field_ends(block: bytes, width: int, delimiter: str) -> np.ndarray:
    """int64 ``[rows, width]``: the offset of the byte that ends each field (its delimiter or line end,
    ``len(block)`` for a last line without one) of a block of :func:`_uniform_rows`."""
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero((data == ord(delimiter)) | (data == 10))
    if not block.endswith(b"\n"):
        ends = np.append(ends, data.size)
    return ends.reshape(-1, width)


def _field_lengths(ends: np.ndarray, j: int) -> np.ndarray:
    """Characters of field ``j`` of every row of :func:`_field_ends`."""
    starts = ends[:, j - 1] + 1 if j else np.concatenate(([0], ends[:-1, -1] + 1))
    return ends[:, j] - starts


def _with_pandas(pandas: Any, block: bytes, kinds: list[str], delimiter: str,
                 rows: int) -> Optional[dict[int, np.ndarray]]:
    """Columns ``{j: values}`` (int64 or float64) of the columns of a delimited block that ``kinds`` reads, parsed by
    pandas' C reader; ``None`` where it cannot say (the caller then uses numpy's). ``rows``: :func:`_uniform_rows`.

    pandas infers each column's type (a float64 ``dtype`` would read ``True`` as 1.0, which Python's ``float``
    refuses); only int64 and float64 columns are taken (booleans, text and integers beyond int64 are left to numpy's
    parser, and to the exact path). An int64 column holding fractions turns float64 (in
    ``kinds``, for the blocks that follow), as in :func:`_load`; a float64 column read as integers is cast, unless a
    ``-0`` may be among them (Python's ``float`` reads -0.0).
    """
    used = [j for j, kind in enumerate(kinds) if kind != "S1"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            frame = pandas.read_csv(BytesIO(block), sep=delimiter, header=None,
                                    usecols=used, engine="c", quoting=csv.QUOTE_NONE, na_filter=False,
                                    low_memory=False, **_correctly_rounded(pandas))
    except (ValueError, TypeError, OverflowError, Warning):
        return None
    if len(frame) != rows:
        return None
    out = {j: frame[j].to_numpy() for j in used}
    del frame
    if any(values.dtype not in (np.int64, np.float64) for values in out.values()):
        return None
    for j in used:
        if kinds[j] == "f8" and out[j].dtype == np.int64:
            if b"-0" in block and np.count_nonzero(out[j] == 0):
                return None
            out[j] = out[j].astype(np.float64)
    for j in used:
        if out[j].dtype == np.float64:
            kinds[j] = "f8"
    return out


def decimals(block: bytes, kinds: list[str], delimiter: Optional[str],
             rows: Optional[np.ndarray]) -> Optional[dict[int, np.ndarray]]:
    """Columns ``{j: values}`` of a delimited block whose float64 columns hold plain decimals (``-12.375``, ``5``:
    no exponent, at most 15 digits, no spaces), or ``None`` where it cannot say (the caller then uses :func:`_load`).
    ``rows``: the block's :func:`_field_ends`, ``None`` when its lines are not :func:`_uniform_rows`. An int64
    column with a point turns float64 (in ``kinds``, for the blocks that follow).

    numpy parses integers far faster than fractions: the points are deleted, every column is read as int64
    ``m`` and a fraction with ``k`` digits after its point is ``m / 10^k``; ``|m| < 10^15`` and ``k <= 22`` make
    both exact in float64, so the division is correctly rounded, as Python's ``float`` (Clinger's fast path),
    and no two distinct such decimals give one float (at most 15 significant digits).
    """
    if rows is None or b"." not in block:
        return None
    width, ends = len(kinds), rows.reshape(-1)
    data = np.frombuffer(block, dtype=np.uint8)
    points = np.flatnonzero(data == ord("."))
    field = np.searchsorted(ends, points)  # the field of every point
    pointed = np.flatnonzero(np.bincount(field % width, minlength=width)).tolist()
    if np.count_nonzero(np.diff(field) == 0) or any(kinds[j] == "S1" for j in pointed):
        return None
    for j in pointed:  # an int64 column holding fractions turns float64, as in _load
        kinds[j] = "f8"
    floats = [j for j, kind in enumerate(kinds) if kind == "f8"]
    digits = ends[field] - points - 1
    if digits.max(initial=0) > 22:
        return None
    try:
        records = _loadtxt(block.translate(None, b".").decode("ascii"),
                           _records(["i8" if kind == "f8" else kind for kind in kinds]), delimiter)
    except (ValueError, Warning):
        return None
    scale = np.ones(ends.size)
    scale[field] = _POWERS_OF_TEN[digits]
    scale = scale.reshape(-1, width)
    signed = np.zeros(ends.size, dtype=bool)
    signed[np.searchsorted(ends, np.flatnonzero(data == ord("-")))] = True
    signed = signed.reshape(-1, width)
    out = {j: records[f"c{j}"] for j in range(width)}
    for j in floats:
        whole = out[j]
        if np.count_nonzero(np.abs(whole) >= 10**15):
            return None
        out[j] = whole / scale[:, j]
        out[j][signed[:, j] & (whole == 0)] = -0.0  # "-0.00" is -0.0 for Python's float
    return out


def _without_comments(block: bytes, prefixes: tuple[bytes, ...], comment_line: re.Pattern) -> tuple[bytes, int]:
    """``block`` without the lines ``comment_line`` matches (whole-line comments), and their number; the pattern
    runs only over the lines from the first to the last that holds a prefix (often a few at the file's top)."""
    found = [(block.find(prefix), block.rfind(prefix)) for prefix in prefixes if prefix in block]
    start = block.rfind(b"\n", 0, min(first for first, _ in found)) + 1
    end = block.find(b"\n", max(last for _, last in found)) + 1 or len(block)
    middle, removed = comment_line.subn(b"", block[start:end])
    return block[:start] + middle + block[end:], removed


def _whole_ints(values: np.ndarray) -> np.ndarray:
    """int64 of an int64 or float64 block column; float64 must be whole and exact (as the exact path)."""
    if values.dtype == np.int64:
        return values.copy()
    if not np.isfinite(values).all() or non_whole(values).size:
        raise _Doubt
    return values.astype(np.int64)


def _block_columns(block: bytes, kinds: list[str], delimiter: Optional[str], t: int, uniform: Optional[int],
                   pandas: Optional[Any]) -> tuple[dict[int, np.ndarray], str]:
    """Columns ``{j: values}`` of a block (``kinds`` as :func:`_load`; ``uniform``: :func:`_uniform_rows`) and the
    parser that read them: pandas' C reader where it can say (:func:`_with_pandas`), else numpy's.

    Raises:
        _Doubt: values numpy's parser does not read, or fractional times longer than :data:`_SHORT_DECIMAL`.
    """
    records = None if pandas is None or uniform is None else _with_pandas(pandas, block, kinds, delimiter, uniform)
    if records is not None:
        longest = 0 if kinds[t] == "i8" else int(_field_lengths(_field_ends(block, len(kinds), delimiter), t).max())
        parser = "pandas"
    else:
        ends = None if uniform is None else _field_ends(block, len(kinds), delimiter)
        records, longest, parser = decimals(block, kinds, delimiter, ends), 0, "numpy"  # decimals of <= 15 digits
        if records is None:
            loaded = _load(block, kinds, delimiter)
            records = {j: loaded[f"c{j}"] for j in range(len(kinds))}
            if kinds[t] == "f8":  # the lengths of the times' texts tell
                texts = np.loadtxt(StringIO(block.decode("ascii")), dtype=f"S{_SHORT_DECIMAL + 1}", usecols=t,
                                   delimiter=delimiter, comments=None, quotechar=None, ndmin=1)
                longest = int(np.char.str_len(texts).max())
    if longest > _SHORT_DECIMAL:
        raise _Doubt
    return records, parser


def fast_columns(path: PathLike, spec: Layout, head: Table, roles: Roles) -> Columns:
    """The columns of a well-formed numeric file, parsed block by block in C straight into their final dtypes.

    Raises:
        _Doubt: where the exact path might read the file differently: quoted fields, other bytes than
            :data:`_DATA_BYTES` on data lines, a comment prefix inside a line, textual times, values the C
            parsers do not parse or that are not finite, integer columns that mix in other numbers beyond 2^53,
            fractional times longer than :data:`_SHORT_DECIMAL` characters or outside float64's normal range.
        UnicodeDecodeError, OSError, EOFError, zlib.error: comments that are not UTF-8, a file that cannot
            be read or a gzip file that does not decompress (the exact path names the problem).
    """
    ints = roles.integers
    if head.quoted or roles.time_format is not None or len(roles.used) < len(ints) + len(roles.msg):
        raise _Doubt
    kinds = ["S1"] * head.num_cols
    for j in ints:
        kinds[j] = "i8"
    for j in roles.msg:
        kinds[j] = "f8"
    prefixes = tuple(prefix.encode("utf-8") for prefix in spec.comments)
    comment_line = re.compile(rb"^[ \t]*(?:" + b"|".join(map(re.escape, prefixes)) + rb")[^\n]*\n?", re.M)
    parts: dict[str, list[np.ndarray]] = {"src": [], "dst": [], "t": [], "y": [], "msg": []}
    pandas, parsers = _pandas(), set()
    num_lines = comment_lines = rows = 0
    last = b""
    for number, block in enumerate(blocks(path)):
        num_lines += int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == 10))  # faster than bytes.count
        last = block
        if number == 0 and head.header_line is not None:
            block = _without_line(block, head.header_line)
        if prefixes and any(prefix in block for prefix in prefixes):
            block.decode("utf-8")  # comments too must be UTF-8
            block, removed = _without_comments(block, prefixes, comment_line)
            comment_lines += removed
            if any(prefix in block for prefix in prefixes):
                raise _Doubt
        uniform = _uniform_rows(block, len(kinds), spec.delimiter)
        if not block or block.isspace():
            continue
        records, parser = _block_columns(block, kinds, spec.delimiter, roles.t, uniform, pandas)
        parsers.add(parser)
        rows += records[roles.src].size
        parts["src"].append(_whole_ints(records[roles.src]))
        parts["dst"].append(_whole_ints(records[roles.dst]))
        if roles.y is not None:
            parts["y"].append(_whole_ints(records[roles.y]))
        parts["t"].append(records[roles.t].copy())
        if roles.msg:
            msg = np.stack([records[j] for j in roles.msg], axis=1)
            with np.errstate(over="ignore"):
                parts["msg"].append(msg.astype(np.float32))
            if not np.isfinite(parts["msg"][-1]).all():  # also a value beyond float32's range
                raise _Doubt
        del records
    if not rows:
        raise _Doubt
    ints_with_floats = [j for j in ints if kinds[j] == "f8"]
    columns = {key: np.concatenate(parts.pop(key)) for key in list(parts) if parts[key]}  # each part freed at once
    if any(np.abs(columns[role]).max() >= MAX_EXACT_FLOAT_INT for role, j in
           (("src", roles.src), ("dst", roles.dst), ("t", roles.t), ("y", roles.y)) if j in ints_with_floats):
        raise _Doubt  # the exact path reads such a column as float64: large values would lose digits
    t = columns["t"]
    if t.dtype == np.float64:
        tiny = np.abs(t) < np.finfo(np.float64).tiny
        if not np.isfinite(t).all() or (tiny & (t != 0)).any():
            raise _Doubt
        if not non_whole(t).size:
            t = t.astype(np.int64)
    num_lines += bool(last) and not last.endswith(b"\n")
    return Columns(
        src=columns["src"], dst=columns["dst"], t=t, merged_times=0, msg=columns.get("msg"), y=columns.get("y"),
        num_lines=num_lines, comment_lines=comment_lines,
        blank_lines=num_lines - comment_lines - rows - (head.header_line is not None), line_nos=None,
        parser="numpy" if "numpy" in parsers else "pandas")
