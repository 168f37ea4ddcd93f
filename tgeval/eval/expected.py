r"""Expected sampled-K ranking metrics from full ranks (docs/protocol.md §7), and nested actual draws.

One all-entity pass gives, per event, the number ``a`` of catalog candidates scoring strictly
above the positive, the number ``b`` scoring equal to it, and the number ``M = N - 1`` of
non-positive candidates (after exclusions; ``candidates`` in the result records). Under
uniform sampling of ``K`` of those ``M`` candidates *without replacement*, the numbers
``(H, T)`` of drawn candidates above / equal follow the multivariate hypergeometric law

.. math::
    P(H = h, T = t) = \frac{\binom{a}{h}\binom{b}{t}\binom{M - a - b}{K - h - t}}{\binom{M}{K}},

and the sampled rank is :math:`1 + H + T/2` (``"average"``), :math:`1 + H + T`
(``"pessimistic"``) or :math:`1 + H` (``"optimistic"``). The two one-sided conventions only
need a univariate law: :math:`H + T \sim \mathrm{Hyp}(M, a + b, K)` and
:math:`H \sim \mathrm{Hyp}(M, a, K)`. Without ties all three agree, and the expected
reciprocal rank equals the closed form
:math:`[\binom{N}{K+1} - \binom{N-r}{K+1}] / [r\binom{N-1}{K}]` with :math:`r = 1 + a`.

Exact evaluation (no Monte-Carlo, no normal approximation)
    Every binomial coefficient has a *small* lower index (``<= K``), so it is computed as

    .. math::
        \log\binom{x}{j} = \sum_{i=0}^{j-1}\log(x - i) - \log j!

    with a cumulative sum over ``i`` (vectorised over events): each term carries a relative
    error of about ``1e-16``, so log-probabilities are accurate to about ``1e-13`` absolute
    even for ``N = 10^6`` (the plain ``lgamma(10^6)`` route would lose ~``1e-9`` to
    cancellation). ``lgamma`` is used only for ``log j!`` with ``j <= K``.

    * One-sided conventions: a single sum over ``j = 0..K`` of the hypergeometric pmf,
      :math:`O(K)` per event.
    * ``"average"``: the double sum over the triangle ``h + t <= K``, restricted to
      ``h <= min(K, a)`` and ``t <= min(K, b)``. The value only depends on ``2h + t``, but
      the probability of each ``(h, t)`` still has to be formed, so the grid is evaluated
      exactly as an ``[events, h, t]`` tensor of ``min(K, max a) x min(K, max b)`` cells per
      event (maxima over the input); events are processed in chunks of about ``2^22`` cells
      (a single event's grid, up to ``(K + 1)^2`` cells, can exceed that for very large K).
      Tie-free input has a ``t`` axis of length 1, so it costs :math:`O(K)` per event in
      every convention; one tied event makes every event cost the tied grid.

    Probabilities are summed after ``exp`` (they are ``<= 1``; underflowing terms are
    negligible against the unit total), in float64.

If ``K >= M`` for an event, every candidate is drawn and the exact full-rank value is returned
(``K = None`` means "full catalog" for every event).

:func:`nested_draw_ranks` simulates actual draws: the first ``K`` elements of **one** random
permutation of an event's candidates, shared across all ``K`` (so samples are nested), with a
counter-based generator keyed by ``(seed, event id, draw index)``: an event's draws do not
depend on which other events are in the call.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import torch
from torch import Tensor

from tgeval.core.choices import DEFAULT_SWEEP
from tgeval.errors import MetricInputError, ProtocolError
from tgeval.eval.metrics import TiePolicy, check_ties, rank_from_counts
from tgeval.eval.stats import kendall_tau
from tgeval.core.rng import GOLDEN_GAMMA, as_int64, to_unit_interval, xorshift_multiply

__all__ = [
    "expected_reciprocal_rank",
    "expected_hits_at_k",
    "k_sweep",
    "nested_draw_ranks",
    "DEFAULT_SWEEP",
]


_GRID_BUDGET = 1 << 22  # max elements of one [chunk, h, t] float64 grid


# --------------------------------------------------------------------------- validation


def _check_K(K: Optional[int], name: str = "K") -> Optional[int]:
    if K is None:
        return None
    if isinstance(K, bool) or not isinstance(K, int) or K < 0:
        raise ProtocolError(f"`{name}` must be a non-negative int or None (full catalog), but got {K!r}.")
    return K


def _check_counts(above: Tensor, equal: Tensor, num_candidates: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Validate the three per-event count vectors and return them as int64 on one device."""
    for name, x in (("above", above), ("equal", equal), ("num_candidates", num_candidates)):
        if not isinstance(x, Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor, but got {type(x).__name__}.")
        if x.dim() != 1:
            raise MetricInputError(f"`{name}` must be 1-D [E], but has shape {tuple(x.shape)}.")
        if x.dtype.is_floating_point or x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"`{name}` must hold integer counts, but has dtype {x.dtype}.")
    if not (above.numel() == equal.numel() == num_candidates.numel()):
        raise MetricInputError(
            f"`above`, `equal` and `num_candidates` must have one entry per event, but have "
            f"{above.numel()}, {equal.numel()} and {num_candidates.numel()} entries."
        )
    if not (above.device == equal.device == num_candidates.device):
        raise MetricInputError("`above`, `equal` and `num_candidates` must be on one device.")
    a, b, m = above.long(), equal.long(), num_candidates.long()
    if a.numel() and bool(((a < 0) | (b < 0) | (a + b > m)).any()):  # one host sync
        bad = int(torch.nonzero((a < 0) | (b < 0) | (a + b > m))[0, 0])
        raise MetricInputError(
            f"counts must satisfy 0 <= above, 0 <= equal and above + equal <= num_candidates, but event "
            f"{bad} has above={int(a[bad])}, equal={int(b[bad])}, num_candidates={int(m[bad])}."
        )
    return a, b, m


