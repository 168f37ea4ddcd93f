"""Content hashes of event arrays and of negatives (docs/protocol.md §11)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.errors import DataMismatchError

__all__ = ["fingerprint", "tensor_checksum", "NegativesDigest", "BuiltFrom", "recorded_origins", "check_built_for"]


#: how :func:`tensor_checksum`'s digest starts
TENSORS_PREFIX = b"tgeval-tensors-v1;"


def hash_tensor(digest: "hashlib._Hash", value: Tensor, name: Optional[str] = None,
                shape: Optional[tuple] = None) -> None:
    """Feed ``value``'s bytes to ``digest``, after the header ``name:dtype:shape;`` when ``name`` is given
    (``shape``: the whole tensor's when ``value`` is its first rows, else ``value``'s own)."""
    value = value.detach().cpu().contiguous()
    if name is not None:
        digest.update(f"{name}:{value.dtype}:{tuple(value.shape) if shape is None else shape};".encode())
    digest.update(value.numpy())  # contiguous: hashed in place, no copy of the bytes


def tensor_checksum(*tensors: Tensor) -> str:
    """``"sha256:<hex>"`` of the dtypes, shapes and bytes of ``tensors``, in order."""
    digest = hashlib.sha256(TENSORS_PREFIX)
    for i, value in enumerate(tensors):
        hash_tensor(digest, value, str(i))
    return f"sha256:{digest.hexdigest()}"


class NegativesDigest:
    """``negatives_checksum(src, dst, t, neg, neg_src, neg_mask)`` with ``neg`` ``[E, K]`` given in
    consecutive row blocks (:meth:`add`), ``neg_src`` / ``neg_mask`` whole at the end (:meth:`hexdigest`): the
    bytes of ``neg`` are those of its row blocks in order, so the negatives are hashed as they come, never all
    held.

    Example:
        >>> import torch
        >>> from tgeval.samplers.base import negatives_checksum
        >>> src, dst, t = torch.arange(3), torch.arange(3), torch.arange(3)
        >>> neg = torch.arange(6).view(3, 2)
        >>> digest = NegativesDigest(src, dst, t)
        >>> digest.add(neg[:2]); digest.add(neg[2:])
        >>> digest.hexdigest() == negatives_checksum(src, dst, t, neg)
        True
    """

    def __init__(self, src: Tensor, dst: Tensor, t: Tensor) -> None:
        self.num_rows, self.rows = src.numel(), 0
        self._digest = hashlib.sha256(TENSORS_PREFIX)
        for i, value in enumerate((src, dst, t)):
            hash_tensor(self._digest, value, str(i))

    def add(self, neg: Tensor) -> None:
        """The next rows ``[n, K]`` of the negative ids."""
        if self.rows + neg.size(0) > self.num_rows:
            raise ValueError(f"{self.rows + neg.size(0)} rows of negatives for {self.num_rows} events.")
        if self.rows == 0:
            hash_tensor(self._digest, neg[:0], "3", shape=(self.num_rows, *neg.shape[1:]))
        hash_tensor(self._digest, neg)
        self.rows += neg.size(0)

    def hexdigest(self, neg_src: Optional[Tensor] = None, neg_mask: Optional[Tensor] = None) -> str:
        """``"sha256:<hex>"`` once every row was added (the digest itself stays open)."""
        if self.rows != self.num_rows:
            raise ValueError(f"negatives of {self.rows} of {self.num_rows} events were added.")
        digest = self._digest.copy()
        for i, value in enumerate(value for value in (neg_src, neg_mask) if value is not None):
            hash_tensor(digest, value, str(4 + i))
        return f"sha256:{digest.hexdigest()}"


def fingerprint(data: TemporalData) -> str:
    """``"sha256:<hex>"`` of a stream's ``src``, ``dst``, ``t`` and, if present, ``msg``.

    Ids are hashed as int64 and times as int64 (integer input) or float64, the dtypes of
    :func:`~tgeval.data.validate` (so a stream and its validated copy agree). The hash covers
    the event order and the kind of time: the same events in another order, or with integer
    instead of float timestamps, have other fingerprints.
    """
    digest = hashlib.sha256(b"tgeval-events-v1;")
    for key in ("src", "dst", "t", "msg"):
        value = getattr(data, key, None)
        if value is not None:
            value = torch.as_tensor(value)
            if key != "msg" and not value.dtype.is_floating_point:
                value = value.long()
            elif key == "t":
                value = value.double()
            hash_tensor(digest, value, key)
    return f"sha256:{digest.hexdigest()}"


@dataclass(frozen=True)
class BuiltFrom:
    """The events an object (catalog, segment, sampler) was built from: the
    :func:`fingerprint` of the first ``num_events`` events of a stream.

    An object built from a prefix (a training catalog from ``[0, train_end)``, a segment
    from ``[0, end)``) fits every stream that starts with those events, so it can be used on
    a longer or shorter stream that shares the prefix; one built from a whole stream fits
    that stream and its extensions.
    """

    fingerprint: str
    num_events: int

    @classmethod
    def of(cls, data: TemporalData, num_events: Optional[int] = None) -> "BuiltFrom":
        """Of ``data[:num_events]`` (the whole stream by default)."""
        n = data.num_events if num_events is None else int(num_events)
        return cls(fingerprint(data if n == data.num_events else data[:n]), n)

    def to_dict(self) -> dict:
        return {"fingerprint": self.fingerprint, "num_events": self.num_events}


def recorded_origins(record: Any) -> list[BuiltFrom]:
    """Every ``built_from`` in a ``describe()`` record, nested ones included (a mixture's
    components, a sampler's catalog), in order."""
    if isinstance(record, BuiltFrom):
        return [record]
    if isinstance(record, dict):
        own = record.get("built_from")
        found = [BuiltFrom(own["fingerprint"], int(own["num_events"]))] if isinstance(own, dict) else []
        return found + [f for key, value in record.items() if key != "built_from" for f in recorded_origins(value)]
    if isinstance(record, (list, tuple)):
        return [f for value in record for f in recorded_origins(value)]
    return []


def check_built_for(data: TemporalData, *, known: Optional[dict[int, str]] = None, **recorded: Optional[Any]) -> None:
    """Raise :class:`~tgeval.errors.DataMismatchError` unless every object was built from
    events that ``data`` starts with.

    Args:
        data: the stream in use (its prefixes are hashed only when an object recorded one).
        known: fingerprints of prefixes the caller has already hashed, by length (not hashed again).
        recorded: ``name=value`` per object: its :class:`BuiltFrom`, its ``describe()``
            record, or ``None`` (nothing recorded, nothing checked).
    """
    hashes: dict[int, str] = dict(known or {})
    for name, value in recorded.items():
        for origin in recorded_origins(value):
            n = origin.num_events
            if n > data.num_events:
                raise DataMismatchError(
                    f"the {name} was built from a stream of at least {n} events; this one has {data.num_events}. "
                    f"Build the {name} again from this stream (and its split), or use the stream it was built from.")
            if n not in hashes:
                hashes[n] = BuiltFrom.of(data, n).fingerprint
            if hashes[n] != origin.fingerprint:
                raise DataMismatchError(
                    f"the {name} was built from other data: its first {n} events have fingerprint "
                    f"{origin.fingerprint}, this stream's first {n} have {hashes[n]}. Build the {name} again from "
                    f"this stream (and its split), or use the stream it was built from.")
