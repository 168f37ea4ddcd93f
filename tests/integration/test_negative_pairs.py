"""The engine scores corrupted-source negatives and ignores padded slots."""

import pytest
import torch
from sklearn.metrics import roc_auc_score

from tgeval import evaluate
from tgeval.data.split import Segment
from tgeval.eval.protocol import Protocol
from tgeval.samplers.base import NegativeSampler, Negatives
from tests.conftest import make_stream
from tests.helpers import TableModel


class _Given(NegativeSampler):
    """Returns fixed negatives by replay position (a real sampler, no mock)."""

    name = "given"

    def __init__(self, dst, src=None, mask=None):
        self.dst, self.src, self.mask = dst, src, mask

    def sample(self, batch, num_negatives, generator=None):
        rows = batch.position - 2  # the segment starts at event 2
        pick = (lambda x: None if x is None else x[rows])
        return Negatives(self.dst[rows], pick(self.src), pick(self.mask))


def test_corrupted_sources_and_padding():
    table = torch.arange(36, dtype=torch.float64).view(6, 6) % 7  # s(u, v) = (6u + v) mod 7
    model = TableModel(table)
    data = make_stream([0, 1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4])
    segment = Segment("test", 2, 4, 3, 4)
    dst = torch.tensor([[0, 5, 1], [2, 2, 0]])
    src = torch.tensor([[4, 4, 1], [5, 0, 3]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    result = evaluate(model, data, segment, Protocol(num_negatives=3), sampler=_Given(dst, src, mask))
    rec = result.records
    pos = torch.tensor([table[2, 3], table[3, 4]])
    neg = table[src, dst]
    assert torch.equal(rec["score"], pos) and torch.equal(rec["neg_score"], neg)
    for i in range(2):
        valid = neg[i][mask[i]]
        assert rec["sampled_above"][i] == int((valid > pos[i]).sum())
        assert rec["sampled_equal"][i] == int((valid == pos[i]).sum())
    labels = [1, 1] + [0] * int(mask.sum())
    scores = pos.tolist() + neg[mask].tolist()
    assert result.metrics["sampled"]["auroc"]["global"] == pytest.approx(roc_auc_score(labels, scores))
    assert result.metrics["sampled"]["negatives"] == {"total": 5, "masked": 1}
    assert "neg_src" in rec and "neg_mask" in rec


def test_negatives_shape_check():
    with pytest.raises(ValueError, match="shape of dst"):
        Negatives(torch.zeros(2, 3, dtype=torch.long), mask=torch.ones(2, 2, dtype=torch.bool))
