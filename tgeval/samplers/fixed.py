r"""Fixed negatives: draw once, save with checksums, reuse across models (docs/protocol.md §5 ``fixed``, §11, §12).

Two sources of fixed negatives:

* **tgeval files** (:func:`save_negatives` / :func:`load_negatives`): a sampler's draws for
  a segment, made exactly as :func:`tgeval.evaluate` makes them (validated stream, canonical
  replay order ``(t, src, dst)``, timestamp batches, sampler warmed on the history before the
  segment, generator seeded with ``seed``, ``observe`` after each batch under the online
  protocol). Stored as a one-line text prefix holding the sha256 of the rest, then a
  ``torch.save`` payload (read back with ``weights_only=True``): per event its
  index in the input data (file order, ``batch.e_id``), its ``src`` / ``dst`` / ``t``, the
  negatives ``neg`` ``[E, K]`` (and ``neg_src`` / ``neg_mask`` when the sampler returned
  :class:`~tgeval.samplers.base.Negatives`), and a header: format version, the sampler's
  ``describe()``, ``K``, seed, batch size, protocol, the data fingerprint, the segment, the
  negatives checksum (:func:`~tgeval.samplers.base.negatives_checksum`, equal to the
  ``negatives_checksum`` that :func:`~tgeval.evaluate` writes for the same draws) and a content checksum over the
  header and every array. Both are verified on load.
* **Temporal Graph Benchmark files** (:func:`read_tgb_negatives`): a pickled dict keyed by
  ``(src, dst, t)`` whose values are the negative destinations of that positive. Rows of
  unequal length (or empty) are refused unless ``short="allow"`` (TGB's preset reads its files
  so: TGB leaves out simultaneous positives), then padded to the longest row and masked: each event
  is ranked against its own row, padding never counts (counted, the effective ``K`` per row
  reported; an event left without negatives is excluded from sampled metrics); ids outside the
  node range are refused; slots that hold the
  source, the true destination or a simultaneous positive are masked too under
  ``collisions="mask"`` (counted), or kept as in TGB under ``collisions="keep"``.

TGB files are Python pickles, and a plain ``pickle.load`` runs whatever code the file names.
They are read with a restricted unpickler (:func:`load_tgb_pickle`) that admits only what TGB
writes: dicts, tuples, lists, Python scalars, numpy arrays, scalars and dtypes; any other global
is refused with a :class:`~tgeval.errors.NegativesFileError` naming it, before anything runs.
(tgeval's own files are read with ``torch.load(weights_only=True)``.)

:class:`FixedNegativeSampler` serves the stored negatives by event (``batch.e_id``, tgeval
files) or by the ``(src, dst, t)`` key (TGB files; duplicate events share one row). It is
stateless and ignores the generator. A file defines its protocol: the sampler serves every stored
column (``K`` = the file's width) unless fewer are chosen explicitly (``num_negatives=``, or
:meth:`FixedNegativeSampler.first`), which ``describe()`` records; a request for another ``K`` is
refused, never cut.
"""

from __future__ import annotations

import codecs
import copy
import hashlib
import io
import json
import math
import os
import pickle
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.atomic import check_input_file, refused_payload, write_atomic
from tgeval.data.hashing import fingerprint, tensor_checksum
from tgeval.data.groups import canonical_order
from tgeval.data.split import Segment
from tgeval.data.validation import validate
from tgeval.errors import MetricInputError, NegativesFileError, ProtocolError, SamplerError
from tgeval.eval.checksum import NegativesDigest
from tgeval.eval.metrics import CHUNK_SCORES, count_true
from tgeval.samplers.base import (NegativeSampler, Negatives, NegativesCheck, destination_collisions,
                                  negatives_checksum)
from tgeval.walk import Walk

try:  # numpy 2 names its internals numpy._core
    from numpy._core import multiarray as _multiarray, numeric as _numeric
except ImportError:  # numpy 1
    from numpy.core import multiarray as _multiarray, numeric as _numeric  # type: ignore[no-redef]

__all__ = ["StoredNegatives", "FixedNegativeSampler", "draw_negatives", "save_negatives", "load_negatives",
           "read_tgb_negatives", "write_tgb_negatives", "load_tgb_pickle", "TGB_PICKLE_GLOBALS", "FORMAT",
           "FORMAT_VERSION"]

