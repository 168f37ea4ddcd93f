r"""Training objectives for link prediction with sampled negatives (docs/protocol.md §5, §9).

Every loss is a pure function of scores (logits, any real numbers, higher = more likely):
``pos`` float ``[B]``, the score of each positive event, and ``neg`` float ``[B, K]``, the
scores of its ``K`` negatives. Row ``i`` of ``neg`` belongs to positive ``i``. An optional
``neg_mask`` bool ``[B, K]`` marks the valid negatives (``False`` = padding, e.g. rows of
a fixed-negatives file that hold fewer than ``K`` negatives); masked entries do not enter
the loss, its gradient, or its normalisation. All losses are computed in log space
(``logsigmoid`` / ``logsumexp``) and stay finite for scores of any magnitude.

``reduction`` is ``"mean"`` (the default, a scalar), ``"sum"`` (a scalar) or ``"none"``
(per-term losses, shape documented per function, masked terms ``0``).

Example:
    >>> pos, neg = torch.tensor([2.0]), torch.tensor([[0.0, 1.0]])
    >>> get_loss("bpr")(pos, neg)
    tensor(0.2201)
"""

from __future__ import annotations

from typing import Callable, Literal, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from tgeval.errors import DistributedError, ProtocolError

__all__ = ["Reduction", "LossFn", "LOSSES", "bce_loss", "bpr_loss", "sampled_softmax_loss", "get_loss", "term_count",
           "check_built_in"]

Reduction = Literal["mean", "sum", "none"]
_REDUCTIONS = ("mean", "sum", "none")

#: ``loss(pos [B], neg [B, K]) -> Tensor``: the call shape the training loop uses.
LossFn = Callable[..., Tensor]


def _check(pos: Tensor, neg: Tensor, neg_mask: Optional[Tensor], reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}.")
    if not (pos.is_floating_point() and neg.is_floating_point()):
        raise TypeError(f"scores must be floating point, got pos {pos.dtype} and neg {neg.dtype}. "
                        f"Pass logits, e.g. `scores.float()`.")
    if pos.dim() != 1 or neg.dim() != 2 or neg.size(0) != pos.size(0):
        raise ValueError(f"`pos` must be [B] and `neg` [B, K] with the same B, got pos {tuple(pos.shape)} "
                         f"and neg {tuple(neg.shape)}. Reshape negatives to one row per positive.")
    if neg_mask is not None:
        if neg_mask.dtype != torch.bool or neg_mask.shape != neg.shape:
            raise ValueError(f"`neg_mask` must be a bool tensor shaped like `neg` {tuple(neg.shape)}, got "
                             f"{neg_mask.dtype} {tuple(neg_mask.shape)}.")


def _reduce(terms: Tensor, count: Tensor | int, reduction: str) -> Tensor:
    """``terms`` already hold 0 at masked entries; ``count`` is the number of valid terms."""
    if reduction == "none":
        return terms
    total = terms.sum()
    if reduction == "sum":
        return total
    if isinstance(count, Tensor):  # no valid term: 0 (nothing to learn), not nan
        return total / count.clamp(min=1).to(total.dtype)
    return total / max(count, 1)


def bce_loss(pos: Tensor, neg: Tensor, *, neg_mask: Optional[Tensor] = None,
             reduction: Reduction = "mean") -> Tensor:
    r"""Binary cross-entropy: each positive has label 1, each negative label 0.

    With :math:`\ell(s, y) = -y \log\sigma(s) - (1 - y)\log(1 - \sigma(s))`,

    .. math::
        L = \frac{1}{B + M}\Big(\sum_{i} -\log\sigma(s^+_i)
            + \sum_{i,k:\, m_{ik}} -\log\sigma(-s^-_{ik})\Big)

    where :math:`M = \sum_{ik} m_{ik}` is the number of valid negatives (:math:`BK` without a
    mask): one average over all :math:`B(1 + K)` terms, so each positive weighs as much as
    each negative. (TGN-style code adds the mean over positives and the mean over negatives;
    for ``K = 1`` that is exactly twice this value.)

    Args:
        pos (Tensor): float ``[B]`` positive logits.
        neg (Tensor): float ``[B, K]`` negative logits.
        neg_mask (Tensor, optional): bool ``[B, K]``, ``True`` for valid negatives.
        reduction (str): ``"mean"`` (above), ``"sum"`` (the numerator), or ``"none"``:
            float ``[B, 1 + K]`` per-term losses, column 0 the positives.

    Returns:
        Tensor: a scalar, or ``[B, 1 + K]`` with ``reduction="none"``.

    Example:
        >>> # (-log sigmoid(0) - log(1 - sigmoid(0))) / 2 = log 2
        >>> bce_loss(torch.tensor([0.0]), torch.tensor([[0.0]]))
        tensor(0.6931)
    """
    _check(pos, neg, neg_mask, reduction)
    neg_terms = -F.logsigmoid(-neg)
    if neg_mask is not None:
        neg_terms = neg_terms.masked_fill(~neg_mask, 0.0)
    terms = torch.cat([-F.logsigmoid(pos)[:, None], neg_terms], dim=1)
    return _reduce(terms, term_count(bce_loss, neg, neg_mask), reduction)


