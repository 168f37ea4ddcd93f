"""tgeval.eval.metrics against slow, obviously correct references.

Ranks: Python loops over every (query, negative) pair. AUROC / AP: scikit-learn (a test
requirement). Grouped metrics: a loop over groups calling scikit-learn. Aggregation: loops.
Every sweep has heavy ties (integer-valued scores), negative scores and empty cases.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from tgeval.errors import UndefinedMetricWarning
from tgeval.eval.metrics import (
    TIE_POLICIES,
    auroc,
    average_precision,
    check_ties,
    count_above_equal,
    grouped_auroc,
    grouped_average_precision,
    hits_at_k,
    macro_mean,
    micro_mean,
    rank_from_counts,
    reciprocal_rank,
)

# scikit-learn and hypothesis are test requirements (the `dev` extra): a missing one must fail, not skip.
import sklearn.metrics as sklearn_metrics  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SEEDS = range(25)  # the `device` fixture (conftest) adds CUDA when present; devices compare by type


def _scores(gen: torch.Generator, shape: tuple[int, ...], tied: bool) -> torch.Tensor:
    """Integer-valued scores in [-3, 3] (heavy ties) or continuous scores around 0."""
    if tied:
        return torch.randint(-3, 4, shape, generator=gen).to(torch.float64)
    return torch.randn(shape, generator=gen, dtype=torch.float64)


# --------------------------------------------------------------------------- ranks


def _brute_ranks(pos: list[float], neg: list[list[float]], mask: list[list[bool]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {p: [] for p in TIE_POLICIES}
    for p, row, mrow in zip(pos, neg, mask):
        above = sum(1 for n, m in zip(row, mrow) if m and n > p)
        equal = sum(1 for n, m in zip(row, mrow) if m and n == p)
        out["optimistic"].append(1.0 + above)
        out["pessimistic"].append(1.0 + above + equal)
        out["average"].append(1.0 + above + equal / 2)
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tied", [True, False])
def test_ranks_match_brute_force(seed: int, tied: bool, device: torch.device) -> None:
    gen = torch.Generator().manual_seed(seed)
    q = int(torch.randint(0, 12, (1,), generator=gen))
    k = int(torch.randint(0, 9, (1,), generator=gen))  # K = 0 included
    pos = _scores(gen, (q,), tied)
    neg = _scores(gen, (q, k), tied)
    mask = torch.rand((q, k), generator=gen) < 0.7
    if q:
        mask[0] = False  # a query whose negatives are all masked out
    ref = _brute_ranks(pos.tolist(), neg.tolist(), mask.tolist())
    full = _brute_ranks(pos.tolist(), neg.tolist(), torch.ones_like(mask).tolist())

    pos_d, neg_d, mask_d = pos.to(device), neg.to(device), mask.to(device)
    above, equal = count_above_equal(pos_d, neg_d, mask_d)
    assert above.dtype == equal.dtype == torch.long and above.device.type == device.type
    for ties in TIE_POLICIES:
        rank = rank_from_counts(above, equal, ties=ties)
        assert rank.dtype == torch.float64 and rank.device.type == device.type
        assert rank.cpu().tolist() == ref[ties]
        rr = reciprocal_rank(pos_d, neg_d, ties=ties, mask=mask_d)
        assert rr.dtype == torch.float64 and rr.device.type == device.type
        torch.testing.assert_close(rr.cpu(), 1.0 / torch.tensor(ref[ties], dtype=torch.float64))
        rr_full = reciprocal_rank(pos_d, neg_d, ties=ties)
        torch.testing.assert_close(rr_full.cpu(), 1.0 / torch.tensor(full[ties], dtype=torch.float64))
        for cut in (1, 2, 5):
            hits = hits_at_k(rank, cut)
            assert hits.dtype == torch.float64 and hits.device.type == device.type
            assert hits.cpu().tolist() == [float(r <= cut) for r in ref[ties]]
    # average is the midpoint of the other two, always
    torch.testing.assert_close(
        rank_from_counts(above, equal, ties="average"),
        (rank_from_counts(above, equal, ties="optimistic") + rank_from_counts(above, equal, ties="pessimistic")) / 2,
    )


def test_ranks_with_integer_and_float32_scores() -> None:
    pos = torch.tensor([2, -1, 0])
    neg = torch.tensor([[2, 3, 1], [-1, -1, -2], [5, 5, 5]])
    # query 0: 1 above (3), 1 equal (2); query 1: 0 above, 2 equal; query 2: 3 above
    expected = {"optimistic": [2.0, 1.0, 4.0], "pessimistic": [3.0, 3.0, 4.0], "average": [2.5, 2.0, 4.0]}
    for scores_dtype in (torch.long, torch.float32):
        above, equal = count_above_equal(pos.to(scores_dtype), neg.to(scores_dtype))
        for ties, ranks in expected.items():
            assert rank_from_counts(above, equal, ties=ties).tolist() == ranks


def test_ranks_do_not_depend_on_score_sign_or_shift() -> None:
    gen = torch.Generator().manual_seed(0)
    pos, neg = _scores(gen, (20,), True), _scores(gen, (20, 7), True)
    for ties in TIE_POLICIES:
        base = reciprocal_rank(pos, neg, ties=ties)
        torch.testing.assert_close(reciprocal_rank(pos - 100.0, neg - 100.0, ties=ties), base)
        torch.testing.assert_close(reciprocal_rank(3 * pos + 7, 3 * neg + 7, ties=ties), base)


def test_nan_scores_give_nan_reciprocal_rank_unless_masked() -> None:
    nan = float("nan")
    pos = torch.tensor([nan, 0.5, 0.5, 0.5])
    neg = torch.tensor([[0.1, 0.2], [nan, 0.9], [nan, 0.9], [0.1, 0.9]])
    mask = torch.tensor([[True, True], [True, True], [False, True], [True, True]])
    rr = reciprocal_rank(pos, neg, ties="average", mask=mask)
    # NaN positive -> nan (never rank 1); counted NaN negative -> nan; masked NaN is ignored
    assert math.isnan(rr[0]) and math.isnan(rr[1])
    assert rr[2:].tolist() == [0.5, 0.5]
    hits = hits_at_k(1.0 / rr, 2)  # NaN ranks stay NaN, they are not misses
    assert math.isnan(hits[0]) and math.isnan(hits[1]) and hits[2:].tolist() == [1.0, 1.0]


def test_empty_queries() -> None:
    pos, neg = torch.zeros(0), torch.zeros(0, 5)
    for ties in TIE_POLICIES:
        rr = reciprocal_rank(pos, neg, ties=ties)
        assert rr.shape == (0,) and rr.dtype == torch.float64
    # K = 0: the positive is alone, rank 1
    assert reciprocal_rank(torch.tensor([0.3, -2.0]), torch.zeros(2, 0), ties="pessimistic").tolist() == [1.0, 1.0]


def test_rank_argument_errors() -> None:
    with pytest.raises(ValueError, match="'average', 'pessimistic', 'optimistic'"):
        check_ties("mean")
    with pytest.raises(ValueError, match="`ties`"):
        reciprocal_rank(torch.zeros(2), torch.zeros(2, 3), ties="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`neg` must have shape"):
        count_above_equal(torch.zeros(2), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="`mask` must have the shape"):
        count_above_equal(torch.zeros(2), torch.zeros(2, 3), torch.ones(2, 2, dtype=torch.bool))
    with pytest.raises(TypeError, match="`mask` must be a bool"):
        count_above_equal(torch.zeros(2), torch.zeros(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="`k` must be an int >= 1"):
        hits_at_k(torch.ones(3), 0)


# --------------------------------------------------------------------------- AUROC / AP


def _labels(gen: torch.Generator, n: int, p: float = 0.4) -> torch.Tensor:
    y = torch.rand(n, generator=gen) < p
    y[0], y[1] = True, False  # both classes present
    return y


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tied", [True, False])
def test_auroc_ap_match_sklearn(seed: int, tied: bool, device: torch.device) -> None:
    gen = torch.Generator().manual_seed(seed)
    n = int(torch.randint(2, 60, (1,), generator=gen))
    scores, y = _scores(gen, (n,), tied), _labels(gen, n)
    ref_auc = sklearn_metrics.roc_auc_score(y.numpy(), scores.numpy())
    ref_ap = sklearn_metrics.average_precision_score(y.numpy(), scores.numpy())
    for labels in (y, y.long(), y.double()):  # bool and 0/1 numbers
        auc = auroc(scores.to(device), labels.to(device))
        ap = average_precision(scores.to(device), labels.to(device))
        for value in (auc, ap):
            assert value.dtype == torch.float64 and value.dim() == 0 and value.device.type == device.type
        assert auc.item() == pytest.approx(ref_auc, abs=1e-12)
        assert ap.item() == pytest.approx(ref_ap, abs=1e-12)
    # float32 and integer-typed scores keep their ties
    assert auroc(scores.float(), y).item() == pytest.approx(
        sklearn_metrics.roc_auc_score(y.numpy(), scores.float().numpy()), abs=1e-12
    )
    if tied:
        assert average_precision(scores.long(), y).item() == pytest.approx(ref_ap, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([-2.0, -0.5, 0.0, 0.5, 3.0]), st.booleans()),
        min_size=2,
        max_size=25,
    )
)
def test_auroc_ap_match_sklearn_few_distinct_values(pairs: list[tuple[float, bool]]) -> None:
    scores = torch.tensor([s for s, _ in pairs], dtype=torch.float64)
    y = torch.tensor([b for _, b in pairs])
    n_pos = int(y.sum())
    if 0 < n_pos < len(pairs):
        ref = sklearn_metrics.roc_auc_score(y.numpy(), scores.numpy())
        assert auroc(scores, y).item() == pytest.approx(ref, abs=1e-12)
    else:
        with pytest.warns(UndefinedMetricWarning, match="only one class"):
            assert math.isnan(auroc(scores, y))
    if n_pos:
        ref = sklearn_metrics.average_precision_score(y.numpy(), scores.numpy())
        assert average_precision(scores, y).item() == pytest.approx(ref, abs=1e-12)
    else:
        with pytest.warns(UndefinedMetricWarning, match="no positive"):
            assert math.isnan(average_precision(scores, y))


def test_auroc_is_mann_whitney_brute_force() -> None:
    gen = torch.Generator().manual_seed(1)
    for _ in range(10):
        scores, y = _scores(gen, (30,), True), _labels(gen, 30)
        p = [s for s, b in zip(scores.tolist(), y.tolist()) if b]
        n = [s for s, b in zip(scores.tolist(), y.tolist()) if not b]
        pairs = sum((a > b) + 0.5 * (a == b) for a in p for b in n)
        assert auroc(scores, y).item() == pytest.approx(pairs / (len(p) * len(n)), abs=1e-12)


def test_auroc_ap_tiny_hand_example() -> None:
    scores = torch.tensor([0.9, 0.5, 0.5, 0.1])
    y = torch.tensor([True, False, True, False])
    # pairs (pos, neg): (0.9, 0.5)=1, (0.9, 0.1)=1, (0.5, 0.5)=1/2, (0.5, 0.1)=1 -> 3.5 / 4
    assert auroc(scores, y).item() == 0.875
    # thresholds 0.9: TP=1 FP=0 (recall 1/2, precision 1); 0.5: TP=2 FP=1 (recall 1, precision 2/3)
    # AP = 1/2 * 1 + 1/2 * 2/3 = 5/6
    assert average_precision(scores, y).item() == pytest.approx(5 / 6, abs=1e-15)
    # all positives: AP = 1 (defined), AUROC undefined
    assert average_precision(scores, torch.ones(4, dtype=torch.bool)).item() == 1.0


def test_undefined_auroc_ap_warn_and_return_nan(device: torch.device) -> None:
    scores = torch.tensor([0.3, -0.1, 0.2], device=device)
    for labels in (torch.zeros(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool)):
        with pytest.warns(UndefinedMetricWarning, match="only one class"):
            value = auroc(scores, labels.to(device))
        assert math.isnan(value) and value.dtype == torch.float64 and value.device.type == device.type
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        value = average_precision(scores, torch.zeros(3, dtype=torch.bool, device=device))
    assert math.isnan(value) and value.device.type == device.type
    empty = torch.zeros(0, device=device)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(auroc(empty, empty.bool()))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(average_precision(empty, empty.bool()))
    nan_scores = torch.tensor([0.3, float("nan"), 0.1], device=device)
    y = torch.tensor([True, False, False], device=device)
    with pytest.warns(UndefinedMetricWarning, match="NaN"):
        assert math.isnan(auroc(nan_scores, y))
    with pytest.warns(UndefinedMetricWarning, match="NaN"):
        assert math.isnan(average_precision(nan_scores, y))


@pytest.mark.parametrize("metric", [auroc, average_precision])
def test_warning_points_at_caller(metric) -> None:
    with pytest.warns(UndefinedMetricWarning) as record:
        metric(torch.tensor([1.0]), torch.tensor([False]))
    assert record[0].filename == __file__
    grouped = grouped_auroc if metric is auroc else grouped_average_precision
    with pytest.warns(UndefinedMetricWarning) as record:
        grouped(torch.tensor([1.0]), torch.tensor([False]), torch.tensor([0]))
    assert record[0].filename == __file__


def test_label_and_score_errors() -> None:
    with pytest.raises(ValueError, match="only 0 and 1"):
        auroc(torch.tensor([0.1, 0.2]), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="one entry per score"):
        average_precision(torch.tensor([0.1, 0.2]), torch.tensor([True]))
    with pytest.raises(TypeError, match="`scores` must be a real"):
        auroc(torch.tensor([True, False]), torch.tensor([True, False]))
    with pytest.raises(ValueError, match="1-D"):
        auroc(torch.zeros(2, 2), torch.zeros(2, 2))


# --------------------------------------------------------------------------- grouped


def _loop_grouped(metric, scores: np.ndarray, y: np.ndarray, g: np.ndarray, num: int, need_neg: bool) -> list[float]:
    out = []
    for k in range(num):
        yk, sk = y[g == k], scores[g == k]
        defined = yk.any() and (not need_neg or not yk.all())
        out.append(metric(yk, sk) if defined else float("nan"))
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tied", [True, False])
def test_grouped_match_sklearn_loop(seed: int, tied: bool, device: torch.device) -> None:
    gen = torch.Generator().manual_seed(seed)
    n = int(torch.randint(0, 80, (1,), generator=gen))
    num = int(torch.randint(1, 8, (1,), generator=gen))
    scores = _scores(gen, (n,), tied)
    y = torch.rand(n, generator=gen) < 0.4
    groups = torch.randint(0, num, (n,), generator=gen)  # unsorted, some groups tiny or empty
    s_np, y_np, g_np = scores.numpy(), y.numpy(), groups.numpy()
    ref_auc = _loop_grouped(sklearn_metrics.roc_auc_score, s_np, y_np, g_np, num, need_neg=True)
    ref_ap = _loop_grouped(sklearn_metrics.average_precision_score, s_np, y_np, g_np, num, need_neg=False)

    args = (scores.to(device), y.to(device), groups.to(device))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        auc = grouped_auroc(*args, num_groups=num)
        ap = grouped_average_precision(*args, num_groups=num)
    for value, ref in ((auc, ref_auc), (ap, ref_ap)):
        assert value.dtype == torch.float64 and value.shape == (num,) and value.device.type == device.type
        np.testing.assert_allclose(value.cpu().numpy(), np.array(ref), rtol=0, atol=1e-12)
    # exactly one warning per call that has undefined groups, naming how many
    n_undef_auc, n_undef_ap = sum(map(math.isnan, ref_auc)), sum(map(math.isnan, ref_ap))
    messages = [str(w.message) for w in record]
    assert all(issubclass(w.category, UndefinedMetricWarning) for w in record)
    assert len(messages) == (n_undef_auc > 0) + (n_undef_ap > 0)
    if n_undef_auc:
        assert f"{n_undef_auc} of {num} groups" in messages[0]
    if n_undef_ap:
        assert f"{n_undef_ap} of {num} groups" in messages[-1]


def test_grouped_default_num_groups_and_single_group() -> None:
    scores = torch.tensor([0.2, 0.9, 0.5, 0.5, 0.1, 0.3])
    y = torch.tensor([False, True, True, False, False, True])
    g = torch.tensor([2, 2, 0, 0, 1, 1])
    assert grouped_auroc(scores, y, g).tolist() == [0.5, 1.0, 1.0]  # G = max + 1 = 3
    assert grouped_average_precision(scores, y, g).tolist() == [0.5, 1.0, 1.0]
    # one group equals the global metric
    zeros = torch.zeros(6, dtype=torch.long)
    assert grouped_auroc(scores, y, zeros).tolist() == [auroc(scores, y).item()]
    assert grouped_average_precision(scores, y, zeros).tolist() == [average_precision(scores, y).item()]
    # nothing at all: zero groups, no warning
    empty = torch.zeros(0)
    assert grouped_auroc(empty, empty.bool(), empty.long()).shape == (0,)


def test_grouped_nan_scores_and_errors() -> None:
    scores = torch.tensor([0.2, float("nan"), 0.5, 0.1])
    y = torch.tensor([False, True, True, False])
    g = torch.tensor([0, 0, 1, 1])
    with pytest.warns(UndefinedMetricWarning, match="1 of 2 groups contain NaN"):
        value = grouped_auroc(scores, y, g)
    assert math.isnan(value[0]) and value[1].item() == 1.0
    with pytest.raises(TypeError, match="int64"):
        grouped_auroc(scores, y, g.int())
    with pytest.raises(ValueError, match="non-negative"):
        grouped_auroc(scores, y, torch.tensor([0, -1, 1, 1]))
    with pytest.raises(ValueError, match="num_groups"):
        grouped_average_precision(scores, y, g, num_groups=1)


# --------------------------------------------------------------------------- aggregation


def test_micro_macro_tiny_example(device: torch.device) -> None:
    # source a: [1, 0, 0], source b: [1]
    values = torch.tensor([1.0, 0.0, 0.0, 1.0], device=device)
    src = torch.tensor([10, 10, 10, 4], device=device)
    micro, macro = micro_mean(values), macro_mean(values, src)
    assert micro.item() == 0.5  # (1 + 0 + 0 + 1) / 4
    assert macro.item() == pytest.approx((1 / 3 + 1) / 2, abs=1e-15)  # a: 1/3, b: 1
    for value in (micro, macro):
        assert value.dtype == torch.float64 and value.dim() == 0 and value.device.type == device.type
    # bool and int values are accepted and averaged in float64
    assert macro_mean(values.bool(), src).item() == pytest.approx(2 / 3, abs=1e-15)


@pytest.mark.parametrize("seed", SEEDS)
def test_macro_mean_matches_loop(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    n = int(torch.randint(1, 50, (1,), generator=gen))
    values = torch.rand(n, generator=gen, dtype=torch.float64)
    values[torch.rand(n, generator=gen) < 0.2] = float("nan")
    groups = torch.randint(-5, 1000, (n,), generator=gen)  # arbitrary ids, negative included
    per_group: dict[int, list[float]] = {}
    for v, g in zip(values.tolist(), groups.tolist()):
        per_group.setdefault(g, [])
        if not math.isnan(v):
            per_group[g].append(v)
    means = [sum(vs) / len(vs) for vs in per_group.values() if vs]
    finite = [v for v in values.tolist() if not math.isnan(v)]
    if not means:
        with pytest.warns(UndefinedMetricWarning):
            assert math.isnan(macro_mean(values, groups))
        return
    assert macro_mean(values, groups).item() == pytest.approx(sum(means) / len(means), abs=1e-12)
    assert micro_mean(values).item() == pytest.approx(sum(finite) / len(finite), abs=1e-12)


def test_means_ignore_nan_and_warn_when_nothing_left() -> None:
    nan = float("nan")
    values = torch.tensor([nan, 1.0, nan, 0.0])
    src = torch.tensor([0, 0, 1, 1])
    assert micro_mean(values).item() == 0.5  # (1 + 0) / 2
    assert macro_mean(values, src).item() == 0.5  # (1 + 0) / 2
    # source 0 is all-NaN and is left out: only source 1 counts
    assert macro_mean(torch.tensor([nan, nan, 0.25]), torch.tensor([0, 0, 1])).item() == 0.25
    for empty in (torch.zeros(0), torch.tensor([nan, nan])):
        with pytest.warns(UndefinedMetricWarning, match="no non-NaN"):
            assert math.isnan(micro_mean(empty))
        with pytest.warns(UndefinedMetricWarning, match="no non-NaN"):
            assert math.isnan(macro_mean(empty, torch.zeros(empty.numel(), dtype=torch.long)))
    with pytest.raises(ValueError, match="one entry per value"):
        macro_mean(values, src[:2])