FORMAT = "tgeval-negatives"
FORMAT_VERSION = 2  # 2: the negatives checksum hashes (src, dst, t), not the event index
PathLike = Union[str, "os.PathLike[str]"]
_MAGIC = b"TGEVAL-NEGATIVES v1 sha256="  # then 64 hex digits of the payload, a newline, the torch.save payload
_ARRAYS = ("event", "src", "dst", "t", "neg", "neg_src", "neg_mask")  # content-checksum order


@dataclass(frozen=True)
class StoredNegatives:
    """Fixed negatives, one row per positive event (CPU tensors).

    Attributes:
        src: int64 ``[R]`` source of each row's positive.
        dst: int64 ``[R]`` destination of each row's positive.
        t: ``[R]`` time of each row's positive (dtype of the stream's ``t``).
        neg: int64 ``[R, K]`` negative destinations.
        event: int64 ``[R]`` index of each row's positive in the input data (file order), or
            ``None`` for rows keyed by ``(src, dst, t)`` (TGB files).
        neg_src: int64 ``[R, K]`` sources of the negative pairs, or ``None`` (the positive's source).
        neg_mask: bool ``[R, K]``, ``False`` for padded / masked slots (they hold valid ids and
            are never counted), or ``None`` (every slot counts).
        header: provenance (format, sampler, seed, fingerprint, segment, checksums, counts).
    """

    src: Tensor
    dst: Tensor
    t: Tensor
    neg: Tensor
    event: Optional[Tensor] = None
    neg_src: Optional[Tensor] = None
    neg_mask: Optional[Tensor] = None
    header: dict = field(default_factory=dict)

    @property
    def num_negatives(self) -> int:
        """Stored columns ``K``."""
        return int(self.neg.size(1))

    def arrays(self) -> dict[str, Tensor]:
        """The non-``None`` arrays by name."""
        return {name: value for name in _ARRAYS if (value := getattr(self, name)) is not None}

    def checksum(self) -> str:
        """:func:`~tgeval.samplers.base.negatives_checksum` of the rows (one per event, in
        replay order, for tgeval files)."""
        return negatives_checksum(self.src, self.dst, self.t, self.neg, self.neg_src, self.neg_mask)


def _content_checksum(header: dict, arrays: dict[str, Tensor]) -> str:
    """sha256 over the header (minus ``content_checksum``, canonical JSON) and every array."""
    head = {k: v for k, v in header.items() if k != "content_checksum"}
    digest = hashlib.sha256(b"tgeval-negatives-content-v1;")
    digest.update(json.dumps(head, sort_keys=True, default=repr).encode())
    names = [name for name in _ARRAYS if name in arrays]
    digest.update(";".join(names).encode())
    digest.update(tensor_checksum(*(arrays[name] for name in names)).encode())
    return f"sha256:{digest.hexdigest()}"