def bpr_loss(pos: Tensor, neg: Tensor, *, neg_mask: Optional[Tensor] = None,
             reduction: Reduction = "mean") -> Tensor:
    r"""Bayesian personalised ranking: mean of :math:`-\log\sigma(s^+_i - s^-_{ik})` over pairs.

    .. math::
        L = \frac{1}{M}\sum_{i,k:\, m_{ik}} -\log\sigma(s^+_i - s^-_{ik})

    with :math:`M` the number of valid (positive, negative) pairs (:math:`BK` without a mask).
    Its gradients are :math:`\partial L / \partial s^+_i = -\frac{1}{M}\sum_k (1 -
    \sigma(s^+_i - s^-_{ik}))` and :math:`\partial L / \partial s^-_{ik} = \frac{1}{M}(1 -
    \sigma(s^+_i - s^-_{ik}))`.

    Args:
        pos (Tensor): float ``[B]`` positive logits.
        neg (Tensor): float ``[B, K]`` negative logits.
        neg_mask (Tensor, optional): bool ``[B, K]``, ``True`` for valid negatives.
        reduction (str): ``"mean"``, ``"sum"``, or ``"none"``: float ``[B, K]`` per pair.

    Returns:
        Tensor: a scalar, or ``[B, K]`` with ``reduction="none"``.

    Example:
        >>> # -log sigmoid(1 - 1) = log 2
        >>> bpr_loss(torch.tensor([1.0]), torch.tensor([[1.0]]))
        tensor(0.6931)
    """
    _check(pos, neg, neg_mask, reduction)
    terms = -F.logsigmoid(pos[:, None] - neg)
    if neg_mask is not None:
        terms = terms.masked_fill(~neg_mask, 0.0)
    return _reduce(terms, term_count(bpr_loss, neg, neg_mask), reduction)


