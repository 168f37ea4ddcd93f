"""tgeval.eval.stats against scipy and hand computations; bootstrap coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch

from tgeval.errors import ProtocolError
from tgeval.eval.stats import (DifferenceInterval, block_bootstrap_difference, kendall_tau, min_resamples,
                               seed_paired_t_interval)


@pytest.mark.parametrize("n", [2, 3, 7, 50, 400])
def test_kendall_tau_matches_scipy_random_and_tied(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        x, y = rng.normal(size=n), rng.normal(size=n)
        assert kendall_tau(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic, abs=1e-12)
        xt, yt = rng.integers(0, 4, size=n).astype(float), rng.integers(0, 3, size=n).astype(float)
        ref = scipy.stats.kendalltau(xt, yt).statistic
        got = kendall_tau(torch.tensor(xt), yt)
        assert (math.isnan(got) and math.isnan(ref)) or got == pytest.approx(ref, abs=1e-12)


def test_kendall_tau_edge_cases():
    assert kendall_tau([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == -1.0
    assert math.isnan(kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(kendall_tau([1.0], [2.0]))
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1.0, 2.0], [1.0])


def test_seed_paired_t_interval_by_hand():
    a = np.array([0.61, 0.58, 0.63, 0.60, 0.59])
    b = np.array([0.55, 0.57, 0.58, 0.56, 0.50])
    d = a - b
    q = scipy.stats.t.ppf(0.95, df=4)  # confidence 0.90
    se = d.std(ddof=1) / math.sqrt(5)
    iv = seed_paired_t_interval(a, torch.tensor(b), confidence=0.90)
    assert isinstance(iv, DifferenceInterval) and iv.method == "seed_paired_t" and iv.n == 5
    assert iv.estimate == pytest.approx(d.mean(), abs=1e-15)
    assert iv.low == pytest.approx(d.mean() - q * se, abs=1e-14)
    assert iv.high == pytest.approx(d.mean() + q * se, abs=1e-14)
    # same as scipy's own paired-t confidence interval
    ci = scipy.stats.ttest_rel(a, b).confidence_interval(confidence_level=0.90)
    assert (iv.low, iv.high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    with pytest.raises(ValueError, match="at least 2"):
        seed_paired_t_interval([1.0], [0.5])
    with pytest.raises(ValueError, match="confidence"):
        seed_paired_t_interval(a, b, confidence=1.5)


def test_block_bootstrap_basic_properties():
    rng = np.random.default_rng(0)
    b = rng.uniform(size=1000)
    iv = block_bootstrap_difference(b + 0.25, b, block=100, num_resamples=50)
    assert iv.estimate == pytest.approx(0.25) and iv.low == pytest.approx(0.25) and iv.high == pytest.approx(0.25)
    a = rng.uniform(size=1000)
    iv1 = block_bootstrap_difference(a, b, seed=5)
    iv2 = block_bootstrap_difference(torch.tensor(a), torch.tensor(b), seed=5)
    assert iv1 == iv2 and iv1.low < iv1.estimate < iv1.high and iv1.n == 1000
    assert iv1.method == "block_bootstrap"
    # partial last block, block larger than the data
    iv3 = block_bootstrap_difference(a[:130], b[:130], block=128, num_resamples=200)
    assert iv3.low <= iv3.high
    # one block holding every event: every resample is that block, a zero-width interval
    with pytest.raises(ProtocolError, match=r"block=128 events holds all 10 events.*at most 9 events"):
        block_bootstrap_difference(a[:10], b[:10], block=128, num_resamples=200)
    two_blocks = block_bootstrap_difference(a[:10], b[:10], block=9, num_resamples=200)
    assert two_blocks.low < two_blocks.high
    # too few resamples for the tails: one resample gave an interval excluding its own estimate
    with pytest.raises(ProtocolError, match=r"num_resamples=1 is too few for a 0.95 interval.*at least 40"):
        block_bootstrap_difference(a, b, num_resamples=1)
    with pytest.raises(ProtocolError, match=r"at least 200"):
        block_bootstrap_difference(a, b, num_resamples=199, confidence=0.99)
    assert min_resamples(0.95) == 40 and block_bootstrap_difference(a, b, num_resamples=40).n == 1000
    with pytest.raises(ValueError, match="finite"):
        block_bootstrap_difference([np.nan, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="`block`"):
        block_bootstrap_difference(a, b, block=0)


def test_block_bootstrap_coverage_with_temporal_dependence():
    """AR(1)-dependent paired differences around a known mean: ~95% of intervals cover it."""
    rng = np.random.default_rng(123)
    reps, n, phi, true_diff = 200, 1024, 0.6, 0.05
    covered = 0
    for r in range(reps):
        eps = rng.normal(size=n)
        noise = np.empty(n)
        noise[0] = eps[0] / math.sqrt(1 - phi ** 2)
        for i in range(1, n):
            noise[i] = phi * noise[i - 1] + eps[i]
        base = rng.uniform(size=n)  # shared by both models: cancels in the paired difference
        a = base + true_diff + 0.3 * noise
        iv = block_bootstrap_difference(a, base, block=32, num_resamples=500, seed=r)
        covered += iv.low <= true_diff <= iv.high
    assert 0.88 <= covered / reps <= 0.99
