r"""Temporal Graph Benchmark negatives files: TGB's pickled dicts of evaluation negatives, read without
running code from them, and written (for tests and interop).

A TGB negatives file is a pickled ``dict`` keyed by ``(src, dst, t)`` whose values are the negative
destinations of that positive. A plain ``pickle.load`` runs whatever code the file names, so the files
are read with a restricted unpickler (:func:`load_tgb_pickle`) that admits only what TGB writes: dicts,
tuples, lists, Python scalars, numpy arrays, scalars and dtypes; any other global is refused with a
:class:`~tgeval.errors.NegativesFileError` naming it, before anything runs, and every allocation the file
asks for is charged against its size first.

:func:`read_tgb_rows` gives the rows of the distinct ``(src, dst, t)`` of a stream's events as one int64
matrix, short rows padded, with each row's length; :func:`tgeval.samplers.read_tgb_negatives` serves
them as a sampler (masks, collisions, checksum).
"""

from __future__ import annotations

import codecs
import hashlib
import io
import math
import os
import pickle
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.core.atomic import PathLike, check_input_file, write_atomic
from tgeval.core.chunks import CHUNK_SCORES
from tgeval.errors import MetricInputError, NegativesFileError, SamplerError

try:  # numpy 2 names its internals numpy._core
    from numpy._core import multiarray as _multiarray, numeric as _numeric
except ImportError:  # numpy 1
    from numpy.core import multiarray as _multiarray, numeric as _numeric  # type: ignore[no-redef]

__all__ = ["TGBRows", "read_tgb_rows", "load_tgb_pickle", "write_tgb_negatives", "TGB_PICKLE_GLOBALS"]

#: how a tgeval negatives file (:func:`tgeval.samplers.save_negatives`) starts: named when given as a TGB file
_TGEVAL_NEGATIVES = b"TGEVAL-NEGATIVES "

#: the globals a TGB negatives pickle holds (numpy 1 and 2 module names, pickle protocols 2-5)
TGB_PICKLE_GLOBALS = frozenset(
    [("builtins", name) for name in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "bool",
                                     "str", "bytes", "bytearray")]
    + [(module, name) for module in ("numpy.core.multiarray", "numpy._core.multiarray")
       for name in ("_reconstruct", "scalar")]
    + [("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"), ("numpy", "ndarray"),
       ("numpy", "dtype"), ("_codecs", "encode")])


class _Row:
    """A numpy array of a TGB file before it is built: its bytes ``[start, stop)`` in the reader's buffer
    (not a tuple: a row made of several arrays is no array of numbers, and is refused as such)."""

    __slots__ = ("start", "stop", "dtype", "shape", "order")

    def __init__(self, start: int, stop: int, dtype: np.dtype, shape: tuple, order: str) -> None:
        self.start, self.stop, self.dtype, self.shape, self.order = start, stop, dtype, shape, order

    def __setstate__(self, state: Any) -> None:
        raise _refusal("sets the state of an array it already built")

    def array(self, buffer: bytearray) -> np.ndarray:
        """The array itself, a view of ``buffer``."""
        return np.frombuffer(buffer, self.dtype, count=(self.stop - self.start) // self.dtype.itemsize,
                             offset=self.start).reshape(self.shape, order=self.order)


def _refusal(what: str) -> NegativesFileError:
    """The error of a TGB file that ``what`` (a call or an array no TGB file makes), before it is made."""
    return NegativesFileError(f"the file {what}, which a TGB negatives file never does: refusing to load it, "
                              f"nothing from it was built. Download the file again from TGB.")


