"""Device idioms shared by the hot paths: one explicit host read, and compaction to a known size.

On a GPU, an operator whose output shape depends on the data (``nonzero``, ``unique``,
boolean-mask indexing) makes the host wait for the device, and so does turning a tensor into
a Python number. The hot paths avoid both: where a size is unavoidable they compute every
size they need on the device, read them in one :func:`host_ints` call, and then compact with
:func:`positions`, whose output size is given. :func:`host_ints` is annotated for the
profiler (``tgeval.host_read``) so that benchmarks count these reads with the others.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.profiler import record_function

__all__ = ["host_ints", "positions", "HOST_READ"]

#: profiler range of every :func:`host_ints` call
HOST_READ = "tgeval.host_read"


def host_ints(*values: Tensor) -> list[int]:
    """The integer scalars ``values`` on the host, in one device-to-host copy (one sync)."""
    if not values:
        return []
    with record_function(HOST_READ):
        return torch.stack([value.reshape(()) for value in values]).tolist()


def positions(mask: Tensor, count: int) -> Tensor:
    """Indices of the ``True`` entries of a 1-D ``mask``, ascending, when their number ``count``
    is known on the host: int64 ``[count]``, a fixed-shape ``nonzero``.

    Example:
        >>> positions(torch.tensor([False, True, True, False]), 2)
        tensor([1, 2])
    """
    return torch.nonzero_static(mask, size=count).view(-1)