# --------------------------------------------------------------------------- exact log-binomials


def _log_comb_table(x: Tensor, J: int) -> Tensor:
    r"""float64 ``[E, J + 1]``: :math:`\log\binom{x_e}{j}` for ``j = 0..J`` (``-inf`` if ``j > x_e``)."""
    x64 = x.to(torch.float64)
    i = torch.arange(J, dtype=torch.float64, device=x.device)
    diff = x64.unsqueeze(1) - i  # [E, J]
    terms = torch.where(diff > 0, torch.log(diff.clamp_min(1.0)), torch.full_like(diff, -math.inf))
    cum = torch.cat([torch.zeros_like(x64).unsqueeze(1), torch.cumsum(terms, dim=1)], dim=1)
    log_fact = torch.lgamma(torch.arange(J + 1, dtype=torch.float64, device=x.device) + 1.0)
    return cum - log_fact


def _hypergeom_log_pmf(m: Tensor, success: Tensor, K: int) -> Tensor:
    r"""float64 ``[E, K + 1]``: :math:`\log P(X = j)`, :math:`X \sim \mathrm{Hyp}(m, \text{success}, K)`.

    Requires ``K <= m`` for every event.
    """
    lc_s = _log_comb_table(success, K)
    lc_f = _log_comb_table(m - success, K).flip(1)  # column j holds log C(m - s, K - j)
    lc_m = _log_comb_table(m, K)[:, K]
    return lc_s + lc_f - lc_m.unsqueeze(1)


