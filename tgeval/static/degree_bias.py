r"""Degree heterogeneity and the degree-only null scorer (docs/protocol.md §10).

**Unipartite graphs.** A uniformly drawn edge reaches a node in proportion to its degree, a
uniform node pair does not. If :math:`\log k \sim \mathcal N(\mu, \sigma^2)` over nodes, an edge
endpoint's degree is size-biased: its density is :math:`k f(k) / \mathbb E[k]`, and multiplying
a log-normal density by :math:`k = e^{x}` shifts the normal's mean by :math:`\sigma^2`, so
:math:`\log k \sim \mathcal N(\mu + \sigma^2, \sigma^2)`. With independent endpoints (no
assortativity) :math:`\log(k_u k_v)` is :math:`\mathcal N(2\mu + 2\sigma^2, 2\sigma^2)` for an edge
and :math:`\mathcal N(2\mu, 2\sigma^2)` for a uniform pair, and preferential attachment's AUROC
(the probability that a positive outscores a negative, two independent normals) is

.. math::
    P\big(\log k_u k_v > \log k_{u'} k_{v'}\big) = \Phi\!\left(\frac{2\sigma^2}{\sqrt{4\sigma^2}}\right) = \Phi(\sigma).

**Bipartite graphs.** Every edge joins a source-side node :math:`s` to a destination-side node
:math:`d`, and uniform negatives are uniform pairs of one node per side. Each side has its own
log-normal, :math:`\log k_s \sim \mathcal N(\mu_s, \sigma_s^2)` and :math:`\log k_d \sim
\mathcal N(\mu_d, \sigma_d^2)` over the side's nodes. An edge's source endpoint is size-biased
within the source side, :math:`\mathcal N(\mu_s + \sigma_s^2, \sigma_s^2)`, and likewise its
destination endpoint, :math:`\mathcal N(\mu_d + \sigma_d^2, \sigma_d^2)`. With independent
endpoints and :math:`S^2 = \sigma_s^2 + \sigma_d^2`,

.. math::
    \log k_s k_d \sim \mathcal N(\mu_s + \mu_d + S^2,\ S^2) \text{ (edge)}, \qquad
    \log k_{s'} k_{d'} \sim \mathcal N(\mu_s + \mu_d,\ S^2) \text{ (uniform pair)},

so the difference of a positive's and a negative's log score is :math:`\mathcal N(S^2, 2S^2)` and

.. math::
    \mathrm{AUROC}_{PA} = \Phi\!\left(\frac{S^2}{\sqrt{2 S^2}}\right)
    = \Phi\!\left(\sqrt{\frac{\sigma_s^2 + \sigma_d^2}{2}}\right),

which is :math:`\Phi(\sigma)` again when :math:`\sigma_s = \sigma_d = \sigma`. The unipartite formula
applied to a bipartite graph is wrong twice: one :math:`\sigma` fitted to both sides together also
measures the gap between the sides' means :math:`\mu_s \ne \mu_d` (it is not the spread that the
size bias acts on), and its uniform pairs include pairs within one side.

The formulas describe the degrees that PA scores. In a held-out edge split PA scores training
degrees, and each endpoint of a test edge has lost that edge from them: the positives' shift is
then about :math:`1/k` short of :math:`\sigma^2` per endpoint, which lowers the measured AUROC below
the formula where :math:`\sigma^2` is not large against :math:`1/k` (many nodes of low degree).

**Degree-corrected negatives** draw each endpoint in proportion to its degree (within its side
when bipartite), i.e. with the positives' size-biased endpoint distributions, so both scores
have the same law and PA's AUROC is :math:`1/2` on either kind of graph.
"""

from __future__ import annotations

import math
from typing import Optional

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


def pa_auroc_analytic(sigma: Tensor, sigma_destination: Optional[Tensor] = None) -> Tensor:
    r"""Preferential attachment's expected AUROC against uniform negatives (module docstring):
    :math:`\Phi(\sigma)` for a unipartite graph, or :math:`\Phi\big(\sqrt{(\sigma_s^2 + \sigma_d^2)/2}\big)`
    for a bipartite one, ``sigma`` then being the source side's :math:`\sigma_s` and
    ``sigma_destination`` the destination side's :math:`\sigma_d`: float64, the broadcast shape.

    Example:
        >>> pa_auroc_analytic(torch.tensor(1.0, dtype=torch.float64))
        tensor(0.8413, dtype=torch.float64)
        >>> pa_auroc_analytic(torch.tensor(0.2), torch.tensor(1.4))  # Phi(1)
        tensor(0.8413, dtype=torch.float64)
    """
    if sigma_destination is not None:
        sigma = torch.sqrt((sigma.double() ** 2 + sigma_destination.double() ** 2) / 2.0)
    return 0.5 * (1.0 + torch.erf(sigma.double() / math.sqrt(2.0)))
