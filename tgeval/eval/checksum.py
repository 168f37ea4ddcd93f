"""The negatives checksum taken part by part: rows of the negative ids as they come, never all held.

:func:`~tgeval.samplers.base.negatives_checksum` is
``tensor_checksum(src, dst, t, neg[, neg_src][, neg_mask])``: a sha256 over a prefix, then per
tensor a header ``"i:dtype:shape;"`` and its bytes. The bytes of ``neg`` ``[E, K]`` are those of its
row blocks in order, so :class:`NegativesDigest` feeds them block by block and gives the same value.
"""

from __future__ import annotations

import hashlib
from typing import Optional

from torch import Tensor

from tgeval.data.hashing import TENSORS_PREFIX, hash_tensor

__all__ = ["NegativesDigest"]

class NegativesDigest:
    """``negatives_checksum(src, dst, t, neg, neg_src, neg_mask)`` with ``neg`` ``[E, K]`` given in
    consecutive row blocks (:meth:`add`), ``neg_src`` / ``neg_mask`` whole at the end (:meth:`hexdigest`).

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