class _Allowance:
    """What the calls of the TGB file being unpickled may allocate: its arrays' bytes go to ``rows`` (allocated
    at the file's size beforehand; ``None``: each array a view of the pickle's own buffer), and everything its
    calls build besides (bytes, numbers, containers, arrays) is charged before it is built, at most twice the
    file's size in all: a TGB file's arrays and numbers are made of its own bytes (under protocols 2-4 copied
    twice: decoded, then built)."""

    def __init__(self, size: int, rows: Optional[bytearray]) -> None:
        self.size, self.left, self.rows, self.used = size, 2 * size, rows, 0

    def charge(self, nbytes: int, what: str) -> None:
        if nbytes > self.left:
            raise self.beyond(what)
        self.left -= nbytes

    def beyond(self, what: str) -> NegativesFileError:
        return NegativesFileError(
            f"the file asks for {what}, more than a TGB file of {self.size:,} bytes builds (its arrays and numbers "
            f"are made of its own bytes): refusing to load it, nothing was allocated. Download the file again "
            f"from TGB.")

    def store(self, buffer: Any, dtype: np.dtype, shape: tuple, order: str) -> _Row:
        """Append an array's bytes to ``rows`` (never grown: within the file's size) as a :class:`_Row`."""
        size = len(buffer)
        if self.used + size > len(self.rows):
            raise self.beyond(f"arrays of {self.used + size:,} bytes in all")
        start, self.used = self.used, self.used + size
        self.rows[start:self.used] = buffer
        if type(buffer) is bytearray:
            buffer.clear()
        return _Row(start, self.used, dtype, shape, order)


#: the allowance of the TGB file being unpickled in this context (:meth:`_TGBUnpickler.load`)
_LOADING: ContextVar[_Allowance] = ContextVar("tgeval_tgb_loading")