# -- drawing and saving --------------------------------------------------------------------
def draw_negatives(sampler: NegativeSampler, data: TemporalData, segment: Segment, num_negatives: int, *,
                   seed: int = 0, batch_size: int = 200,
                   protocol: Literal["online", "fixed"] = "online", num_nodes: Optional[int] = None) -> StoredNegatives:
    """Draw ``sampler``'s negatives for ``segment`` exactly as :func:`tgeval.evaluate` would
    (with the same :class:`~tgeval.protocol.Protocol`: ``warm=True``, the same ``seed``, ``batch_size``, ``replay``).

    The sampler is reset and warmed on ``data[:segment.start]``; its state afterwards is the
    state at the end of the segment.

    Args:
        sampler: any :class:`~tgeval.samplers.base.NegativeSampler`.
        data: the whole time-sorted stream (validated here).
        segment: the evaluated events (whole timestamp groups).
        num_negatives: ``K``.
        seed: seed of the sampler's ``torch.Generator``.
        batch_size: target events per timestamp batch.
        protocol: ``"online"`` (``observe`` after each batch) or ``"fixed"``.
        num_nodes: the id bound of the draws (default: ``data``'s node range, what
            :meth:`FixedNegativeSampler.from_file` checks). Every draw is checked
            (:class:`~tgeval.samplers.base.NegativesCheck`); a sampler's ``collisions`` other than ``"error"`` is
            recorded in the header with the negatives it masked.

    Returns:
        StoredNegatives: rows in replay order, ``event`` = index in ``data``.

    Raises:
        SamplerError: a draw that fails its checks.
    """
    if num_negatives < 1:
        raise ProtocolError(f"num_negatives must be >= 1, got {num_negatives}.")
    if protocol not in ("online", "fixed"):
        raise ProtocolError(f"protocol must be 'online' or 'fixed', got {protocol!r}.")
    data = validate(data)
    input_fingerprint = fingerprint(data)
    walk = Walk(data, segment, batch_size=batch_size, validated=True)  # the walk of tgeval.evaluate
    events = walk.events
    check = NegativesCheck(sampler, int(torch.maximum(data.src.max(), data.dst.max())) + 1 if num_nodes is None
                           else num_nodes)
    with torch.no_grad():
        walk.warm_up(samplers=[sampler])
        generator = torch.Generator(device=data.src.device).manual_seed(seed)
        parts = [check.draw(step.batch, num_negatives, generator)
                 for step in walk.steps(samplers=[sampler], online=protocol == "online")]
    has_src = any(p.src is not None for p in parts)
    has_mask = any(p.mask is not None for p in parts)
    neg = torch.cat([p.dst for p in parts]).cpu() if parts else torch.zeros(0, num_negatives, dtype=torch.long)
    src = events.src.cpu()
    neg_src = (torch.cat([p.src if p.src is not None else b[:, None].expand_as(p.dst)
                          for p, b in zip(parts, events.src.split([p.dst.size(0) for p in parts]))]).cpu()
               if has_src else None)
    neg_mask = (torch.cat([p.mask if p.mask is not None else torch.ones_like(p.dst, dtype=torch.bool)
                           for p in parts]).cpu() if has_mask else None)
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "source": "tgeval",
              "sampler": sampler.describe(), "num_negatives": int(num_negatives), "seed": int(seed),
              "batch_size": int(batch_size), "protocol": protocol, "data_fingerprint": input_fingerprint,
              "num_data_events": data.num_events,
              "segment": segment.to_dict(),
              **({} if check.collisions == "error" else check.record())}  # a tgeval sampler's files stay as they were
    return StoredNegatives(src=src, dst=events.dst.cpu(), t=events.t.cpu(), neg=neg.long(),
                           event=events.e_id.cpu(), neg_src=neg_src, neg_mask=neg_mask, header=header)


