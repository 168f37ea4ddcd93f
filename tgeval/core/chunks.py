"""Row chunks: the ``[R, K]`` matrices of scores and negatives are worked on in blocks of rows of about
:data:`CHUNK_SCORES` entries, so that no temporary grows with ``R x K``."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["CHUNK_SCORES", "count_true"]

#: most scores compared or binned at once: :func:`~tgeval.eval.metrics.count_above_equal`, AUROC / AP and the
#: passes over negatives work in row chunks of about this many entries
CHUNK_SCORES = 2**20


def count_true(mask: Tensor) -> Tensor:
    """``True`` entries of each row of a bool ``[R, K]`` matrix, int64 ``[R]``, in row chunks of about
    :data:`CHUNK_SCORES` entries (a row reduction over a whole large matrix is several times slower)."""
    rows = max(1, CHUNK_SCORES // max(mask.size(1), 1))
    if mask.size(0) <= rows:
        return torch.count_nonzero(mask, dim=1)
    return torch.cat([torch.count_nonzero(mask[a:a + rows], dim=1) for a in range(0, mask.size(0), rows)])
