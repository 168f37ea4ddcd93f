r"""Uncertainty and order agreement for model comparisons (docs/protocol.md §7).

* :func:`kendall_tau` — Kendall's :math:`\tau_b` (ties corrected), equal to the statistic of
  ``scipy.stats.kendalltau``.
* :func:`seed_paired_t_interval` — paired t interval for the difference of two models across
  training seeds (seed ``i`` of model A paired with seed ``i`` of model B).
* :func:`block_bootstrap_difference` — time-block paired bootstrap for the difference of two
  models on one test segment: per-event values (chronological order) are cut into consecutive
  blocks, and whole blocks are resampled *jointly* for both models, which keeps both the
  pairing and the short-range temporal dependence.

All functions are pure (no global RNG: the bootstrap uses its own seeded generator) and
return Python floats or a :class:`DifferenceInterval`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as _sps

from tgeval.errors import MetricInputError, ProtocolError

__all__ = ["DifferenceInterval", "kendall_tau", "seed_paired_t_interval", "block_bootstrap_difference",
           "min_resamples"]


@dataclass(frozen=True)
class DifferenceInterval:
    """A point estimate of ``mean(A - B)`` with a two-sided confidence interval.

    Attributes:
        estimate (float): observed mean difference ``A - B``.
        low (float): lower interval end.
        high (float): upper interval end.
        confidence (float): nominal coverage, e.g. ``0.95``.
        n (int): number of pairs (seeds, or events for the bootstrap).
        method (str): ``"seed_paired_t"`` or ``"block_bootstrap"``.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n: int
    method: str


def _as_1d_float(name: str, x: Any) -> np.ndarray:
    try:
        import torch

        if isinstance(x, torch.Tensor):
            x = x.detach().to("cpu", torch.float64).numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise MetricInputError(f"`{name}` must be 1-D, but has shape {arr.shape}.")
    return arr


def _check_confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise ProtocolError(f"`confidence` must be a number in (0, 1), but got {confidence!r}.")
    return float(confidence)


