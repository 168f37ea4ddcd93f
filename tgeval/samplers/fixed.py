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

TGB files are Python pickles, read by :mod:`tgeval.data.io.tgb_negatives` with a restricted unpickler
that runs no code from the file (:func:`~tgeval.data.io.tgb_negatives.load_tgb_pickle`), and written by
:func:`~tgeval.data.io.tgb_negatives.write_tgb_negatives`. (tgeval's own files are read with
``torch.load(weights_only=True)``.)

:class:`FixedNegativeSampler` serves the stored negatives by event (``batch.e_id``, tgeval
files) or by the ``(src, dst, t)`` key (TGB files; duplicate events share one row). It is
stateless and ignores the generator. A file defines its protocol: the sampler serves every stored
column (``K`` = the file's width) unless fewer are chosen explicitly (``num_negatives=``, or
:meth:`FixedNegativeSampler.first`), which ``describe()`` records; a request for another ``K`` is
refused, never cut.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import pickle
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Literal, Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.core.atomic import PathLike, check_input_file, refused_payload, write_atomic
from tgeval.core.chunks import CHUNK_SCORES, count_true
from tgeval.data.hashing import NegativesDigest, fingerprint, tensor_checksum
from tgeval.data.groups import canonical_order
from tgeval.data.io.tgb_negatives import read_tgb_rows
from tgeval.data.split import Segment, check_whole_groups
from tgeval.data.validation import validate
from tgeval.errors import NegativesFileError, ProtocolError, SamplerError
from tgeval.samplers.base import (NegativeSampler, Negatives, NegativesCheck, destination_collisions,
                                  negatives_checksum)
from tgeval.stream.walk import Walk

__all__ = ["StoredNegatives", "FixedNegativeSampler", "draw_negatives", "save_negatives", "load_negatives",
           "read_tgb_negatives", "FORMAT", "FORMAT_VERSION"]

FORMAT = "tgeval-negatives"
FORMAT_VERSION = 2  # 2: the negatives checksum hashes (src, dst, t), not the event index
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
    (with the same :class:`~tgeval.eval.protocol.Protocol`: ``warm=True``, the same ``seed``, ``batch_size``,
    ``replay``).

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
    check_whole_groups(data.t, segment.start, segment.end, what=f"{segment.name!r} segment")
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
def read_tgb_negatives(path: PathLike, data: TemporalData, *, collisions: Literal["mask", "keep"] = "mask",
                       directed: bool = True, num_negatives: Optional[int] = None, num_nodes: Optional[int] = None,
                       short: str = "error") -> FixedNegativeSampler:
    r"""Read a Temporal Graph Benchmark evaluation negatives file for the events of ``data``.

    The file is a pickled ``dict`` mapping ``(src, dst, t)`` (ints / numpy ints, ``t`` as in
    the data) to the negative destinations of that positive, read by
    :func:`~tgeval.data.io.tgb_negatives.read_tgb_rows` (no code from the file runs).

    Rows are kept for the distinct ``(src, dst, t)`` of ``data``'s events (duplicate events
    share one row). A row shorter than the longest (or empty) is refused unless
    ``short="allow"`` (as :meth:`TGB.tgb_negatives <tgeval.eval.presets.Preset.tgb_negatives>` and
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
    data = validate(data).cpu()  # the key table is built on the CPU
    rows = read_tgb_rows(path, data, short=short)
    src, dst, t, neg_t, lengths = rows.src, rows.dst, rows.t, rows.neg, rows.lengths
    width = neg_t.size(1)
    bound = _check_node_range(path, neg_t, lambda r: f"key (src, dst, t) = {(int(src[r]), int(dst[r]), t[r].item())}",
                              data, num_nodes)
    mask = torch.arange(width)[None, :] < lengths[:, None]
    num_collisions = num_sources = 0
    if collisions == "mask":
        hit = destination_collisions(src, dst, t, neg_t, data, directed) & mask
        num_collisions = int(torch.count_nonzero(hit))
        # TGB's random negatives may hold the source
        num_sources = int(torch.count_nonzero(hit & (neg_t == src[:, None]))) if num_collisions else 0
        mask &= ~hit
    header = {"format": "tgb", "source": "tgb", "file_sha256": rows.file_sha256, "num_rows": src.numel(),
              "num_padded_rows": int((lengths < width).sum()), "num_padded_slots": int((width - lengths).sum()),
              "collisions": collisions, "num_masked_collisions": num_collisions, "num_masked_sources": num_sources,
              "short": short, "num_nodes": bound,
              "events_fingerprint": fingerprint(data)}  # of the events the file was matched to
    # the checksum of the negatives a replay of these events scores (all columns), one row per event
    order = canonical_order(data.src, data.dst, data.t)
    scored = rows.event_row[order]
    digest = NegativesDigest(data.src[order], data.dst[order], data.t[order])
    chunk = max(1, CHUNK_SCORES // max(width, 1))
    for a in range(0, scored.numel(), chunk):  # the rows gathered chunk by chunk: no second [E, K] copy
        digest.add(neg_t[scored[a:a + chunk]])
    header["checksum"] = digest.hexdigest(None, mask[scored])
    stored = StoredNegatives(src=src, dst=dst, t=t, neg=neg_t, neg_mask=mask, header=header)
    return FixedNegativeSampler(stored, path=path, num_negatives=num_negatives)


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


