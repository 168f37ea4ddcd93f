"""Prior-shift correction (docs/protocol.md §5)."""

from __future__ import annotations

import math

import pytest
import torch

from tgeval.diagnostics.calibration import PRIOR_SHIFT_WARNING, prior_shift_correction
from tgeval.errors import MetricInputError, ProtocolError


def test_matches_odds_formula_by_hand_and_warns():
    p = torch.tensor([0.1, 0.5, 0.9])
    with pytest.warns(UserWarning, match="class-conditional"):
        out = prior_shift_correction(p, pi_sample=0.5, pi_deploy=0.01, logits=False)
    factor = (0.01 / 0.99) / (0.5 / 0.5)
    for prob, got in zip(p.tolist(), out.probs.tolist()):
        odds = prob / (1 - prob) * factor
        assert got == pytest.approx(odds / (1 + odds), rel=1e-12)
    assert out.shift == pytest.approx(math.log(factor))
    assert out.warning == PRIOR_SHIFT_WARNING and "hard negatives" in out.warning


def test_logit_input_adds_log_odds_difference():
    x = torch.tensor([-2.0, 0.0, 3.0])
    with pytest.warns(UserWarning):
        out = prior_shift_correction(x, pi_sample=1 / 21, pi_deploy=0.2)
    shift = math.log(0.2 / 0.8) - math.log((1 / 21) / (20 / 21))
    assert torch.allclose(out.logits, x.double() + shift)
    assert torch.allclose(out.probs, torch.sigmoid(x.double() + shift))
    with pytest.warns(UserWarning):
        same = prior_shift_correction(x, pi_sample=0.3, pi_deploy=0.3)
    assert torch.equal(same.logits, x.double())


def test_rejects_bad_priors_and_probabilities():
    with pytest.raises(ProtocolError, match="pi_deploy"):
        prior_shift_correction(torch.zeros(1), pi_sample=0.5, pi_deploy=1.0)
    with pytest.raises(MetricInputError, match="probabilities"):
        prior_shift_correction(torch.tensor([1.5]), pi_sample=0.5, pi_deploy=0.5, logits=False)
