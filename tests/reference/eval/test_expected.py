"""tgeval.eval.expected against exact references.

Brute force: every K-subset of a small labelled catalog (itertools.combinations, exact
fractions). Large catalogs (N = 10^6): Python's big-integer math.comb and fractions.
Nested draws: Monte-Carlo against the expectation, within sampling error.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
import torch

from tgeval.eval.expected import expected_hits_at_k, expected_reciprocal_rank, k_sweep, nested_draw_ranks
from tgeval.eval.metrics import TIE_POLICIES
from tgeval.eval.stats import kendall_tau


def _rank(h: int, t: int, ties: str) -> Fraction:
    if ties == "optimistic":
        return Fraction(1 + h)
    if ties == "pessimistic":
        return Fraction(1 + h + t)
    return Fraction(2 + 2 * h + t, 2)


def _brute(a: int, b: int, m: int, K: int, ties: str, k: int) -> tuple[Fraction, Fraction]:
    """Exact E[1/rank] and P(rank <= k) over all K-subsets of the m candidates."""
    labels = ["A"] * a + ["E"] * b + ["B"] * (m - a - b)
    size = min(K, m)
    rr, hit, count = Fraction(0), Fraction(0), 0
    for sub in itertools.combinations(range(m), size):
        h = sum(labels[i] == "A" for i in sub)
        t = sum(labels[i] == "E" for i in sub)
        r = _rank(h, t, ties)
        rr += 1 / r
        hit += int(r <= k)
        count += 1
    return rr / count, hit / count


def _small_cases(max_m: int = 7):
    return [(a, b, m) for m in range(0, max_m + 1) for a in range(m + 1) for b in range(m + 1 - a)]


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_brute_force_all_subsets(ties):
    cases = _small_cases()
    a = torch.tensor([c[0] for c in cases])
    b = torch.tensor([c[1] for c in cases])
    m = torch.tensor([c[2] for c in cases])
    for K in range(0, 9):
        rr = expected_reciprocal_rank(a, b, m, K, ties=ties)
        assert rr.dtype == torch.float64
        for k in (1, 2, 3):
            hits = expected_hits_at_k(a, b, m, K, k, ties=ties)
            for i, (ai, bi, mi) in enumerate(cases):
                ref_rr, ref_hit = _brute(ai, bi, mi, K, ties, k)
                assert rr[i].item() == pytest.approx(float(ref_rr), rel=1e-12, abs=1e-14), (ai, bi, mi, K)
                assert hits[i].item() == pytest.approx(float(ref_hit), rel=1e-12, abs=1e-14), (ai, bi, mi, K, k)


def test_no_tie_conventions_agree_and_match_closed_form_small():
    cases = [(a, 0, m) for m in range(1, 12) for a in range(m + 1)]
    a = torch.tensor([c[0] for c in cases])
    b = torch.zeros(len(cases), dtype=torch.long)
    m = torch.tensor([c[2] for c in cases])
    for K in (0, 1, 3, 6, 10):
        vals = [expected_reciprocal_rank(a, b, m, K, ties=t) for t in TIE_POLICIES]
        torch.testing.assert_close(vals[0], vals[1], rtol=0, atol=1e-14)
        torch.testing.assert_close(vals[0], vals[2], rtol=0, atol=1e-14)
        for i, (ai, _, mi) in enumerate(cases):
            if K >= mi:
                continue
            n, r = mi + 1, ai + 1
            ref = Fraction(math.comb(n, K + 1) - math.comb(n - r, K + 1), r * math.comb(n - 1, K))
            assert vals[0][i].item() == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_full_catalog_is_one_over_rank(ties):
    a = torch.tensor([0, 1, 5, 0, 3, 999])
    b = torch.tensor([0, 2, 0, 4, 3, 0])
    m = torch.tensor([10, 10, 5, 4, 6, 999_999])
    r = torch.tensor([float(_rank(int(x), int(y), ties)) for x, y in zip(a, b)], dtype=torch.float64)
    for K in (None,):
        torch.testing.assert_close(expected_reciprocal_rank(a, b, m, K, ties=ties), 1 / r, rtol=0, atol=0)
    # K = N - 1 (per event) and any K >= N - 1 give the exact full rank too
    for i in range(a.numel()):
        for K in (int(m[i]), int(m[i]) + 7):
            out = expected_reciprocal_rank(a[i:i + 1], b[i:i + 1], m[i:i + 1], K, ties=ties)
            assert out.item() == pytest.approx(1 / r[i].item(), rel=1e-15)
            hit = expected_hits_at_k(a[i:i + 1], b[i:i + 1], m[i:i + 1], K, 3, ties=ties)
            assert hit.item() == float(r[i].item() <= 3)


def test_no_ties_exact_for_a_million_candidates():
    N = 10 ** 6
    ranks = [1, 2, 3, 10, 1000, 123_457, 500_000, 999_999, N]
    for K in (1, 5, 20, 100):
        a = torch.tensor([r - 1 for r in ranks])
        out = expected_reciprocal_rank(a, torch.zeros_like(a), torch.full_like(a, N - 1), K, ties="average")
        assert torch.isfinite(out).all()
        for i, r in enumerate(ranks):
            ref = Fraction(math.comb(N, K + 1) - math.comb(N - r, K + 1), r * math.comb(N - 1, K))
            assert abs(out[i].item() - float(ref)) <= 1e-9 * float(ref), (r, K)
        # one-sided Hits@k against an exact hypergeometric CDF
        hits = expected_hits_at_k(a, torch.zeros_like(a), torch.full_like(a, N - 1), K, 10, ties="optimistic")
        for i, r in enumerate(ranks):
            A, M = r - 1, N - 1
            ref = Fraction(sum(math.comb(A, j) * math.comb(M - A, K - j) for j in range(min(K, 9) + 1)),
                           math.comb(M, K))
            assert abs(hits[i].item() - float(ref)) <= 1e-9 * max(float(ref), 1e-300) + 1e-300, (r, K)


def _exact_average(a: int, b: int, m: int, K: int, k: int | None = None) -> Fraction:
    c = m - a - b
    num = Fraction(0)
    for h in range(min(K, a) + 1):
        for t in range(min(K - h, b) + 1):
            w = Fraction(2, 2 + 2 * h + t) if k is None else Fraction(int(2 * h + t <= 2 * k - 2))
            num += math.comb(a, h) * math.comb(b, t) * math.comb(c, K - h - t) * w
    return num / math.comb(m, K)


def test_ties_average_exact_for_a_million_candidates():
    M = 10 ** 6 - 1
    cases = [(0, 1, 5), (3, 7, 5), (1000, 300, 5), (20, 999_000, 20), (400_000, 500_000, 5), (5, 12, 100),
             (3000, 2000, 100)]
    for a_, b_, K in cases:
        a, b, m = torch.tensor([a_]), torch.tensor([b_]), torch.tensor([M])
        out = expected_reciprocal_rank(a, b, m, K, ties="average")
        ref = float(_exact_average(a_, b_, M, K))
        assert math.isfinite(out.item())
        assert abs(out.item() - ref) <= 1e-9 * ref, (a_, b_, K)
        hit = expected_hits_at_k(a, b, m, K, 3, ties="average").item()
        ref_hit = float(_exact_average(a_, b_, M, K, k=3))
        assert abs(hit - ref_hit) <= 1e-9 * max(ref_hit, 1e-300) + 1e-300, (a_, b_, K)


def test_huge_counts_stay_finite_and_bounded():
    M = 10 ** 6 - 1
    a = torch.tensor([0, 10, 999_999, 500_000, 1, 0, 250_000])
    b = torch.tensor([999_999, 999_989, 0, 499_999, 999_000, 0, 250_000])
    m = torch.full_like(a, M)
    for ties in TIE_POLICIES:
        for K in (1, 50, 100):
            rr = expected_reciprocal_rank(a, b, m, K, ties=ties)
            assert torch.isfinite(rr).all() and (rr > 0).all() and (rr <= 1).all()
            h = expected_hits_at_k(a, b, m, K, 10, ties=ties)
            assert torch.isfinite(h).all() and (h >= 0).all() and (h <= 1 + 1e-12).all()
    # average lies between the one-sided conventions
    lo = expected_reciprocal_rank(a, b, m, 100, ties="pessimistic")
    mid = expected_reciprocal_rank(a, b, m, 100, ties="average")
    hi = expected_reciprocal_rank(a, b, m, 100, ties="optimistic")
    assert (lo <= mid + 1e-15).all() and (mid <= hi + 1e-15).all()


def test_mixed_catalog_sizes_and_empty():
    a = torch.tensor([2, 0, 1, 4])
    b = torch.tensor([1, 0, 0, 0])
    m = torch.tensor([3, 0, 50, 4])
    out = expected_reciprocal_rank(a, b, m, 3, ties="average")
    assert out[0].item() == pytest.approx(1 / 3.5)  # K = M: full rank
    assert out[1].item() == 1.0  # no candidates at all
    assert out[2].item() == pytest.approx(float(_exact_average(1, 0, 50, 3)), rel=1e-12)
    empty = torch.zeros(0, dtype=torch.long)
    assert expected_reciprocal_rank(empty, empty, empty, 5, ties="average").shape == (0,)


def test_validation():
    one = torch.tensor([1])
    with pytest.raises(ValueError, match="above \\+ equal"):
        expected_reciprocal_rank(torch.tensor([3]), torch.tensor([2]), torch.tensor([4]), 2, ties="average")
    with pytest.raises(ValueError, match="`K`"):
        expected_reciprocal_rank(one, one, torch.tensor([5]), -1, ties="average")
    with pytest.raises(TypeError, match="integer counts"):
        expected_reciprocal_rank(one.double(), one, torch.tensor([5]), 1, ties="average")
    with pytest.raises(ValueError, match="ties"):
        expected_reciprocal_rank(one, one, torch.tensor([5]), 1, ties="mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`k`"):
        expected_hits_at_k(one, one, torch.tensor([5]), 1, 0, ties="average")


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_nested_draws_match_expectation(ties):
    reps = 20_000
    a = torch.tensor([30, 0, 7]).repeat_interleave(reps)
    b = torch.tensor([10, 5, 0]).repeat_interleave(reps)
    m = torch.tensor([200, 40, 60]).repeat_interleave(reps)
    ks = [1, 5, 20, 50, None]
    ranks = nested_draw_ranks(a, b, m, ks, seed=3, ties=ties)
    assert ranks.shape == (len(ks), a.numel()) and ranks.dtype == torch.float64
    for j, K in enumerate(ks):
        exp_rr = expected_reciprocal_rank(a, b, m, K, ties=ties).view(3, reps)[:, 0]
        exp_hit = expected_hits_at_k(a, b, m, K, 5, ties=ties).view(3, reps)[:, 0]
        rr = (1 / ranks[j]).view(3, reps)
        hit = (ranks[j] <= 5).double().view(3, reps)
        for g in range(3):
            se = max(rr[g].std().item(), 1e-3) / math.sqrt(reps)
            assert abs(rr[g].mean().item() - exp_rr[g].item()) < 5 * se, (K, g)
            se_h = max(hit[g].std().item(), 1e-3) / math.sqrt(reps)
            assert abs(hit[g].mean().item() - exp_hit[g].item()) < 5 * se_h, (K, g)


def test_nested_draws_are_nested_exact_at_full_and_counter_based():
    a = torch.tensor([30, 0, 7, 3])
    b = torch.tensor([10, 5, 0, 3])
    m = torch.tensor([200, 40, 60, 8])
    ks = [0, 1, 5, 20, 50, 300, None]
    pess = nested_draw_ranks(a, b, m, ks, seed=11, ties="pessimistic")
    opt = nested_draw_ranks(a, b, m, ks, seed=11, ties="optimistic")
    assert (pess.diff(dim=0) >= 0).all() and (opt.diff(dim=0) >= 0).all()  # first K of one permutation
    assert (pess[0] == 1).all()
    full = torch.stack([1.0 + a + b, 1.0 + a]).double()
    torch.testing.assert_close(pess[-1], full[0])
    torch.testing.assert_close(opt[-1], full[1])
    torch.testing.assert_close(pess[-2], full[0])  # K = 300 > M draws everything
    # an event's draws depend only on (seed, event id, draw index)
    sub = nested_draw_ranks(a[2:], b[2:], m[2:], ks, seed=11, ties="pessimistic", event_ids=torch.tensor([2, 3]))
    torch.testing.assert_close(sub, pess[:, 2:])
    other = nested_draw_ranks(a, b, m, ks, seed=12, ties="pessimistic")
    assert not torch.equal(other, pess)


def test_k_sweep_values_and_tau():
    g = torch.Generator().manual_seed(0)
    M = 500
    records = {}
    for i, name in enumerate(["a", "b", "c", "d"]):
        above = torch.randint(0, 40 * (i + 1), (300,), generator=g)
        equal = torch.randint(0, 3, (300,), generator=g)
        records[name] = {"above": above, "equal": equal, "candidates": torch.full((300,), M)}
    out = k_sweep(records, ties="average")
    assert out["K"] == [1, 5, 20, 50, 100, None] and out["models"] == ["a", "b", "c", "d"]
    for name, rec in records.items():
        full = (1 / (1.0 + rec["above"].double() + 0.5 * rec["equal"].double())).mean().item()
        assert out["mrr"][name][-1] == pytest.approx(full, rel=1e-14)
        assert out["full_mrr"][name] == pytest.approx(full, rel=1e-14)
        v20 = expected_reciprocal_rank(rec["above"], rec["equal"], rec["candidates"], 20, ties="average").mean()
        assert out["mrr"][name][2] == pytest.approx(v20.item(), rel=1e-14)
    for j in range(len(out["K"])):
        ref = kendall_tau([out["mrr"][n][j] for n in out["models"]], [out["full_mrr"][n] for n in out["models"]])
        assert out["kendall_tau"][j] == ref
    assert out["kendall_tau"][-1] == 1.0
    single = k_sweep({"a": records["a"]}, ks=(5,), ties="optimistic")
    assert math.isnan(single["kendall_tau"][0]) and single["full_mrr"]["a"] > 0
    with pytest.raises(ValueError, match="lack"):
        k_sweep({"a": {"above": records["a"]["above"]}}, ties="average")
