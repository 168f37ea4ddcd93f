"""sampled_auroc_ap (positives against [E, K] negatives, binned in chunks) against scikit-learn on the
pooled scores, on every path: one chunk or many, dense (group x level) bins or searched ones."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics as sklearn_metrics
import torch

import tgeval.eval.metrics as metrics
from tgeval.errors import MetricInputError, UndefinedMetricWarning
from tgeval.eval.metrics import grouped_auroc, grouped_average_precision, sampled_auroc_ap
from tgeval.eval.result import summarize

PATHS = {"dense, one chunk": (2**20, 2**22), "dense, chunks of 5": (5, 2**22), "searched, chunks of 5": (5, 0)}


@pytest.fixture(params=list(PATHS))
def path(request, monkeypatch):
    chunk, dense = PATHS[request.param]
    monkeypatch.setattr(metrics, "CHUNK_SCORES", chunk)
    monkeypatch.setattr(metrics, "DENSE_BINS", dense)
    return request.param


def _scores(gen: torch.Generator, shape: tuple[int, ...], kind: str) -> torch.Tensor:
    if kind == "binary":  # EdgeBank: 0/1, almost all ties
        return (torch.rand(shape, generator=gen) < 0.3).double()
    if kind == "tied":
        return torch.randint(-3, 4, shape, generator=gen).double()
    return torch.randn(shape, generator=gen, dtype=torch.float64)


def _pooled(pos, neg, mask, groups):
    """The reference layout: every positive, then the unmasked negatives, with labels and groups."""
    scores = np.concatenate([pos.numpy(), neg[mask].numpy()])
    labels = np.concatenate([np.ones(pos.numel(), bool), np.zeros(int(mask.sum()), bool)])
    pooled_groups = np.concatenate([groups.numpy(), groups[:, None].expand_as(neg)[mask].numpy()])
    return scores, labels, pooled_groups


def _per_group(metric, scores, labels, groups, num, need_negatives):
    out = []
    for g in range(num):
        y, s = labels[groups == g], scores[groups == g]
        defined = y.any() and (not need_negatives or not y.all())
        out.append(metric(y, s) if defined else float("nan"))
    return np.array(out)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", ["binary", "tied", "continuous"])
def test_matches_sklearn_on_pooled_scores(seed: int, kind: str, path: str, device: torch.device) -> None:
    gen = torch.Generator().manual_seed(seed)
    e, k, num = int(torch.randint(2, 40, (1,), generator=gen)), int(torch.randint(1, 9, (1,), generator=gen)), 4
    pos, neg = _scores(gen, (e,), kind) + 0.5, _scores(gen, (e, k), kind)
    mask = torch.rand((e, k), generator=gen) < 0.8
    mask[0] = False  # a query without negatives still adds its positive
    mask[1] = True
    groups = torch.randint(0, num, (e,), generator=gen)  # unsorted; a group may be empty or one-class
    scores, labels, pooled_groups = _pooled(pos, neg, mask, groups)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # empty / one-class groups are NaN
        got = sampled_auroc_ap(pos.to(device), neg.to(device), mask=mask.to(device), groups=groups.to(device),
                               num_groups=num)
    for value in got:
        assert value.dtype == torch.float64 and value.device.type == device.type
    assert got.auroc.item() == pytest.approx(sklearn_metrics.roc_auc_score(labels, scores), abs=1e-12)
    assert got.average_precision.item() == pytest.approx(
        sklearn_metrics.average_precision_score(labels, scores), abs=1e-12)
    ref_auc = _per_group(sklearn_metrics.roc_auc_score, scores, labels, pooled_groups, num, need_negatives=True)
    ref_ap = _per_group(sklearn_metrics.average_precision_score, scores, labels, pooled_groups, num,
                        need_negatives=False)
    np.testing.assert_allclose(got.grouped_auroc.cpu().numpy(), ref_auc, atol=1e-12, rtol=0)
    np.testing.assert_allclose(got.grouped_average_precision.cpu().numpy(), ref_ap, atol=1e-12, rtol=0)

    # no mask: every negative counts; no groups: no grouped values
    whole = sampled_auroc_ap(pos.to(device), neg.to(device))
    labels_all = np.concatenate([np.ones(e, bool), np.zeros(e * k, bool)])
    scores_all = np.concatenate([pos.numpy(), neg.flatten().numpy()])
    assert whole.auroc.item() == pytest.approx(sklearn_metrics.roc_auc_score(labels_all, scores_all), abs=1e-12)
    assert whole.grouped_auroc is None and whole.grouped_average_precision is None


@pytest.mark.parametrize("seed", range(6))
def test_flat_grouped_metrics_match_sklearn_on_every_path(seed: int, path: str) -> None:
    gen = torch.Generator().manual_seed(seed)
    n, num = 60, 5
    scores = torch.randint(-3, 4, (n,), generator=gen).double() if seed % 2 else torch.randn(n, generator=gen)
    y = torch.rand(n, generator=gen) < 0.4
    groups = torch.randint(0, num, (n,), generator=gen)
    ref_auc = _per_group(sklearn_metrics.roc_auc_score, scores.numpy(), y.numpy(), groups.numpy(), num, True)
    ref_ap = _per_group(sklearn_metrics.average_precision_score, scores.numpy(), y.numpy(), groups.numpy(), num,
                        False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        np.testing.assert_allclose(grouped_auroc(scores, y, groups, num_groups=num).numpy(), ref_auc, atol=1e-12)
        np.testing.assert_allclose(grouped_average_precision(scores, y, groups, num_groups=num).numpy(), ref_ap,
                                   atol=1e-12)


def test_large_binary_scores_match_sklearn(path: str) -> None:
    """EdgeBank's case at a size where chunks hold many rows: 0/1 scores, K = 99, batches of 20."""
    gen = torch.Generator().manual_seed(3)
    e, k = 600, 99
    pos, neg = (torch.rand(e, generator=gen) < 0.6).double(), (torch.rand((e, k), generator=gen) < 0.05).double()
    groups = torch.arange(e) // 20
    got = sampled_auroc_ap(pos, neg, groups=groups)
    scores, labels, pooled_groups = _pooled(pos, neg, torch.ones_like(neg, dtype=torch.bool), groups)
    assert got.auroc.item() == pytest.approx(sklearn_metrics.roc_auc_score(labels, scores), abs=1e-12)
    assert got.average_precision.item() == pytest.approx(sklearn_metrics.average_precision_score(labels, scores),
                                                         abs=1e-12)
    ref = _per_group(sklearn_metrics.average_precision_score, scores, labels, pooled_groups, e // 20, False)
    np.testing.assert_allclose(got.grouped_average_precision.numpy(), ref, atol=1e-12, rtol=0)


def test_dtypes_mix_and_keep_ties() -> None:
    pos = torch.tensor([2, 0, 1])
    neg = torch.tensor([[1.0, 0.0], [0.0, 3.0], [1.0, 1.0]], dtype=torch.float32)
    # pairs won: 2 beats 5 and loses to 3; 0 ties 2; 1 beats 2, ties 3 -> (5 + 1 + 3.5) / 18
    assert sampled_auroc_ap(pos, neg).auroc.item() == pytest.approx(9.5 / 18, abs=1e-15)
    ints = sampled_auroc_ap(pos, neg.long()).auroc
    assert ints.item() == pytest.approx(9.5 / 18, abs=1e-15)


def test_nan_scores_make_their_group_nan_unless_masked(path: str) -> None:
    pos = torch.tensor([0.9, 0.2, 0.5, 0.4])
    neg = torch.tensor([[0.1, float("nan")], [0.3, 0.1], [0.6, 0.2], [float("nan"), 0.1]])
    groups = torch.tensor([0, 0, 1, 1])
    masked = torch.tensor([[True, False], [True, True], [True, True], [True, True]])
    with pytest.warns(UndefinedMetricWarning, match="NaN"):
        got = sampled_auroc_ap(pos, neg, mask=masked, groups=groups)
    assert math.isnan(got.auroc) and math.isnan(got.average_precision)
    assert not math.isnan(got.grouped_auroc[0]) and math.isnan(got.grouped_auroc[1])
    # group 0 without its masked NaN: 0.9 beats 2, 0.2 beats 1 of {0.1, 0.3, 0.1}... pairs (0.9: 3), (0.2: 2) -> 5/6
    assert got.grouped_auroc[0].item() == pytest.approx(5 / 6, abs=1e-15)
    clean = sampled_auroc_ap(pos[:2], neg[:2], mask=masked[:2])
    assert clean.auroc.item() == pytest.approx(5 / 6, abs=1e-15)


def test_undefined_values_warn() -> None:
    with pytest.warns(UndefinedMetricWarning, match="only one class"):
        got = sampled_auroc_ap(torch.tensor([0.3, 0.4]), torch.zeros(2, 1), mask=torch.zeros(2, 1, dtype=torch.bool))
    assert math.isnan(got.auroc) and got.average_precision.item() == 1.0
    with pytest.warns(UndefinedMetricWarning) as record:  # group 1 has no member
        got = sampled_auroc_ap(torch.tensor([0.3, 0.4]), torch.zeros(2, 1), groups=torch.tensor([0, 2]))
    assert [str(w.message).split(": ")[1].split(".")[0] for w in record] == [
        "1 of 3 groups have only one class (or no members)", "1 of 3 groups have no positive label (or no members)"]
    assert got.grouped_auroc[[0, 2]].tolist() == [1.0, 1.0] and math.isnan(got.grouped_auroc[1])


def test_argument_errors() -> None:
    pos, neg = torch.rand(3), torch.rand(3, 2)
    with pytest.raises(MetricInputError, match=r"shape \[E, K\]"):
        sampled_auroc_ap(pos, torch.rand(2, 2))
    with pytest.raises(TypeError, match="`mask` must be a bool"):
        sampled_auroc_ap(pos, neg, mask=torch.ones(3, 2))
    with pytest.raises(MetricInputError, match="shape of `neg`"):
        sampled_auroc_ap(pos, neg, mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="`neg` must be a real"):
        sampled_auroc_ap(pos, neg > 0.5)
    with pytest.raises(TypeError, match="int64"):
        sampled_auroc_ap(pos, neg, groups=torch.zeros(3, dtype=torch.int32))


def test_summarize_leaves_out_events_without_negatives(path: str) -> None:
    """summarize's sampled AUROC / AP: the pooled scores of the events with at least one negative."""
    gen = torch.Generator().manual_seed(5)
    e, k = 30, 6
    pos, neg = torch.randn(e, generator=gen, dtype=torch.float64), torch.randn(e, k, generator=gen,
                                                                               dtype=torch.float64)
    mask = torch.rand(e, k, generator=gen) < 0.7
    mask[4] = False
    above, equal = metrics.count_above_equal(pos, neg, mask)
    records = {"src": torch.randint(0, 5, (e,), generator=gen), "stratum": torch.zeros(e, dtype=torch.long),
               "batch": torch.arange(e) // 7, "score": pos, "neg_score": neg, "neg_mask": mask,
               "sampled_above": above, "sampled_equal": equal}
    table = summarize(records, ties="average")["sampled"]
    scored = mask.any(1)
    scores, labels, pooled_groups = _pooled(pos[scored], neg[scored], mask[scored], records["batch"][scored])
    assert table["auroc"]["global"] == pytest.approx(sklearn_metrics.roc_auc_score(labels, scores), abs=1e-12)
    assert table["ap"]["global"] == pytest.approx(sklearn_metrics.average_precision_score(labels, scores), abs=1e-12)
    per_batch = _per_group(sklearn_metrics.roc_auc_score, scores, labels, pooled_groups, 5, True)
    assert table["auroc"]["per_batch_mean"] == pytest.approx(float(np.nanmean(per_batch)), abs=1e-12)
    assert table["negatives"] == {"total": int(mask.sum()), "masked": int((~mask).sum())}
