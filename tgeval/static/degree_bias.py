r"""Degree heterogeneity and the degree-only null scorer (SPEC §10).

A uniformly drawn edge reaches a node in proportion to its degree, a uniform node pair does
not. If :math:`\log k \sim \mathcal N(\mu, \sigma^2)` over nodes, an edge endpoint's degree is
size-biased, :math:`\log k \sim \mathcal N(\mu + \sigma^2, \sigma^2)`; so with independent
endpoints (no assortativity) :math:`\log(k_u k_v)` is :math:`\mathcal N(2\mu + 2\sigma^2, 2\sigma^2)`
for an edge and :math:`\mathcal N(2\mu, 2\sigma^2)` for a uniform pair, and preferential
attachment's AUROC is

.. math::
    P\big(\log k_u k_v > \log k_{u'} k_{v'}\big) = \Phi\!\left(\frac{2\sigma^2}{\sqrt{4\sigma^2}}\right) = \Phi(\sigma).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from tgeval.errors import StaticGraphError

__all__ = ["lognormal_sigma", "pa_auroc_analytic"]


def lognormal_sigma(degree: Tensor) -> Tensor:
    r"""Maximum-likelihood :math:`\hat\sigma` of a log-normal fitted to the degrees :math:`\ge 1`.

    .. math::
        \hat\sigma = \Big(\tfrac{1}{m} \sum_{k_v \ge 1} (\log k_v - \hat\mu)^2\Big)^{1/2},
        \qquad \hat\mu = \tfrac{1}{m} \sum_{k_v \ge 1} \log k_v

    (the population standard deviation of the log degrees, :math:`m` nodes of degree :math:`\ge 1`).

    Args:
        degree (Tensor): integer or float ``[N]``.

    Returns:
        Tensor: 0-dim float64, on ``degree``'s device.

    Raises:
        StaticGraphError: no node has degree ``>= 1``.

    Example:
        >>> lognormal_sigma(torch.tensor([0, 1, 1, 4, 4]))  # log degrees 0, 0, log 4, log 4
        tensor(0.6931, dtype=torch.float64)
    """
    logs = torch.log(degree[degree >= 1].double())
    if logs.numel() == 0:
        raise StaticGraphError("lognormal_sigma needs at least one node of degree >= 1, got none (an empty graph).")
    return torch.sqrt(torch.mean((logs - logs.mean()) ** 2))


def pa_auroc_analytic(sigma: Tensor) -> Tensor:
    r"""Preferential attachment's expected AUROC against uniform negatives, :math:`\Phi(\sigma)`
    (module docstring): float64, the shape of ``sigma``.

    Example:
        >>> pa_auroc_analytic(torch.tensor(1.0, dtype=torch.float64))
        tensor(0.8413, dtype=torch.float64)
    """
    return 0.5 * (1.0 + torch.erf(sigma.double() / math.sqrt(2.0)))