def _plain_dtype(dtype: Any) -> np.dtype:
    """A fresh copy of ``dtype``, a dtype of numbers or text (what a TGB file's arrays hold): a dtype whose state the
    file set (flags of Python objects, a size) is refused or made anew."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biufcSU":
        raise _refusal(f"builds an array or scalar of dtype {dtype!r} (not numbers or text)")
    return np.dtype(dtype.str)


def _shape(shape: Any) -> tuple:
    if type(shape) is not tuple or not all(type(n) is int and n >= 0 for n in shape):
        raise _refusal(f"gives an array the shape {shape!r}")
    return shape


def _nbytes(shape: tuple, dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def _container(kind: type) -> Callable[..., Any]:
    """``kind`` (dict, list, tuple, set, frozenset) built from a container, its slots charged."""
    def build(*args: Any) -> Any:
        if args:
            if type(args[0]) not in (dict, list, tuple, set, frozenset):
                raise _refusal(f"builds a {kind.__name__} from a {type(args[0]).__name__}")
            _LOADING.get().charge(8 * len(args[0]), f"a {kind.__name__} of {len(args[0]):,} items")
        return kind(*args)
    return build


def _byte_string(kind: type) -> Callable[..., Any]:
    """``kind`` (bytes, bytearray) of a size, text or a sequence, charged its length."""
    def build(*args: Any) -> Any:
        source = args[0] if args else b""
        if type(source) is int:
            size = source
        elif type(source) is str:
            size = 4 * len(source)  # encoded: at most 4 bytes a character
        elif type(source) in (bytes, bytearray, list, tuple):
            size = len(source)
        else:
            raise _refusal(f"builds {kind.__name__} from a {type(source).__name__}")
        _LOADING.get().charge(max(size, 0), f"{kind.__name__} of {size:,} bytes")
        return kind(*args)
    return build


def _text(*args: Any) -> str:
    """``str`` of text, bytes or a number (the text of a container could be of any size)."""
    source = args[0] if args else ""
    if type(source) in (bytes, bytearray):
        _LOADING.get().charge(4 * len(source), f"text of {len(source):,} bytes")
    elif type(source) not in (str, int, float, complex, bool):
        raise _refusal(f"turns a {type(source).__name__} into text")
    return str(*args)


def _encode(text: Any, encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
    """``_codecs.encode`` as pickle uses it: text to latin-1 bytes (how protocol 2 writes bytes)."""
    if type(text) is not str or type(encoding) is not str or codecs.lookup(encoding).name != "iso8859-1":
        raise _refusal(f"encodes a {type(text).__name__} as {encoding!r} (pickle encodes text as latin-1)")
    _LOADING.get().charge(len(text), f"bytes of {len(text):,} characters")
    return codecs.encode(text, encoding, errors)


def _array_class(*args: Any) -> None:
    """Stands for ``numpy.ndarray`` in a TGB file: the class ``_reconstruct`` is given; never called."""
    raise _refusal("calls numpy.ndarray itself (an array of any size, not of the file's bytes)")


class _CheckedArray(np.ndarray):
    """An array of a TGB file pickled under protocols 2-4 (an empty array, then its state): the state is checked
    before numpy reads it (a plain dtype, raw bytes of exactly the array's size, charged)."""

    def __setstate__(self, state: Any) -> None:
        if type(state) is not tuple or len(state) not in (4, 5):
            raise _refusal(f"gives an array the state {type(state).__name__}")
        shape, dtype, fortran, raw = _shape(state[-4]), _plain_dtype(state[-3]), state[-2], state[-1]
        if type(raw) is not bytes or len(raw) != _nbytes(shape, dtype) or type(fortran) not in (bool, int):
            raise _refusal(f"gives an array of shape {shape} and dtype {dtype} {type(raw).__name__} of "
                           f"{len(raw) if type(raw) is bytes else 'no'} bytes, not its {_nbytes(shape, dtype):,}")
        _LOADING.get().charge(len(raw), f"an array of {len(raw):,} bytes")
        super().__setstate__((*state[:-4], shape, dtype, bool(fortran), raw))


def _reconstruct(cls: Any, shape: Any, dtype: Any) -> np.ndarray:
    """numpy's ``_reconstruct``: an empty array, whose state follows (:class:`_CheckedArray`)."""
    if cls is not _array_class:
        raise _refusal(f"builds an array of {type(cls).__name__} {cls!r}, not numpy.ndarray")
    if math.prod(_shape(shape)) != 0:
        raise _refusal(f"asks numpy for an array of shape {shape} before its content (numpy's own pickles start "
                       f"from an empty one)")
    return _multiarray._reconstruct(_CheckedArray, (0,), b"b")


def _scalar(dtype: Any, *data: Any) -> Any:
    """numpy's ``scalar(dtype, bytes)``, of exactly the dtype's bytes."""
    dtype = _plain_dtype(dtype)
    if len(data) != 1 or type(data[0]) is not bytes or len(data[0]) != dtype.itemsize:
        raise _refusal(f"builds a numpy scalar of dtype {dtype} from other than its {dtype.itemsize} bytes")
    _LOADING.get().charge(dtype.itemsize, f"a scalar of {dtype.itemsize:,} bytes")
    return _multiarray.scalar(dtype, data[0])


def _frombuffer(buffer: Any, dtype: Any, shape: Any, order: Any) -> Union[np.ndarray, _Row]:
    """numpy's ``_frombuffer(buffer, dtype, shape, order)`` (protocol 5), its sizes checked: a view of the
    pickle's buffer, or (reading in place) a :class:`_Row` of the allowance's rows."""
    dtype, shape = _plain_dtype(dtype), _shape(shape)
    if type(buffer) not in (bytes, bytearray) or order not in ("C", "F") or len(buffer) != _nbytes(shape, dtype):
        raise _refusal(f"gives an array of shape {shape}, dtype {dtype} and order {order!r} a "
                       f"{type(buffer).__name__} of {len(buffer) if type(buffer) in (bytes, bytearray) else 'no'} "
                       f"bytes")
    allowance = _LOADING.get()
    if allowance.rows is None:
        return _numeric._frombuffer(buffer, dtype, shape, order)
    return allowance.store(buffer, dtype, shape, order)


#: what each global of :data:`TGB_PICKLE_GLOBALS` is in a TGB file: a guard that checks its arguments and charges
#: what it builds (:class:`_Allowance`) before building it; numbers are built as they are
_GUARDS: dict[str, Any] = {
    **{kind.__name__: _container(kind) for kind in (dict, list, tuple, set, frozenset)},
    **{kind.__name__: kind for kind in (int, float, complex, bool)},
    **{kind.__name__: _byte_string(kind) for kind in (bytes, bytearray)},
    "str": _text, "encode": _encode, "dtype": np.dtype, "ndarray": _array_class, "_reconstruct": _reconstruct,
    "scalar": _scalar, "_frombuffer": _frombuffer}


class _TGBUnpickler(pickle.Unpickler):
    """Resolves only :data:`TGB_PICKLE_GLOBALS`, each to its guard (:data:`_GUARDS`); every other global is refused
    before it is looked up. Every allocation a call of the file asks for is charged to the file's
    :class:`_Allowance` before it is made, so a small file cannot ask for gigabytes.

    With ``rows`` (a ``bytearray`` of the file's size), numpy's ``_frombuffer`` (how numpy pickles an array under
    protocol 5) appends the array's bytes to ``rows`` and yields a :class:`_Row` instead of an array (the pickle's
    own buffer is emptied: the unpickler's memo keeps the object, not its bytes), so the rows of a file end up in
    one buffer, in file order, held once."""

    def __init__(self, file: Any, size: int, rows: Optional[bytearray] = None) -> None:
        super().__init__(file)
        self._allowance = _Allowance(size, rows)

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in TGB_PICKLE_GLOBALS:
            raise NegativesFileError(
                f"the file refers to {module}.{name}, which a TGB negatives file never holds (only dicts, tuples, "
                f"lists, Python scalars and numpy arrays, scalars and dtypes): refusing to load it, nothing from it "
                f"ran. Download the file again from TGB.")
        return _GUARDS[name]

    def load(self) -> Any:
        """The unpickled object; ``rows`` is then cut to the bytes it holds."""
        token = _LOADING.set(self._allowance)
        try:
            out = super().load()
        finally:
            _LOADING.reset(token)
        if self._allowance.rows is not None:
            del self._allowance.rows[self._allowance.used:]
        return out


class _Hashing(io.RawIOBase):
    """A binary file read through, every byte read also fed to ``digest`` (sha256 in one pass, no copy held)."""

    def __init__(self, handle: Any) -> None:
        self.handle, self.digest = handle, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.handle.readinto(buffer)
        self.digest.update(memoryview(buffer)[:n])
        return n

    def readline(self, size: Optional[int] = -1) -> bytes:
        line = self.handle.readline(size)
        self.digest.update(line)
        return line


def _load(path: PathLike, in_place: bool) -> tuple[str, Any, Optional[bytearray]]:
    """``("sha256:<hex>", table, rows)`` of a TGB file read once: ``rows`` holds its arrays' bytes when read
    ``in_place`` (:class:`_TGBUnpickler`), else ``None``."""
    check_input_file(path, what="TGB negatives file")
    with open(path, "rb") as handle:
        if handle.read(len(_TGEVAL_NEGATIVES)) == _TGEVAL_NEGATIVES:
            raise NegativesFileError(f"TGB negatives file {str(path)!r} is a tgeval negatives file (written by "
                                     f"save_negatives), not a TGB pickle: read it with fixed:path=FILE "
                                     f"(FixedNegativeSampler.from_file).")
        handle.seek(0)
        size = os.fstat(handle.fileno()).st_size
        rows = bytearray(size) if in_place else None  # the bytes of the file's arrays, held once
        source = _Hashing(handle)
        try:
            table = _TGBUnpickler(source, size, rows).load()
            while source.read(2**20):  # anything after the pickle's STOP is part of the file too
                pass
        except NegativesFileError as exc:
            raise NegativesFileError(f"TGB negatives file {str(path)!r}: {exc}") from None
        except Exception as exc:
            raise NegativesFileError(f"TGB negatives file {str(path)!r} cannot be unpickled "
                                     f"({type(exc).__name__}: {exc}). Download it again.") from exc
    return f"sha256:{source.digest.hexdigest()}", table, rows


def load_tgb_pickle(path: PathLike, *, with_hash: bool = False) -> Any:
    """Unpickle a TGB negatives file without running code from it (see the module docstring);
    with ``with_hash``, ``("sha256:<hex>", table)`` from one read of the file.

    Arrays pickled under protocols 2-4 come back as a private subclass of ``numpy.ndarray``, whose state was
    checked before numpy read it (``np.asarray`` gives the plain array).

    Raises:
        NegativesFileError: a forbidden global (named), an allocation beyond what the file's size allows, or a file
            that cannot be unpickled.
    """
    file_hash, table, _ = _load(path, in_place=False)
    return (file_hash, table) if with_hash else table




@dataclass(frozen=True)
class TGBRows:
    """The rows of a TGB negatives file for the distinct ``(src, dst, t)`` of a stream's events (CPU).

    Attributes:
        src: int64 ``[R]`` source of each row's key.
        dst: int64 ``[R]`` destination of each row's key.
        t: ``[R]`` time of each row's key (dtype of the stream's ``t``).
        neg: int64 ``[R, W]`` negative destinations, ``W`` the longest row; a shorter row padded with a valid
            id (its first negative, else its key's destination).
        lengths: int64 ``[R]`` negatives of each row before padding.
        event_row: int64 ``[E]`` the row of each event (duplicate events share one).
        file_sha256: ``"sha256:<hex>"`` of the file.
    """

    src: Tensor
    dst: Tensor
    t: Tensor
    neg: Tensor
    lengths: Tensor
    event_row: Tensor
    file_sha256: str


def read_tgb_rows(path: PathLike, data: TemporalData, *, short: str = "error") -> TGBRows:
    """The rows of the TGB negatives file ``path`` for the events of ``data`` (validated, on the CPU), read by
    the restricted unpickler (no code from the file runs); the rows are padded in place in the buffer the file's
    arrays were read into when they lie there in event order, as TGB writes them.

    Args:
        path: the pickle file.
        data: the events the negatives are for.
        short: ``"error"`` (rows shorter than the longest are refused) or ``"allow"`` (padded).

    Raises:
        SamplerError: ``short`` other than ``"error"`` or ``"allow"``.
        NegativesFileError: unreadable file, not a dict, non-integer ids, short rows under ``short="error"`` (the
            first named), no negatives at all, or events of ``data`` without a key (how many, and the first).
    """
    if short not in ("error", "allow"):
        raise SamplerError(f"short must be 'error' or 'allow', got {short!r}.")
    file_hash, table, buffer = _load(path, in_place=True)  # neg is a view of the buffer of the file's arrays
    if not isinstance(table, dict):
        raise NegativesFileError(f"TGB negatives file {str(path)!r} holds a {type(table).__name__}, expected a dict "
                                 f"keyed by (src, dst, t).")
    src_l, dst_l, t_l = data.src.tolist(), data.dst.tolist(), data.t.tolist()
    row_of: dict[tuple, int] = {}
    keys: list[tuple] = []
    missing = []
    event_row = []  # each event's row (duplicate events share one)
    for i, key in enumerate(zip(src_l, dst_l, t_l)):
        if key not in row_of:
            if key not in table:
                missing.append(i)
                continue
            row_of[key] = len(keys)
            keys.append(key)
        event_row.append(row_of[key])
    if missing:
        i = missing[0]
        raise NegativesFileError(
            f"{len(missing)} of {data.num_events} events have no negatives in the TGB file {str(path)!r} (first: "
            f"event {i} of the segment, key (src, dst, t) = {(src_l[i], dst_l[i], t_l[i])}). Use the file of this "
            f"split (val / test) and the dataset's original ids and timestamps.")
    values = [table[key] for key in keys]
    del table
    # the rows' lengths, checked before they are padded (a short file of one long row would ask for keys x width)
    lengths = np.fromiter((math.prod(v.shape) if type(v) is _Row else np.size(v) for v in values), dtype=np.int64,
                          count=len(values))
    width = int(lengths.max()) if lengths.size else 0
    if width == 0:
        raise NegativesFileError(f"TGB negatives file {str(path)!r} holds no negatives for these events.")
    short_rows = np.flatnonzero(lengths < width)
    if short_rows.size and short == "error":
        r = int(short_rows[0])
        raise NegativesFileError(
            f"TGB negatives file {str(path)!r} has {short_rows.size} of {len(keys)} rows shorter than its "
            f"{width} negatives per positive (first: key (src, dst, t) = {keys[r]}, {int(lengths[r])} negatives; "
            f"{int((lengths == 0).sum())} rows are empty): scored as K={width}, those events would be ranked "
            f"against fewer negatives. Use a complete file, or pass short='allow' (`tgb:path=...,short=allow`; "
            f"`--preset tgb` reads TGB's files so) to rank each event against its own row (the missing slots are "
            f"masked and counted, the effective K per row is reported, events without negatives are excluded from "
            f"sampled metrics).")
    neg, lengths = _padded_rows(path, keys, values, buffer)
    del values
    return TGBRows(src=torch.tensor([k[0] for k in keys], dtype=torch.long),
                   dst=torch.tensor([k[1] for k in keys], dtype=torch.long),
                   t=data.t.new_tensor([k[2] for k in keys]) if keys else data.t[:0], neg=torch.from_numpy(neg),
                   lengths=torch.from_numpy(lengths), event_row=torch.tensor(event_row, dtype=torch.long),
                   file_sha256=file_hash)


def _padded_rows(path: PathLike, keys: list[tuple], values: list[Any], buffer: bytearray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a TGB file as one int64 ``[R, W]`` matrix (``W`` the longest row; a shorter row
    padded with a valid id: its first negative, else its key's destination) and their lengths
    ``[R]``. Rows that are one-dimensional int64 arrays lying in ``buffer`` one after the other (as
    TGB writes them, the keys in event order) are padded in place there: the matrix is a view of
    ``buffer``, no copy. Other rows are joined and checked at once, converted one by one
    (:func:`_node_ids`, which names the first bad row) only when they are not all integers or whole
    numbers."""
    keys_dst = np.array([key[1] for key in keys], dtype=np.int64)
    if _in_order(values):
        lengths = np.fromiter((v.stop - v.start for v in values), dtype=np.int64, count=len(values)) // 8
        return _pad_in_place(buffer, values[0].start, lengths, keys_dst), lengths
    arrays = [np.asarray(v.array(buffer) if type(v) is _Row else v).reshape(-1) for v in values]
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    kinds = {a.dtype.kind for a in arrays if a.size}  # joined only when one kind of number: no promotion
    flat = np.concatenate(arrays) if arrays and len(kinds) <= 1 else None
    if flat is not None and (kinds <= {"i", "u"} or (kinds == {"f"} and _whole_int64(flat).all())):
        flat = flat.astype(np.int64, copy=False)
    else:
        flat = np.concatenate([_node_ids(path, key, a) for key, a in zip(keys, arrays)] or [np.zeros(0, np.int64)])
    width = int(lengths.max()) if lengths.size else 0
    neg = np.empty((len(values), width), dtype=np.int64)
    first, fill = _fill(flat, lengths, keys_dst)
    rows = max(1, CHUNK_SCORES // max(width, 1))
    for a in range(0, lengths.size, rows):
        b = min(a + rows, lengths.size)
        _place_rows(neg, flat[first[a]:first[b - 1] + lengths[b - 1]], lengths, fill, a, b)
    return neg, lengths


def _fill(flat: np.ndarray, lengths: np.ndarray, keys_dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each row starts in ``flat`` (rows one after the other) and its padding id: its first value, else
    its key's destination."""
    first = np.cumsum(lengths) - lengths
    return first, np.where(lengths > 0, flat[np.minimum(first, max(flat.size - 1, 0))] if flat.size else 0, keys_dst)


def _in_order(values: list[Any]) -> bool:
    """``values`` are one-dimensional int64 :class:`_Row` s stored one after the other."""
    return bool(values) and all(type(v) is _Row and len(v.shape) == 1 and v.dtype == _INT64 for v in values) \
        and all(a.stop == b.start for a, b in zip(values[:-1], values[1:]))


_INT64 = np.dtype(np.int64)


def _pad_in_place(buffer: bytearray, offset: int, lengths: np.ndarray, keys_dst: np.ndarray) -> np.ndarray:
    """The int64 rows of ``lengths`` stored one after the other from byte ``offset`` of ``buffer``, padded to
    the longest in place (``buffer`` grown by the padding when needed): an ``[R, W]`` view of ``buffer``. A
    row moves only forward, so the rows are moved from the last chunk to the first, each chunk copied out
    first."""
    width = int(lengths.max()) if lengths.size else 0
    end = offset + 8 * lengths.size * width
    if len(buffer) < end:
        buffer.extend(bytes(end - len(buffer)))  # at most the padding's bytes
    neg = np.frombuffer(buffer, np.int64, count=lengths.size * width, offset=offset).reshape(lengths.size, width)
    if (lengths == width).all():
        return neg
    flat = neg.reshape(-1)
    first, fill = _fill(flat[:lengths.sum()], lengths, keys_dst)
    rows = max(1, CHUNK_SCORES // max(width, 1))
    for a in reversed(range(0, lengths.size, rows)):
        b = min(a + rows, lengths.size)
        if first[a] == a * width and (lengths[a:b] == width).all():
            continue  # no padding before nor in these rows: already in place
        _place_rows(neg, flat[first[a]:first[b - 1] + lengths[b - 1]].copy(), lengths, fill, a, b)
    return neg


def _place_rows(neg: np.ndarray, values: np.ndarray, lengths: np.ndarray, fill: np.ndarray, a: int, b: int) -> None:
    """Rows ``[a, b)`` of ``neg`` ``[R, W]``: each row's ``lengths[r]`` ``values`` (row after row), then ``fill[r]``."""
    width = neg.shape[1]
    present = np.arange(width)[None, :] < lengths[a:b, None]
    part = neg[a:b]
    if present.all():
        part[...] = values.reshape(b - a, width)
        return
    part[present] = values  # row-major: each row's values fill its first slots
    part[~present] = np.repeat(fill[a:b], width - lengths[a:b])


def _whole_int64(array: np.ndarray) -> np.ndarray:
    """bool: floats that are whole numbers within int64."""
    return (np.floor(array) == array) & (np.abs(array) < 2.0**63)


def _node_ids(path: PathLike, key: tuple, value: Any) -> np.ndarray:
    """int64 ``[n]`` of one TGB row: integers, or floats / Python objects that are whole numbers within int64;
    anything else (text, booleans, fractions, NaN, huge numbers) raises
    :class:`~tgeval.errors.NegativesFileError` naming the key and the value."""
    array = np.asarray(value).reshape(-1)
    if array.dtype.kind in "iu" or not array.size:
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        bad = np.flatnonzero(~_whole_int64(array))
    elif array.dtype.kind == "O":  # Python objects (a pickled list): integers within int64 pass
        bad = [i for i, v in enumerate(array.tolist()) if type(v) is not int or not -2**63 <= v < 2**63]
    else:  # text, bytes, booleans, complex numbers
        bad = [0]
    if not len(bad):
        return array.astype(np.int64)
    first = int(bad[0])
    found = f"{array.tolist()[first]!r} (dtype {array.dtype})"
    raise NegativesFileError(f"TGB negatives file {str(path)!r}: the negatives of key (src, dst, t) = {key} hold "
                             f"{found}, not integer node ids. Write each row as integer ids (an int64 array, as "
                             f"tgeval.samplers.write_tgb_negatives and TGB do), or use the file TGB distributes.")


def write_tgb_negatives(path: PathLike, src: Union[Tensor, Sequence[int]], dst: Union[Tensor, Sequence[int]],
                        t: Union[Tensor, Sequence[Any]], negatives: Sequence[Sequence[int]]) -> None:
    """Write negatives in TGB's format (for tests and interop), atomically.

    A pickled ``dict`` mapping ``(src, dst, t)`` (numpy scalars, as TGB writes them) to an int64
    numpy array of negative destinations; rows may differ in length. A repeated key keeps its
    last row.
    """
    s, d, ts = (np.asarray(x.cpu().numpy() if isinstance(x, Tensor) else x) for x in (src, dst, t))
    if not (len(s) == len(d) == len(ts) == len(negatives)):
        raise MetricInputError(f"src, dst, t and negatives must have one entry per event, got lengths "
                               f"{len(s)}, {len(d)}, {len(ts)}, {len(negatives)}.")
    table = {(a, b, c): np.asarray(row, dtype=np.int64) for a, b, c, row in zip(s, d, ts, negatives)}
    write_atomic(path, pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