def sampled_softmax_loss(pos: Tensor, neg: Tensor, *, log_q: Optional[Tensor] = None,
                         log_q_pos: Optional[Tensor] = None, neg_mask: Optional[Tensor] = None,
                         reduction: Reduction = "mean") -> Tensor:
    r"""Sampled softmax: cross-entropy of the positive among itself and its ``K`` negatives.

    With corrected logits :math:`\tilde s^+_i = s^+_i - \log q^+_i` and
    :math:`\tilde s^-_{ik} = s^-_{ik} - \log q_{ik}`,

    .. math::
        L = \frac{1}{B}\sum_i \Big(-\tilde s^+_i + \log\big(e^{\tilde s^+_i}
            + \sum_{k:\, m_{ik}} e^{\tilde s^-_{ik}}\big)\Big)

    **Log-q correction** (Bengio & Senécal 2008; Jean et al. 2015; Yi et al. 2019): when
    negatives are drawn from a proposal :math:`q(v \mid x)`, the uncorrected loss is
    minimised by :math:`s_v = \log p(v \mid x) - \log q(v \mid x) + c` (the Bayes target of
    docs/protocol.md §5), not by the full-catalog softmax :math:`\log p(v \mid x) + c`. Subtracting
    :math:`\log q` from the logit of every candidate drawn from :math:`q` makes
    :math:`\frac{1}{K}\sum_k e^{\tilde s^-_{ik}}` an unbiased estimate of the full partition
    function :math:`\sum_v e^{s_v}` for draws *with* replacement (for distinct draws it is the
    usual approximation), so the fixed point is again :math:`\log p + c`.

    * ``log_q`` (float ``[B, K]``): :math:`\log q` of each negative; ``None`` = no correction
      (:math:`\log q_{ik} = 0`).
    * ``log_q_pos`` (float ``[B]``): :math:`\log q` of each positive's destination under the
      same proposal; ``None`` = the positive is not corrected (:math:`\log q^+_i = 0`).
      Correcting the positive too (as TensorFlow's ``sampled_softmax_loss`` does) is the
      usual choice; then adding one constant to every ``log_q`` and ``log_q_pos`` (e.g.
      :math:`\log K` for expected counts) changes nothing. Without ``log_q_pos`` such a
      constant shifts the positive against the negatives.

    The sampler guarantees negatives differ from the positive, so no "accidental hit"
    removal is done here.

    Args:
        pos (Tensor): float ``[B]`` positive logits.
        neg (Tensor): float ``[B, K]`` negative logits.
        log_q (Tensor, optional): float ``[B, K]``, log proposal probability of each negative.
        log_q_pos (Tensor, optional): float ``[B]``, log proposal probability of each positive.
        neg_mask (Tensor, optional): bool ``[B, K]``, ``True`` for valid negatives (others
            get logit :math:`-\infty`).
        reduction (str): ``"mean"`` (over the ``B`` positives), ``"sum"``, or ``"none"``:
            float ``[B]``.

    Returns:
        Tensor: a scalar, or ``[B]`` with ``reduction="none"``.

    Example:
        >>> # -log(e^0 / (e^0 + e^0 + e^0)) = log 3
        >>> sampled_softmax_loss(torch.tensor([0.0]), torch.tensor([[0.0, 0.0]]))
        tensor(1.0986)
    """
    _check(pos, neg, neg_mask, reduction)
    if log_q is not None and log_q.shape != neg.shape:
        raise ValueError(f"`log_q` must be shaped like `neg` {tuple(neg.shape)} (one log q per negative), "
                         f"got {tuple(log_q.shape)}.")
    if log_q_pos is not None and log_q_pos.shape != pos.shape:
        raise ValueError(f"`log_q_pos` must be shaped like `pos` {tuple(pos.shape)}, got {tuple(log_q_pos.shape)}.")
    pos_logit = pos if log_q_pos is None else pos - log_q_pos
    neg_logit = neg if log_q is None else neg - log_q
    if neg_mask is not None:
        neg_logit = neg_logit.masked_fill(~neg_mask, float("-inf"))
    logits = torch.cat([pos_logit[:, None], neg_logit], dim=1)  # [B, 1 + K], positive in column 0
    terms = torch.logsumexp(logits, dim=1) - pos_logit
    return _reduce(terms, term_count(sampled_softmax_loss, neg, neg_mask), reduction)


#: Losses by name (``get_loss``, the CLI's ``--loss``).
LOSSES: dict[str, LossFn] = {
    "bce": bce_loss,
    "bpr": bpr_loss,
    "sampled_softmax": sampled_softmax_loss,
}


def term_count(loss: LossFn, neg: Tensor, neg_mask: Optional[Tensor] = None) -> Tensor | int:
    """The number of terms the mean of a built-in ``loss`` divides by, for a batch of negatives
    ``neg [B, K]`` (and ``neg_mask``): ``B + M`` for BCE, ``M`` for BPR, ``B`` for the sampled
    softmax, with ``M`` the valid negatives. Distributed training sums each rank's terms
    and divides by the whole batch's count once.

    Raises:
        DistributedError: for a loss that is not one of :data:`LOSSES`.
    """
    check_built_in(loss)
    valid = neg.numel() if neg_mask is None else neg_mask.sum()
    if loss is bce_loss:
        return neg.size(0) + valid
    return valid if loss is bpr_loss else neg.size(0)


def check_built_in(loss: LossFn) -> None:
    """Raise :class:`~tgeval.errors.DistributedError` unless ``loss`` is one of :data:`LOSSES` (whose
    :func:`term_count` is known)."""
    if not any(loss is known for known in LOSSES.values()):
        raise DistributedError(f"the number of terms of {getattr(loss, '__name__', loss)!r} is not known; distributed "
                               f"training splits a batch's terms across ranks and needs one of the built-in losses "
                               f"{sorted(LOSSES)}.")


def get_loss(name: str) -> LossFn:
    """The loss function registered as ``name`` (``"bce"``, ``"bpr"``, ``"sampled_softmax"``).

    Raises:
        ProtocolError: for an unknown name.
    """
    key = name.strip().lower().replace("-", "_")
    if key not in LOSSES:
        raise ProtocolError(f"unknown loss {name!r}; choose one of {sorted(LOSSES)}.")
    return LOSSES[key]
