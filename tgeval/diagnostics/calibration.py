r"""Calibration under prior shift (docs/protocol.md §5).

A binary score fitted on sampled data estimates the posterior under the *sampled* class
prior :math:`\pi_s`. If only the prior differs at deployment (:math:`\pi_d`) and the
class-conditional score distributions are unchanged, the posterior odds transform as

.. math::
    \mathrm{odds}_d(x) = \mathrm{odds}_s(x) \cdot
    \frac{\pi_d / (1 - \pi_d)}{\pi_s / (1 - \pi_s)},

i.e. on logits :math:`\ell_d = \ell_s + \mathrm{logit}(\pi_d) - \mathrm{logit}(\pi_s)`.
Hard negatives (historical, degree-matched, ...) usually change the class-conditional
distributions as well; then this correction alone cannot recover deployment probabilities.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor

from tgeval.errors import MetricInputError, ProtocolError

__all__ = ["PriorShiftCorrection", "prior_shift_correction", "PRIOR_SHIFT_WARNING"]

#: the caveat printed with every prior-shift correction (its assumption, stated with the number)
PRIOR_SHIFT_WARNING = ("prior-shift correction is valid only when the class-conditional score distributions are "
                       "unchanged between the sampled and the deployment data (only the class prior differs); "
                       "hard negatives (historical, degree-matched, ...) usually change them, and then the "
                       "corrected probabilities are not deployment probabilities.")


@dataclass(frozen=True)
class PriorShiftCorrection:
    """Corrected scores.

    Attributes:
        logits: float64, shape of the input, corrected log-odds.
        probs: float64, shape of the input, :math:`\\sigma` of ``logits``.
        shift: ``logit(pi_deploy) - logit(pi_sample)``, added to every logit.
        warning: :data:`PRIOR_SHIFT_WARNING`.
    """

    logits: Tensor
    probs: Tensor
    shift: float
    warning: str


def _check_prior(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ProtocolError(f"`{name}` must lie strictly between 0 and 1, but got {value}.")
    return value


def prior_shift_correction(scores_or_probs: Tensor, *, pi_sample: float, pi_deploy: float,
                           logits: bool = True) -> PriorShiftCorrection:
    r"""Move binary scores from the sampled class prior to the deployment prior (docs/protocol.md §5).

    .. math::
        \ell_d = \ell_s + \log\frac{\pi_d}{1 - \pi_d} - \log\frac{\pi_s}{1 - \pi_s}

    Emits one ``UserWarning`` per call and always returns the warning text.

    Args:
        scores_or_probs: float, any shape: logits (``logits=True``) or probabilities in
            ``[0, 1]`` (``logits=False``; 0 and 1 stay 0 and 1).
        pi_sample: positive share of the data the score was fitted on, in ``(0, 1)``.
        pi_deploy: positive share at deployment, in ``(0, 1)``.
        logits: whether the input is logits.

    Returns:
        PriorShiftCorrection: corrected logits and probabilities (float64).

    Raises:
        ProtocolError: for priors outside ``(0, 1)``.
        MetricInputError: for probabilities outside ``[0, 1]``.

    Example:
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # the class-conditional caveat
        ...     out = prior_shift_correction(torch.tensor([0.0]), pi_sample=0.5, pi_deploy=0.2)
        >>> out.probs
        tensor([0.2000], dtype=torch.float64)
    """
    ps, pd = _check_prior("pi_sample", pi_sample), _check_prior("pi_deploy", pi_deploy)
    x = scores_or_probs.double()
    if logits:
        ell = x
    else:
        if bool(((x < 0) | (x > 1) | torch.isnan(x)).any()):
            raise MetricInputError("`scores_or_probs` must be probabilities in [0, 1] with logits=False; "
                                   "pass logits=True for raw scores.")
        ell = torch.logit(x)
    shift = (math.log(pd) - math.log1p(-pd)) - (math.log(ps) - math.log1p(-ps))
    corrected = ell + shift
    warnings.warn(PRIOR_SHIFT_WARNING, UserWarning, stacklevel=2)
    return PriorShiftCorrection(corrected, torch.sigmoid(corrected), shift, PRIOR_SHIFT_WARNING)