def _one_sided(m: Tensor, success: Tensor, K: int, weight: Tensor) -> Tensor:
    """E[weight[X]] with X ~ Hyp(m, success, K), chunked over events; ``weight`` float64 [K + 1]."""
    out = torch.empty(m.numel(), dtype=torch.float64, device=m.device)
    chunk = max(1, _GRID_BUDGET // (K + 1))
    for s in range(0, m.numel(), chunk):
        p = torch.exp(_hypergeom_log_pmf(m[s:s + chunk], success[s:s + chunk], K))
        out[s:s + chunk] = p @ weight
    return out


def _average_grid(a: Tensor, b: Tensor, m: Tensor, K: int, weight_fn: Any) -> Tensor:
    r"""E[w(H, T)] under the multivariate hypergeometric law, exact double sum over ``(h, t)``.

    ``weight_fn(h, t)`` maps float64 grids ``[Ha, 1]``, ``[1, Tb]`` to float64 ``[Ha, Tb]``.
    """
    E = m.numel()
    out = torch.empty(E, dtype=torch.float64, device=m.device)
    if E == 0:
        return out
    Ha = min(K, int(a.max())) + 1  # host sync: grid extent
    Tb = min(K, int(b.max())) + 1
    dev = m.device
    h = torch.arange(Ha, device=dev)
    t = torch.arange(Tb, device=dev)
    rest = K - h.unsqueeze(1) - t.unsqueeze(0)  # [Ha, Tb] draws left for the "below" class
    valid = rest >= 0
    rest_idx = rest.clamp_min(0)
    w = weight_fn(h.to(torch.float64).unsqueeze(1), t.to(torch.float64).unsqueeze(0))  # [Ha, Tb]
    chunk = max(1, _GRID_BUDGET // (Ha * Tb + K + 1))
    for s in range(0, E, chunk):
        ac, bc, mc = a[s:s + chunk], b[s:s + chunk], m[s:s + chunk]
        lc_a = _log_comb_table(ac, Ha - 1)  # [C, Ha]
        lc_b = _log_comb_table(bc, Tb - 1)  # [C, Tb]
        lc_c = _log_comb_table(mc - ac - bc, K)  # [C, K + 1]
        lc_m = _log_comb_table(mc, K)[:, K]  # [C]
        log_p = (lc_a.unsqueeze(2) + lc_b.unsqueeze(1) + lc_c[:, rest_idx] - lc_m[:, None, None])
        p = torch.where(valid, torch.exp(log_p), torch.zeros((), dtype=torch.float64, device=dev))
        out[s:s + chunk] = (p * w).sum(dim=(1, 2))
    return out


def _expected(a: Tensor, b: Tensor, m: Tensor, K: Optional[int], ties: TiePolicy,
              full: Tensor, single_weight: Any, grid_weight: Any) -> Tensor:
    """Shared driver: exact ``full`` where ``K`` covers the catalog, sampled expectation elsewhere."""
    out = full.clone()
    if K is None:
        return out
    sampled = m > K
    idx = torch.nonzero(sampled).flatten()
    if idx.numel() == 0:
        return out
    a_s, b_s, m_s = a[idx], b[idx], m[idx]
    if ties == "average":
        val = _average_grid(a_s, b_s, m_s, K, grid_weight)
    else:
        success = a_s + b_s if ties == "pessimistic" else a_s
        j = torch.arange(K + 1, dtype=torch.float64, device=m.device)
        val = _one_sided(m_s, success, K, single_weight(j))
    out[idx] = val
    return out


# --------------------------------------------------------------------------- public API


def expected_reciprocal_rank(above: Tensor, equal: Tensor, num_candidates: Tensor, K: Optional[int], *,
                             ties: TiePolicy = "average") -> Tensor:
    r"""Expected sampled reciprocal rank when ``K`` of the ``M`` non-positive candidates are drawn.

    With :math:`(H, T)` the drawn candidates above / equal (multivariate hypergeometric, see
    the module docstring):

    .. math::
        \mathbb{E}\left[\frac{1}{1 + H + T/2}\right] \;(\text{average}),\qquad
        \mathbb{E}\left[\frac{1}{1 + H + T}\right] \;(\text{pessimistic}),\qquad
        \mathbb{E}\left[\frac{1}{1 + H}\right] \;(\text{optimistic}).

    Without ties this is :math:`[\binom{N}{K+1} - \binom{N-r}{K+1}] / [r\binom{N-1}{K}]`,
    ``N = M + 1``, ``r = 1 + a``. Where ``K >= M`` (or ``K is None``) the exact full-rank
    reciprocal :math:`1 / r` under ``ties`` is returned. Exact in float64 for ``N = 10^6``.
    Events need not be time-sorted.

    Args:
        above (Tensor): integer ``[E]``, catalog candidates strictly above the positive.
        equal (Tensor): integer ``[E]``, catalog candidates tied with the positive.
        num_candidates (Tensor): integer ``[E]``, ``M = N - 1`` non-positive candidates per
            event (may differ per event), ``above + equal <= num_candidates``.
        K (int or None): sample size, ``K >= 0``; ``None`` = full catalog.
        ties (str): ``"average"`` (default), ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        Tensor: float64 ``[E]``.

    Raises:
        MetricInputError: if counts are inconsistent.
        ProtocolError: if ``K`` or ``ties`` is invalid.
        TypeError: if counts are not integer tensors.

    Example:
        >>> a, b, m = torch.tensor([0, 3, 2]), torch.tensor([0, 0, 2]), torch.tensor([9, 9, 9])
        >>> expected_reciprocal_rank(a, b, m, 1, ties="average")
        tensor([1.0000, 0.8333, 0.8148], dtype=torch.float64)
        >>> expected_reciprocal_rank(a, b, m, 9, ties="average")  # K = N - 1: 1 / r
        tensor([1.0000, 0.2500, 0.2500], dtype=torch.float64)
    """
    ties = check_ties(ties)
    K = _check_K(K)
    a, b, m = _check_counts(above, equal, num_candidates)
    full = 1.0 / rank_from_counts(a, b, ties=ties)
    if ties == "average":
        return _expected(a, b, m, K, ties, full, None, lambda h, t: 1.0 / (1.0 + h + 0.5 * t))
    return _expected(a, b, m, K, ties, full, lambda j: 1.0 / (1.0 + j), None)


def expected_hits_at_k(above: Tensor, equal: Tensor, num_candidates: Tensor, K: Optional[int], k: int, *,
                       ties: TiePolicy = "average") -> Tensor:
    r"""Expected sampled Hits@k, :math:`P(\text{sampled rank} \le k)`, when ``K`` of ``M`` are drawn.

    .. math::
        P(2H + T \le 2k - 2) \;(\text{average}),\qquad
        P(H + T \le k - 1) \;(\text{pessimistic}),\qquad
        P(H \le k - 1) \;(\text{optimistic}),

    matching :func:`~tgeval.eval.metrics.hits_at_k` (a half-integer average rank ``k + 1/2``
    is not a hit). Where ``K >= M`` (or ``K is None``) the exact full-rank indicator is
    returned.

    Args:
        above (Tensor): integer ``[E]``, candidates strictly above the positive.
        equal (Tensor): integer ``[E]``, candidates tied with the positive.
        num_candidates (Tensor): integer ``[E]``, ``M = N - 1`` per event.
        K (int or None): sample size, ``K >= 0``; ``None`` = full catalog.
        k (int): cutoff, ``k >= 1``.
        ties (str): ``"average"`` (default), ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        Tensor: float64 ``[E]`` of probabilities.

    Raises:
        MetricInputError: if counts are inconsistent.
        ProtocolError: if ``K``, ``k`` or ``ties`` is invalid.
        TypeError: if counts are not integer tensors.

    Example:
        >>> a, b, m = torch.tensor([0, 3, 2]), torch.tensor([0, 0, 2]), torch.tensor([9, 9, 9])
        >>> expected_hits_at_k(a, b, m, 1, 1, ties="average")
        tensor([1.0000, 0.6667, 0.5556], dtype=torch.float64)
    """
    ties = check_ties(ties)
    K = _check_K(K)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ProtocolError(f"`k` must be an int >= 1, but got {k!r}.")
    a, b, m = _check_counts(above, equal, num_candidates)
    full = (rank_from_counts(a, b, ties=ties) <= k).to(torch.float64)
    if ties == "average":
        return _expected(a, b, m, K, ties, full, None, lambda h, t: ((2.0 * h + t) <= 2 * k - 2).to(torch.float64))
    return _expected(a, b, m, K, ties, full, lambda j: (j <= k - 1).to(torch.float64), None)


def k_sweep(records_by_model: Mapping[str, Mapping[str, Tensor]],
            ks: Sequence[Optional[int]] = DEFAULT_SWEEP, *, ties: TiePolicy) -> dict[str, Any]:
    r"""Expected sampled MRR per model and sample size ``K``, and model-order agreement.

    For each model, ``MRR_K = mean_e E[RR_e | K]`` (:func:`expected_reciprocal_rank`) over the
    model's events; ``K = None`` is the full catalog. For each ``K``, Kendall's
    :math:`\tau_b` (:func:`~tgeval.eval.stats.kendall_tau`) between the models' ``MRR_K`` and
    their full-catalog MRR measures how well sampled-K preserves the model order (NaN with
    fewer than two models or when one side is constant).

    The records are used as given (pass only the events to evaluate, e.g. covered ones).

    Args:
        records_by_model (Mapping[str, Mapping[str, Tensor]]): model name -> per-event records
            with integer ``[E]`` entries ``"above"``, ``"equal"`` and ``"candidates"`` (``M``).
        ks (Sequence[int or None]): sample sizes; default ``(1, 5, 20, 50, 100, None)``.
        ties (str): ``"average"``, ``"pessimistic"`` or ``"optimistic"``.

    Returns:
        dict: ``{"K": list(ks), "ties": ties, "models": [names], "mrr": {name: [float per K]},
        "full_mrr": {name: float}, "kendall_tau": [float per K]}``.

    Raises:
        MetricInputError: if no model is given or a record lacks a key.
        ProtocolError: if ``ks`` is invalid.

    Example:
        >>> rec = {"A": {"above": torch.tensor([0, 5]), "equal": torch.tensor([0, 0]),
        ...              "candidates": torch.tensor([99, 99])},
        ...        "B": {"above": torch.tensor([2, 2]), "equal": torch.tensor([0, 0]),
        ...              "candidates": torch.tensor([99, 99])}}
        >>> out = k_sweep(rec, ks=(1, None), ties="average")
        >>> [round(v, 4) for v in out["mrr"]["A"]], out["kendall_tau"]
        ([0.9874, 0.5833], [-1.0, 1.0])
    """
    ties = check_ties(ties)
    if not records_by_model:
        raise MetricInputError("`records_by_model` must contain at least one model.")
    ks = list(ks)
    if not ks:
        raise ProtocolError("`ks` must contain at least one sample size (None = full catalog).")
    for K in ks:
        _check_K(K, "ks")
    names = list(records_by_model)
    mrr: dict[str, list[float]] = {}
    full_mrr: dict[str, float] = {}
    for name in names:
        rec = records_by_model[name]
        missing = [key for key in ("above", "equal", "candidates") if key not in rec]
        if missing:
            raise MetricInputError(f"records of model {name!r} lack {missing}; they need 'above', 'equal', "
                                   f"'candidates'.")
        a, b, m = rec["above"], rec["equal"], rec["candidates"]
        mrr[name] = [float(expected_reciprocal_rank(a, b, m, K, ties=ties).mean()) for K in ks]
        full_mrr[name] = (mrr[name][ks.index(None)] if None in ks
                          else float(expected_reciprocal_rank(a, b, m, None, ties=ties).mean()))
    ref = [full_mrr[n] for n in names]
    taus = [kendall_tau([mrr[n][i] for n in names], ref) if len(names) >= 2 else math.nan for i in range(len(ks))]
    return {"K": ks, "ties": ties, "models": names, "mrr": mrr, "full_mrr": full_mrr, "kendall_tau": taus}


# --------------------------------------------------------------------------- nested actual draws

_SEED_MUL = 0x632BE59BD9B4E019  # spreads the seed over the 64-bit word
_STEP = 0xD1B54A32D192ED03  # the counter step between draws


def nested_draw_ranks(above: Tensor, equal: Tensor, num_candidates: Tensor, ks: Sequence[Optional[int]], *,
                      seed: int, ties: TiePolicy = "average", event_ids: Optional[Tensor] = None) -> Tensor:
    r"""Sampled ranks from actual nested draws: the first ``K`` of one random permutation per event.

    For each event, a uniformly random permutation of its ``M`` non-positive candidates is
    drawn sequentially (draw ``j`` picks uniformly among the ``M - j`` not yet drawn, so it is
    "above" with probability :math:`(a - h_j)/(M - j)` and "equal" with
    :math:`(b - t_j)/(M - j)`); the sample of size ``K`` is its first ``K`` elements, so samples
    are nested across ``ks``. Only the class of each drawn candidate matters, so the
    permutation is never materialised. Uniforms come from a counter-based hash of ``(seed, event id, j)``:
    :math:`u_j = \mathrm{top}_{53}(x(k + (j + 1) c_2))` with key :math:`k = x(i \gamma + s c_1)`,
    :math:`x` = :func:`~tgeval.core.rng.xorshift_multiply` and the odd constants of :mod:`tgeval.core.rng`, so an
    event's draws do not depend on the other events in the call.
    ``K >= M`` or ``None`` draws everything (exact full rank). Cost :math:`O(E \max K)`.

    Args:
        above (Tensor): integer ``[E]``, candidates strictly above the positive.
        equal (Tensor): integer ``[E]``, candidates tied with the positive.
        num_candidates (Tensor): integer ``[E]``, ``M = N - 1`` per event.
        ks (Sequence[int or None]): sample sizes.
        seed (int): generator seed.
        ties (str): tie convention of the returned ranks (default ``"average"``).
        event_ids (Tensor, optional): int64 ``[E]`` counter keys; default ``arange(E)``.

    Returns:
        Tensor: float64 ``[len(ks), E]``, sampled rank of each event for each ``K``.

    Raises:
        MetricInputError: on invalid counts or ``event_ids``.
        ProtocolError: on invalid ``ks`` or ``seed``.

    Example:
        >>> r = nested_draw_ranks(torch.tensor([3]), torch.tensor([0]), torch.tensor([9]), [0, 9, None], seed=0)
        >>> r
        tensor([[1.],
                [4.],
                [4.]], dtype=torch.float64)
    """
    ties = check_ties(ties)
    a, b, m = _check_counts(above, equal, num_candidates)
    ks = [_check_K(K, "ks") for K in ks]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ProtocolError(f"`seed` must be an int, but got {seed!r}.")
    E, dev = a.numel(), a.device
    if event_ids is None:
        ids = torch.arange(E, dtype=torch.long, device=dev)
    else:
        if not isinstance(event_ids, Tensor) or event_ids.shape != (E,):
            raise MetricInputError(f"`event_ids` must be an int64 tensor of shape [{E}], but got {event_ids!r}.")
        ids = event_ids.to(device=dev, dtype=torch.long)
    finite = [K for K in ks if K is not None]
    max_m = int(m.max()) if E else 0
    steps = min(max(finite, default=0), max_m)
    key = xorshift_multiply(ids * GOLDEN_GAMMA + as_int64(seed * _SEED_MUL))
    h = torch.zeros(E, dtype=torch.long, device=dev)
    t = torch.zeros(E, dtype=torch.long, device=dev)
    snapshots: dict[int, tuple[Tensor, Tensor]] = {}
    if 0 in finite:
        snapshots[0] = (h.clone(), t.clone())
    for j in range(steps):  # loop over draw index, vectorised over events
        u = to_unit_interval(xorshift_multiply(key + as_int64((j + 1) * _STEP)))
        remaining = m - j
        active = remaining > 0
        x = torch.minimum((u * remaining.clamp_min(1).to(torch.float64)).long(), (remaining - 1).clamp_min(0))
        a_rem, b_rem = a - h, b - t
        h = h + (active & (x < a_rem)).long()
        t = t + (active & (x >= a_rem) & (x < a_rem + b_rem)).long()
        if (j + 1) in finite:
            snapshots[j + 1] = (h.clone(), t.clone())
    rows = []
    for K in ks:
        hk, tk = (a, b) if K is None or K > steps else snapshots[K]
        rows.append(rank_from_counts(hk, tk, ties=ties))
    if not rows:
        return torch.empty(0, E, dtype=torch.float64, device=dev)
    return torch.stack(rows)