def save_negatives(path: PathLike, sampler: NegativeSampler, data: TemporalData, segment: Segment,
                   num_negatives: int, *, seed: int = 0, batch_size: int = 200,
                   protocol: Literal["online", "fixed"] = "online", num_nodes: Optional[int] = None) -> StoredNegatives:
    """Draw ``sampler``'s negatives for ``segment`` (see :func:`draw_negatives`) and write them
    atomically to ``path`` (``torch.save`` format) with their checksums.

    Returns:
        StoredNegatives: what was written (``header`` holds ``checksum`` and ``content_checksum``).
    """
    stored = draw_negatives(sampler, data, segment, num_negatives, seed=seed, batch_size=batch_size,
                            protocol=protocol, num_nodes=num_nodes)
    header = dict(stored.header, checksum=stored.checksum())
    header["content_checksum"] = _content_checksum(header, stored.arrays())
    buffer = io.BytesIO()
    torch.save({"header": header, "arrays": stored.arrays()}, buffer)
    payload = buffer.getvalue()
    write_atomic(path, _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    return replace(stored, header=header)


def _refuse(path: PathLike, why: str) -> NegativesFileError:
    return NegativesFileError(f"negatives file {str(path)!r} {why}. The file is corrupt or was edited: "
                              f"draw it again with `tgeval.samplers.fixed.save_negatives`.")


def load_negatives(path: PathLike, data: Optional[TemporalData] = None) -> StoredNegatives:
    """Read a file written by :func:`save_negatives` and verify it.

    Args:
        path: the file.
        data: the whole stream the negatives are used with (as passed to ``evaluate``); if
            given, its fingerprint must match the one recorded in the file.

    Raises:
        InputPathError: no such file, a folder, or no regular file (a pipe, a device).
        NegativesFileError: unreadable file, wrong format (a TGB pickle is named as such), checksum mismatch, a
            payload that is no pickle of tensors, or (with ``data``) negatives drawn for other data.
    """
    check_input_file(path, what="negatives file")
    blob = Path(path).read_bytes()
    head, digest, payload = blob[: len(_MAGIC)], blob[len(_MAGIC) : len(_MAGIC) + 64], blob[len(_MAGIC) + 65 :]
    if head != _MAGIC and blob[:1] == pickle.PROTO:
        raise NegativesFileError(f"negatives file {str(path)!r} is a Python pickle, as TGB writes its negatives, not "
                                 f"a tgeval negatives file: read it with tgb:path=FILE (read_tgb_negatives).")
    if head != _MAGIC:
        raise _refuse(path, f"does not start with {_MAGIC!r} (not a {FORMAT!r} file, or damaged)")
    if hashlib.sha256(payload).hexdigest().encode() != digest or blob[len(_MAGIC) + 64 : len(_MAGIC) + 65] != b"\n":
        raise _refuse(path, "fails its file checksum (sha256 of the stored bytes)")
    try:
        raw = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:  # torch's safe loader refused it: never suggest loading it unsafely
        raise NegativesFileError(f"negatives file {str(path)!r} {refused_payload(exc, 'a negatives file')}. Check "
                                 f"where the file came from, or draw it again with "
                                 f"`tgeval.samplers.fixed.save_negatives`.") from None
    except Exception as exc:  # zip errors of a damaged file
        raise _refuse(path, f"cannot be read ({type(exc).__name__}: {exc})") from exc
    if not (isinstance(raw, dict) and isinstance(raw.get("header"), dict) and isinstance(raw.get("arrays"), dict)
            and raw["header"].get("format") == FORMAT):
        raise _refuse(path, f"is not a {FORMAT!r} file")
    header, arrays = raw["header"], raw["arrays"]
    if header.get("format_version") != FORMAT_VERSION:
        raise NegativesFileError(f"negatives file {str(path)!r} has format version {header.get('format_version')}, "
                                 f"this tgeval reads version {FORMAT_VERSION}. Draw it again with save_negatives.")
    unknown = set(arrays) - set(_ARRAYS)
    if unknown or not {"event", "src", "dst", "t", "neg"} <= set(arrays) or not all(
            isinstance(v, Tensor) for v in arrays.values()):
        raise _refuse(path, f"holds arrays {sorted(arrays)}, expected {list(_ARRAYS)}")
    content = _content_checksum(header, arrays)
    if content != header.get("content_checksum"):
        raise _refuse(path, f"fails its content checksum (recorded {header.get('content_checksum')}, "
                            f"computed {content})")
    stored = StoredNegatives(**arrays, header=header)
    if stored.checksum() != header.get("checksum"):
        raise _refuse(path, f"fails its negatives checksum (recorded {header.get('checksum')}, "
                            f"computed {stored.checksum()})")
    if data is not None:
        _check_fingerprint(path, header["data_fingerprint"], data)
    return stored


def _check_fingerprint(path: PathLike, recorded: str, data: TemporalData) -> None:
    here = fingerprint(validate(data))
    if here != recorded:
        raise NegativesFileError(
            f"negatives file {str(path)!r} was drawn for other data (fingerprint {recorded}, this data {here}). "
            f"Use the stream it was drawn for, or draw negatives for this one with save_negatives.")


# -- the sampler ---------------------------------------------------------------------------
class FixedNegativeSampler(NegativeSampler):
    """Serves stored negatives (a tgeval file or a TGB file); stateless, ignores the generator.

    Rows with ``event`` (tgeval files) are looked up by ``batch.e_id`` (set by
    :func:`tgeval.evaluate`; the index of each event in the input data) and checked against
    the batch's ``src`` / ``dst`` / ``t``; rows without (TGB files) are looked up by the
    positive's ``(src, dst, t)``.

    Args:
        negatives: what :func:`load_negatives` or :func:`read_tgb_negatives` returned.
        path: where it came from (recorded by :meth:`describe`).
        num_negatives: serve only the first ``K`` stored columns (``None``: all of them, the
            file's protocol).

    Raises:
        SamplerError: ``num_negatives`` outside ``[1, stored columns]``; from :meth:`sample`, a
            request for another ``K`` than the one served.
        NegativesFileError: a positive has no stored negatives, or the stored positive at its
            index differs from the batch's (other data).
    """

    name = "fixed"
    history_free = True  # a lookup per event

    def __init__(self, negatives: StoredNegatives, *, path: Optional[PathLike] = None,
                 num_negatives: Optional[int] = None) -> None:
        self.negatives = negatives
        #: collisions stored as drawn (TGB's, ``collisions="keep"``) are served so; masked ones stay masked
        self.collisions = "keep" if negatives.header.get("collisions") == "keep" else "error"
        #: the ``K`` this sampler serves: the first ``num_negatives`` stored columns
        self.num_negatives = self._served(num_negatives)
        self.path = None if path is None else str(path)
        self._checksum = negatives.header.get("checksum") or negatives.checksum()
        self._row_of_event: Optional[Tensor] = None
        self._effective: dict[int, dict] = {}  # effective_num_negatives() per K served (the stored arrays never change)
        if negatives.event is not None:
            size = int(negatives.event.max()) + 1 if negatives.event.numel() else 0
            table = torch.full((size,), -1, dtype=torch.long)
            table[negatives.event] = torch.arange(negatives.event.numel())
            self._row_of_event = table
        else:  # rows keyed by (src, dst, t): sorted int64 keys (pair rank, time rank) for searchsorted
            self._nodes = torch.unique(torch.cat([negatives.src, negatives.dst]))  # ranks in pair keys: no overflow
            self._pairs, pair_rank = torch.unique(self._pair_key(negatives.src, negatives.dst), return_inverse=True)
            self._times, time_rank = torch.unique(negatives.t, return_inverse=True)
            self._row_keys, self._key_rows = torch.sort(pair_rank * self._times.numel() + time_rank)

    def _pair_key(self, src: Tensor, dst: Tensor) -> Tensor:
        """``rank(src) * n + rank(dst)`` over the stored nodes (``n`` of them): int64, ``-1`` for a pair with an
        unknown node."""
        n = self._nodes.numel()
        ranks = torch.searchsorted(self._nodes, torch.stack([src, dst])).clamp(max=max(n - 1, 0))
        known = (self._nodes[ranks] == torch.stack([src, dst])).all(0) if n else torch.zeros_like(src, dtype=torch.bool)
        return torch.where(known, ranks[0] * n + ranks[1], -1)

    @classmethod
    def from_file(cls, path: PathLike, *, data: Optional[TemporalData] = None, num_negatives: Optional[int] = None,
                  num_nodes: Optional[int] = None) -> "FixedNegativeSampler":
        """:func:`load_negatives` (verified against ``data`` when given), as a sampler of its first
        ``num_negatives`` columns (``None``: all).

        Negative ids (destinations and sources) must lie in ``[0, num_nodes)``, or with ``num_nodes=None`` in
        ``data``'s node range (unchecked without either); else a :class:`NegativesFileError` names the first row."""
        stored = load_negatives(path, data)
        if data is not None or num_nodes is not None:
            ids = stored.neg if stored.neg_src is None else torch.cat([stored.neg, stored.neg_src], 1)
            _check_node_range(path, ids, lambda r: f"event {int(stored.event[r])} (src, dst, t) = "
                              f"({int(stored.src[r])}, {int(stored.dst[r])}, {stored.t[r].tolist()})",
                              data, num_nodes)
        return cls(stored, path=path, num_negatives=num_negatives)

    @property
    def stored_num_negatives(self) -> int:
        """Stored columns: the file's width, the largest ``K`` this sampler can serve."""
        return self.negatives.num_negatives

    def _served(self, num_negatives: Optional[int]) -> int:
        if num_negatives is None:
            return self.stored_num_negatives
        if isinstance(num_negatives, bool) or not 1 <= int(num_negatives) <= self.stored_num_negatives:
            raise SamplerError(f"the fixed negatives hold {self.stored_num_negatives} negatives per positive, so "
                               f"num_negatives must lie in [1, {self.stored_num_negatives}], got {num_negatives!r}.")
        return int(num_negatives)

    def first(self, num_negatives: int) -> "FixedNegativeSampler":
        """The same negatives, serving only their first ``num_negatives`` columns (an explicit
        choice, recorded by :meth:`describe`); the stored tensors are shared."""
        out = copy.copy(self)
        out.num_negatives = self._served(num_negatives)
        return out

    def describe(self) -> dict:
        h = self.negatives.header
        cut = self.num_negatives < self.stored_num_negatives
        out = {"name": self.name, "path": self.path, "checksum": self._checksum,
               "num_negatives": self.num_negatives, "stored_num_negatives": self.stored_num_negatives,
               "source": h.get("source"),
               "keyed_by": "event index (e_id)" if self._row_of_event is not None else "(src, dst, t)",
               "rule": (f"the first {self.num_negatives} of the {self.stored_num_negatives} stored columns, chosen "
                        f"explicitly" if cut else "every stored column") + "; the generator is not used"}
        for key in ("content_checksum", "file_sha256", "data_fingerprint", "events_fingerprint", "sampler", "seed",
                    "segment",
                    "protocol", "batch_size", "num_padded_rows", "num_padded_slots", "num_masked_collisions",
                    "num_masked_sources", "collisions", "short", "num_rows"):
            if key in h:
                out[key] = h[key]
        out["effective_num_negatives"] = self.effective_num_negatives()
        if "data_fingerprint" in h:  # drawn for one whole stream, looked up by event index in it
            out["built_from"] = {"fingerprint": h["data_fingerprint"], "num_events": h["num_data_events"]}
        return out

    def effective_num_negatives(self) -> dict:
        """Unmasked negatives among the served columns, per stored row (one per distinct positive): ``min`` /
        ``median`` / ``mean`` / ``max``, ``num_rows``, ``num_short_rows`` (fewer than ``K``: each is ranked
        against its own negatives) and ``num_rows_without`` any (excluded from sampled metrics)."""
        if self.num_negatives in self._effective:  # a pass over [R, K]: once per K (describe() runs twice a pass)
            return dict(self._effective[self.num_negatives])
        mask = self.negatives.neg_mask
        counts = (count_true(mask[:, : self.num_negatives]) if mask is not None
                  else torch.full((self.negatives.src.numel(),), self.num_negatives))
        out = {"min": 0, "median": 0.0, "mean": 0.0, "max": 0, "num_rows": counts.numel(), "num_short_rows": 0,
               "num_rows_without": 0}
        if counts.numel():
            out.update({"min": int(counts.min()), "median": float(torch.quantile(counts.double(), 0.5)),
                        "mean": float(counts.double().mean()), "max": int(counts.max()),
                        "num_short_rows": int((counts < self.num_negatives).sum()),
                        "num_rows_without": int((counts == 0).sum())})
        self._effective[self.num_negatives] = out
        return dict(out)

    def _rows(self, batch: TemporalData) -> Tensor:
        stored = self.negatives
        if self._row_of_event is not None:
            e_id = getattr(batch, "e_id", None)
            if e_id is None:
                raise NegativesFileError("fixed negatives from a tgeval file are looked up by `batch.e_id` (the index "
                                         "of each event in the input data), which this batch lacks. Replay with "
                                         "`tgeval.evaluate`, or set `data.e_id = torch.arange(data.num_events)` "
                                         "before batching.")
            e_id = e_id.cpu()
            table = self._row_of_event
            inside = (e_id >= 0) & (e_id < table.numel())
            rows = torch.where(inside, table[e_id.clamp(0, max(table.numel() - 1, 0))], torch.full_like(e_id, -1))
            missing = rows < 0
            if bool(missing.any()):
                i = int(torch.nonzero(missing)[0, 0])
                raise NegativesFileError(
                    f"{int(missing.sum())} positives of the batch have no stored negatives "
                    f"(first: event {int(e_id[i])}, "
                    f"src={int(batch.src[i])}, dst={int(batch.dst[i])}, t={batch.t[i].tolist()}). The file covers "
                    f"segment {stored.header.get('segment')}; draw negatives for this segment.")
            same = (stored.src[rows] == batch.src.cpu()) & (stored.dst[rows] == batch.dst.cpu()) & (
                stored.t[rows].double() == batch.t.cpu().double())
            if not bool(same.all()):
                i = int(torch.nonzero(~same)[0, 0])
                r = int(rows[i])
                raise NegativesFileError(
                    f"the negatives were drawn for other data: event {int(e_id[i])} is (src={int(batch.src[i])}, "
                    f"dst={int(batch.dst[i])}, t={batch.t[i].tolist()}) here but (src={int(stored.src[r])}, "
                    f"dst={int(stored.dst[r])}, t={stored.t[r].tolist()}) in the file. Load the file with "
                    f"`load_negatives(path, data)` to check the fingerprint, or draw negatives for this data.")
            return rows
        src, dst, t = batch.src.cpu(), batch.dst.cpu(), batch.t.cpu()
        pair = self._pair_key(src, dst)
        rows = torch.full_like(src, -1)
        if self._row_keys.numel():
            pair_rank = torch.searchsorted(self._pairs, pair).clamp(max=self._pairs.numel() - 1)
            time_rank = torch.searchsorted(self._times, t.to(self._times.dtype)).clamp(max=self._times.numel() - 1)
            key = pair_rank * self._times.numel() + time_rank
            at = torch.searchsorted(self._row_keys, key).clamp(max=self._row_keys.numel() - 1)
            found = ((self._pairs[pair_rank] == pair) & (self._times[time_rank] == t.to(self._times.dtype))
                     & (self._row_keys[at] == key) & (pair >= 0))
            rows = torch.where(found, self._key_rows[at], rows)
        missing = rows < 0
        if bool(missing.any()):
            i = int(torch.nonzero(missing)[0, 0])
            raise NegativesFileError(
                f"{int(missing.sum())} positives of the batch have no stored negatives (first: (src, dst, t) = "
                f"({int(src[i])}, {int(dst[i])}, {t[i].tolist()})). The TGB file does not cover this segment.")
        return rows

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Negatives:
        k = int(num_negatives)
        if k < 0:
            raise ProtocolError(f"num_negatives must be >= 0, got {num_negatives}.")
        if k != self.num_negatives:
            stored = self.stored_num_negatives
            serves = (f"all {stored} stored" if self.num_negatives == stored
                      else f"the first {self.num_negatives} of {stored} stored")
            raise SamplerError(
                f"the fixed negatives serve K={self.num_negatives} per positive ({serves}), but K={k} was requested "
                f"(Protocol.num_negatives). Ask for K={self.num_negatives}, or choose the first {k} explicitly "
                f"(at most {stored}): sampler.first({k}), or num_negatives={k} when loading the file.")
        device = batch.src.device
        rows = self._rows(batch)
        stored = self.negatives
        dst = stored.neg[rows, :k].to(device)
        src = None if stored.neg_src is None else stored.neg_src[rows, :k].to(device)
        mask = None if stored.neg_mask is None else stored.neg_mask[rows, :k].to(device)
        return Negatives(dst, src, mask)


# -- Temporal Graph Benchmark files --------------------------------------------------------
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
        if handle.read(len(_MAGIC)) == _MAGIC:
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


def read_tgb_negatives(path: PathLike, data: TemporalData, *, collisions: Literal["mask", "keep"] = "mask",
                       directed: bool = True, num_negatives: Optional[int] = None, num_nodes: Optional[int] = None,
                       short: str = "error") -> FixedNegativeSampler:
    r"""Read a Temporal Graph Benchmark evaluation negatives file for the events of ``data``.

    The file is a pickled ``dict`` mapping ``(src, dst, t)`` (ints / numpy ints, ``t`` as in
    the data) to the negative destinations of that positive, read by :func:`load_tgb_pickle`
    (no code from the file runs).

    Rows are kept for the distinct ``(src, dst, t)`` of ``data``'s events (duplicate events
    share one row). A row shorter than the longest (or empty) is refused unless
    ``short="allow"`` (as :meth:`TGB.tgb_negatives <tgeval.presets.Preset.tgb_negatives>` and
    ``--preset tgb`` read TGB's files, whose rows are shorter where TGB left out a simultaneous
    positive); then it is padded with a valid id (its first negative, else its destination) and
    masked, so each event is ranked against its own row: ``num_padded_rows`` /
    ``num_padded_slots`` count them, and ``describe()["effective_num_negatives"]`` gives the
    unmasked negatives per row (min / median / mean / max, the rows below ``K``; a row left without
    any is excluded from sampled metrics, never ranked first). Ids outside ``[0, num_nodes)`` are
    refused. With ``collisions="mask"`` slots holding the source, the true destination or a
    simultaneous positive (another destination of the same source at the same ``t``; with
    ``directed=False`` also the sources of events into the source)
    are masked and counted as ``num_masked_collisions`` (padding is counted apart); TGB's own
    random negatives leave out the source's positives at ``t`` but not the source itself, so the
    sources among them are masked by default and counted as ``num_masked_sources``. ``"keep"``
    scores every slot as TGB does.

    Args:
        path: the pickle file.
        data: the evaluated events (e.g. the test segment), validated here.
        collisions: ``"mask"`` or ``"keep"``.
        directed: pair definition for simultaneous positives.
        num_negatives: serve only the first ``K`` columns (``None``: every column, the file's protocol).
        num_nodes: negative ids must lie in ``[0, num_nodes)`` (the dataset's node count; ``None``:
            ``max(data.src, data.dst) + 1``, the node range of ``data``).
        short: ``"error"`` (rows shorter than the longest are refused) or ``"allow"`` (padded and masked).

    Returns:
        FixedNegativeSampler: keyed by ``(src, dst, t)``, with masks; ``describe()`` reports
        the file's sha256, the negatives checksum and the counts.

    Raises:
        NegativesFileError: unreadable file, not a dict, non-integer ids, ids outside
            ``[0, num_nodes)`` or short rows under ``short="error"`` (the first bad row named), or
            events of ``data`` without a key (how many, and the first).
    """
    if collisions not in ("mask", "keep"):
        raise SamplerError(f"collisions must be 'mask' or 'keep', got {collisions!r}.")
    if short not in ("error", "allow"):
        raise SamplerError(f"short must be 'error' or 'allow', got {short!r}.")
    data = validate(data).cpu()  # the key table is built on the CPU
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
    neg_t = torch.from_numpy(neg)
    bound = _check_node_range(path, neg_t, lambda r: f"key (src, dst, t) = {keys[r]}", data, num_nodes)
    mask = torch.arange(width)[None, :] < torch.from_numpy(lengths)[:, None]
    src = torch.tensor([k[0] for k in keys], dtype=torch.long)
    dst = torch.tensor([k[1] for k in keys], dtype=torch.long)
    t = data.t.new_tensor([k[2] for k in keys]) if keys else data.t[:0]
    num_collisions = num_sources = 0
    if collisions == "mask":
        hit = destination_collisions(src, dst, t, neg_t, data, directed) & mask
        num_collisions = int(torch.count_nonzero(hit))
        # TGB's random negatives may hold the source
        num_sources = int(torch.count_nonzero(hit & (neg_t == src[:, None]))) if num_collisions else 0
        mask &= ~hit
    header = {"format": "tgb", "source": "tgb", "file_sha256": file_hash, "num_rows": len(keys),
              "num_padded_rows": int((lengths < width).sum()), "num_padded_slots": int((width - lengths).sum()),
              "collisions": collisions, "num_masked_collisions": num_collisions, "num_masked_sources": num_sources,
              "short": short, "num_nodes": bound,
              "events_fingerprint": fingerprint(data)}  # of the events the file was matched to
    # the checksum of the negatives a replay of these events scores (all columns), one row per event
    order = canonical_order(data.src, data.dst, data.t)
    scored = torch.tensor(event_row, dtype=torch.long)[order]
    digest = NegativesDigest(data.src[order], data.dst[order], data.t[order])
    rows = max(1, CHUNK_SCORES // max(width, 1))
    for a in range(0, scored.numel(), rows):  # the rows gathered chunk by chunk: no second [E, K] copy
        digest.add(neg_t[scored[a:a + rows]])
    header["checksum"] = digest.hexdigest(None, mask[scored])
    stored = StoredNegatives(src=src, dst=dst, t=t, neg=neg_t, neg_mask=mask, header=header)
    return FixedNegativeSampler(stored, path=path, num_negatives=num_negatives)


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


def _check_node_range(path: PathLike, neg: Tensor, row: Callable[[int], str], data: Optional[TemporalData],
                      num_nodes: Optional[int]) -> int:
    """The id bound (``num_nodes``, else ``data``'s node range ``max(src, dst) + 1``); a
    :class:`NegativesFileError` naming the first row of ``neg`` (int64 ``[R, K]``; ``row(r)`` describes row
    ``r``) with an id outside ``[0, bound)``."""
    if num_nodes is None:
        bound, where = (int(torch.maximum(data.src.max(), data.dst.max())) + 1 if data.num_events else 0), "data's"
    else:
        bound, where = int(num_nodes), "given"
    top = min(bound, 2**63) - 1  # the bound itself may not fit in int64
    rows = max(1, CHUNK_SCORES // max(neg.size(1), 1))  # row chunks: no [R, K] temporaries
    bad = torch.cat([((part < 0) | (part > top)).any(1) for part in neg.split(rows)]) if neg.numel() \
        else torch.zeros(neg.size(0), dtype=torch.bool)
    if bool(bad.any()):
        r = int(torch.nonzero(bad)[0, 0])
        outside = (neg[r] < 0) | (neg[r] > top)
        raise NegativesFileError(
            f"negatives file {str(path)!r} holds node ids outside the {where} node range [0, {bound}) in "
            f"{int(bad.sum())} rows (first: {row(r)}, id {int(neg[r][outside][0])}): a model cannot score them. "
            f"Use the file of this dataset with its original ids"
            + (", or pass num_nodes= the dataset's node count if the file's ids are nodes outside this data."
               if num_nodes is None else "."))
    return bound


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