def _check_pair(a: Any, b: Any, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = _as_1d_float(name_a, a), _as_1d_float(name_b, b)
    if x.size != y.size:
        raise MetricInputError(f"`{name_a}` and `{name_b}` must be paired (same length), but have {x.size} and "
                               f"{y.size}.")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise MetricInputError(f"`{name_a}` and `{name_b}` must be finite; drop or impute NaN / inf values first.")
    return x, y


def kendall_tau(x: Any, y: Any) -> float:
    r"""Kendall's :math:`\tau_b` between two paired score vectors.

    .. math::
        \tau_b = \frac{\sum_{i<j} \operatorname{sgn}(x_i - x_j)\operatorname{sgn}(y_i - y_j)}
                      {\sqrt{(n_0 - n_x)(n_0 - n_y)}},\quad n_0 = \tbinom{n}{2},\;
        n_x = \sum_g \tbinom{u_g}{2},\; n_y = \sum_g \tbinom{v_g}{2}

    with :math:`u_g`, :math:`v_g` the sizes of tied groups in ``x`` and ``y``. Equals
    ``scipy.stats.kendalltau(x, y).statistic``; NaN when ``n < 2`` or one side is constant.
    Exact integer counting, :math:`O(n^2)` time in row chunks (meant for model lists and
    moderate ``n``).

    Args:
        x (array-like or Tensor): float ``[n]``.
        y (array-like or Tensor): float ``[n]``.

    Returns:
        float: :math:`\tau_b \in [-1, 1]` or NaN.

    Raises:
        MetricInputError: if the inputs are not 1-D of equal length or contain NaN.

    Example:
        >>> kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])
        0.6666666666666666
    """
    xa, ya = _check_pair(x, y, "x", "y")
    n = xa.size
    if n < 2:
        return math.nan
    s = 0
    chunk = max(1, (1 << 22) // n)
    for i in range(0, n, chunk):
        sx = np.sign(xa[i:i + chunk, None] - xa[None, :]).astype(np.int8)
        sy = np.sign(ya[i:i + chunk, None] - ya[None, :]).astype(np.int8)
        s += int((sx.astype(np.int64) * sy).sum())
    s //= 2  # every unordered pair was counted twice
    n0 = n * (n - 1) // 2

    def tied_pairs(v: np.ndarray) -> int:
        _, counts = np.unique(v, return_counts=True)
        return int((counts * (counts - 1) // 2).sum())

    denom = (n0 - tied_pairs(xa)) * (n0 - tied_pairs(ya))
    if denom == 0:
        return math.nan
    return float(s / math.sqrt(denom))


def seed_paired_t_interval(a: Any, b: Any, *, confidence: float = 0.95) -> DifferenceInterval:
    r"""Paired t interval for the mean difference of two models across training seeds.

    With :math:`d_i = a_i - b_i` over ``n`` seeds, :math:`\bar d`, sample standard deviation
    :math:`s_d` (``ddof = 1``) and :math:`q = t_{n-1}^{-1}((1 + c)/2)`:

    .. math::
        \bar d \pm q \, s_d / \sqrt{n}.

    Args:
        a (array-like or Tensor): float ``[n]``, metric of model A per seed.
        b (array-like or Tensor): float ``[n]``, metric of model B for the same seeds.
        confidence (float): nominal coverage ``c`` in ``(0, 1)``.

    Returns:
        DifferenceInterval: ``method="seed_paired_t"``.

    Raises:
        MetricInputError: if fewer than two seeds, unpaired lengths or non-finite values.
        ProtocolError: if ``confidence`` is not in ``(0, 1)``.

    Example:
        >>> iv = seed_paired_t_interval([0.50, 0.52, 0.51], [0.48, 0.49, 0.50])
        >>> round(iv.estimate, 4), round(iv.low, 4), round(iv.high, 4)
        (0.02, -0.0048, 0.0448)
    """
    conf = _check_confidence(confidence)
    x, y = _check_pair(a, b, "a", "b")
    n = x.size
    if n < 2:
        raise MetricInputError(f"`a` and `b` need at least 2 paired seeds for a t interval, but have {n}.")
    d = x - y
    mean = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    q = float(_sps.t.ppf(0.5 + conf / 2.0, df=n - 1))
    return DifferenceInterval(mean, mean - q * se, mean + q * se, conf, n, "seed_paired_t")


def min_resamples(confidence: float) -> int:
    """The fewest bootstrap resamples of a percentile interval of coverage ``confidence``: each tail must hold at
    least one resample, ``ceil(2 / (1 - confidence))`` (40 at 0.95).

    Example:
        >>> min_resamples(0.95), min_resamples(0.99)
        (40, 200)
    """
    return math.ceil(round(2.0 / (1.0 - _check_confidence(confidence)), 9))


def block_bootstrap_difference(values_a: Any, values_b: Any, *, block: int = 128, num_resamples: int = 2000,
                               confidence: float = 0.95, seed: int = 0) -> DifferenceInterval:
    r"""Time-block paired bootstrap interval for ``mean(values_a - values_b)`` on one segment.

    The per-event differences :math:`d_e = a_e - b_e` (events in **chronological** order,
    e.g. reciprocal ranks of two models on the same positives) are cut into
    :math:`B = \lceil n / \text{block} \rceil` consecutive blocks (the last may be shorter).
    Each resample draws ``B`` blocks with replacement — the same blocks for both models — and
    computes :math:`\sum_{\text{drawn}} \text{block sums} / \sum_{\text{drawn}} \text{block sizes}`.
    The interval is the percentile interval :math:`[Q_{(1-c)/2}, Q_{(1+c)/2}]` of the
    resampled means (numpy's linear quantile). Vectorised: one ``[num_resamples, B]`` draw
    from ``numpy.random.default_rng(seed)``.

    Args:
        values_a (array-like or Tensor): float ``[n]``, per-event values of model A,
            time-sorted.
        values_b (array-like or Tensor): float ``[n]``, model B on the same events.
        block (int): events per block, ``>= 1`` and fewer than the events (default 128): one block holding
            every event would give a zero-width interval.
        num_resamples (int): bootstrap resamples, at least :func:`min_resamples` of ``confidence`` (40 at
            0.95; default 2000): fewer leave a tail without a resample.
        confidence (float): nominal coverage in ``(0, 1)``.
        seed (int): seed of the bootstrap generator.

    Returns:
        DifferenceInterval: ``estimate`` is the observed mean difference, ``n`` the number
        of events, ``method="block_bootstrap"``.

    Raises:
        MetricInputError: on empty / unpaired / non-finite inputs.
        ProtocolError: on invalid options: too few resamples for ``confidence``, or a ``block`` holding every event.

    Example:
        >>> iv = block_bootstrap_difference([1.0] * 256, [0.5] * 256, block=128, num_resamples=40)
        >>> iv.estimate, iv.low, iv.high
        (0.5, 0.5, 0.5)
    """
    conf = _check_confidence(confidence)
    for name, v in (("block", block), ("num_resamples", num_resamples)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ProtocolError(f"`{name}` must be an int >= 1, but got {v!r}.")
    least = min_resamples(conf)
    if num_resamples < least:
        raise ProtocolError(f"num_resamples={num_resamples} is too few for a {conf:g} interval: each tail of the "
                            f"percentile interval holds {(1 - conf) / 2:g} of the resamples, so it needs at least "
                            f"{least} (with fewer its ends are not quantiles, and the interval can exclude its own "
                            f"estimate). Give num_resamples >= {least} (default 2000).")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ProtocolError(f"`seed` must be an int, but got {seed!r}.")
    x, y = _check_pair(values_a, values_b, "values_a", "values_b")
    n = x.size
    if n == 0:
        raise MetricInputError("`values_a` and `values_b` must contain at least one event.")
    if n <= block:
        raise ProtocolError(f"block={block} events holds all {n} events, so every resample would draw that one "
                            f"block and the interval would have zero width. Give a block of at most {n - 1} events "
                            f"(at least two blocks to resample), or compare on a longer segment.")
    d = x - y
    block_id = np.arange(n) // block
    num_blocks = int(block_id[-1]) + 1
    sums = np.bincount(block_id, weights=d, minlength=num_blocks)
    sizes = np.bincount(block_id, minlength=num_blocks).astype(np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, num_blocks, size=(num_resamples, num_blocks))
    means = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    alpha = 1.0 - conf
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return DifferenceInterval(float(d.mean()), float(low), float(high), conf, n, "block_bootstrap")
