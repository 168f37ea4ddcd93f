r"""Counter-based uniform random numbers: a pure function of (seed, event, draw index).

A sampler that draws from a shared generator stream gives an event negatives that depend on
how many draws the events before it in the same call consumed, so adding, removing or
re-batching other events changes them. Here draw ``j`` of round ``r`` for the event at
replay position ``p`` is

.. math::
    u = \mathrm{mix}\big(\mathrm{mix}(s \oplus \mathrm{mix}(p)) + 2^{32} r + j\big) / 2^{64}

with SplitMix64's finaliser as ``mix`` (int64 arithmetic wraps modulo :math:`2^{64}`), keeping
the top 53 bits. The result does not depend on the batch, the batch size or the device.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["counter_uniform", "splitmix64", "as_int64"]

# SplitMix64 constants as signed int64.
_GOLDEN = 0x9E3779B97F4A7C15 - 2**64
_MUL1 = 0xBF58476D1CE4E5B9 - 2**64
_MUL2 = 0x94D049BB133111EB - 2**64


def as_int64(value: int) -> int:
    """``value`` modulo :math:`2^{64}` as a signed int64 (torch generator seeds reach :math:`2^{64} - 1`)."""
    value = int(value) & (2**64 - 1)
    return value - 2**64 if value >= 2**63 else value


def _shift_right(x: Tensor, k: int) -> Tensor:
    """Logical right shift of int64 values (``>>`` on int64 is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def splitmix64(x: Tensor) -> Tensor:
    """SplitMix64 of int64 ``x`` (elementwise, as two's-complement int64)."""
    x = x + _GOLDEN
    x = (x ^ _shift_right(x, 30)) * _MUL1
    x = (x ^ _shift_right(x, 27)) * _MUL2
    return x ^ _shift_right(x, 31)


def counter_uniform(seed: int, positions: Tensor, round_index: int, width: int) -> Tensor:
    """Uniform ``[0, 1)`` draws: float64 ``[B, width]`` for int64 ``positions`` ``[B]``.

    Entry ``(i, j)`` depends only on ``(seed, positions[i], round_index, j)``.
    """
    key = splitmix64(splitmix64(positions.long()) ^ as_int64(seed))
    columns = torch.arange(width, dtype=torch.long, device=positions.device) + (int(round_index) << 32)
    bits = splitmix64(splitmix64(key)[:, None] + columns[None, :])
    return _shift_right(bits, 11).double() * 2.0**-53
