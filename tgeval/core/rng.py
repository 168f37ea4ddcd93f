r"""Counter-based random numbers: pure functions of (seed, key, draw index), on any device.

A sampler that draws from a shared generator stream gives an event values that depend on how
many draws the events before it consumed, so adding, removing or re-batching other events
changes them. Every random draw of tgeval that must not depend on the batch (negative samplers,
nested draws of :func:`~tgeval.eval.expected.nested_draw_ranks`, static negatives) is instead
a hash of its coordinates, computed here.

All arithmetic is on int64 tensors read as two's-complement 64-bit words: sums and products
wrap modulo :math:`2^{64}`, and :math:`x \gg k` below is the *logical* right shift. With the
odd constants

.. math::
    \gamma = \mathtt{0x9E3779B97F4A7C15}, \quad m_1 = \mathtt{0xBF58476D1CE4E5B9}, \quad
    m_2 = \mathtt{0x94D049BB133111EB},

* :func:`splitmix64` is SplitMix64's output function (Steele, Lea & Flood 2014; finaliser
  "Mix13" of Stafford): :math:`z = x + \gamma`, :math:`z \leftarrow (z \oplus z \gg 30) m_1`,
  :math:`z \leftarrow (z \oplus z \gg 27) m_2`, :math:`z \oplus z \gg 31`;
* :func:`xorshift_multiply` is another xor-shift-multiply finaliser with the same multipliers
  and shifts 30, 31, 33 and no increment; it keys the nested draws of
  :mod:`tgeval.eval.expected` (a different function from :func:`splitmix64`: their numbers
  are pinned by the reference tests).

Both are bijections of the 64-bit words, so distinct counters never collide.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["GOLDEN_GAMMA", "MIX_MULTIPLIERS", "as_int64", "shift_right", "splitmix64", "xorshift_multiply",
           "to_unit_interval", "counter_uniform", "derived_seed"]

_MASK64 = (1 << 64) - 1


def as_int64(value: int) -> int:
    r"""``value`` modulo :math:`2^{64}` as a signed int64 (torch generator seeds reach :math:`2^{64} - 1`).

    Example:
        >>> as_int64(2**64 - 1), as_int64(-1), as_int64(5)
        (-1, -1, 5)
    """
    value = int(value) & _MASK64
    return value - 2**64 if value >= 2**63 else value


#: :math:`\gamma`, SplitMix64's increment (:math:`2^{64}/\varphi`, odd), as int64: a Weyl step over 64-bit words
GOLDEN_GAMMA = as_int64(0x9E3779B97F4A7C15)
#: SplitMix64's two finalizer multipliers, as int64
MIX_MULTIPLIERS = (as_int64(0xBF58476D1CE4E5B9), as_int64(0x94D049BB133111EB))
_MUL1, _MUL2 = MIX_MULTIPLIERS


def shift_right(x: Tensor, k: int) -> Tensor:
    """Logical right shift by ``k`` bits of int64 ``x`` read as unsigned (``>>`` on int64 is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def splitmix64(x: Tensor) -> Tensor:
    r"""SplitMix64 of int64 ``x``, elementwise (module docstring): :math:`\mathrm{Mix13}(x + \gamma)`.

    Example:
        >>> hex(splitmix64(torch.tensor([0]))[0].item() & (2**64 - 1))  # SplitMix64's first output from state 0
        '0xe220a8397b1dcdaf'
    """
    x = x + GOLDEN_GAMMA
    x = (x ^ shift_right(x, 30)) * _MUL1
    x = (x ^ shift_right(x, 27)) * _MUL2
    return x ^ shift_right(x, 31)


def xorshift_multiply(z: Tensor) -> Tensor:
    r"""The finaliser of the nested draws, elementwise on int64 ``z`` (no increment):
    :math:`z \leftarrow (z \oplus z \gg 30) m_1`, :math:`z \leftarrow (z \oplus z \gg 31) m_2`,
    :math:`z \oplus z \gg 33`.

    Example:
        >>> xorshift_multiply(torch.tensor([0, 1])).tolist()[0]  # 0 is its fixed point
        0
    """
    z = (z ^ shift_right(z, 30)) * _MUL1
    z = (z ^ shift_right(z, 31)) * _MUL2
    return z ^ shift_right(z, 33)


def to_unit_interval(bits: Tensor) -> Tensor:
    r"""The top 53 bits of int64 words as float64 uniforms in :math:`[0, 1)`: :math:`(b \gg 11) / 2^{53}`."""
    return shift_right(bits, 11).double() * 2.0**-53


def counter_uniform(seed: int, positions: Tensor, round_index: int, width: int) -> Tensor:
    r"""Uniform ``[0, 1)`` draws: float64 ``[B, width]`` for int64 ``positions`` ``[B]``.

    Draw ``j`` of round ``r`` for the event at replay position ``p`` is

    .. math::
        u = \mathrm{top}_{53}\big(\mathrm{sm}(\mathrm{sm}(\mathrm{sm}(\mathrm{sm}(p) \oplus s)) + 2^{32} r + j)\big)

    with :math:`\mathrm{sm}` = :func:`splitmix64` and :math:`s` the seed as int64: entry ``(i, j)``
    depends only on ``(seed, positions[i], round_index, j)``, not on the batch, its size or the device.

    Example:
        >>> u = counter_uniform(7, torch.tensor([3, 4]), 0, 5)
        >>> bool(torch.equal(u[1], counter_uniform(7, torch.tensor([4]), 0, 5)[0]))  # batch-independent
        True
    """
    key = splitmix64(splitmix64(positions.long()) ^ as_int64(seed))
    columns = torch.arange(width, dtype=torch.long, device=positions.device) + (int(round_index) << 32)
    return to_unit_interval(splitmix64(splitmix64(key)[:, None] + columns[None, :]))


def derived_seed(seed: int, salt: int) -> int:
    r"""A seed for a sub-stream (a fallback, a mixture component, an epoch):
    :math:`\mathrm{sm}(s \oplus \mathtt{0x2545F491}\,\sigma) \bmod 2^{63}` for seed :math:`s` and salt
    :math:`\sigma` (as int64), a non-negative int that ``torch.Generator.manual_seed`` takes.

    Example:
        >>> derived_seed(0, 1) != derived_seed(0, 2) != derived_seed(1, 1)
        True
    """
    mixed = splitmix64(torch.tensor([as_int64(int(seed) ^ (int(salt) * 0x2545F491))], dtype=torch.long))
    return int(mixed[0]) & ((1 << 63) - 1)
