r"""Pair-membership diagnostics: the 2 x 2 factorial and the optimal membership coefficient (docs/protocol.md §6, §7).

**Membership.** For an event :math:`(u, v, t)`, :math:`M = 1\{(u, v) \in H\}` with :math:`H`
the pairs observed before the event. In the factorial (a replay, like
:func:`~tgeval.eval.engine.evaluate`) :math:`H` is the history observed before the event's
batch (what the model and the samplers know); in :func:`beta_star` it is
:math:`H_{<t}`, the events with a strictly earlier timestamp.

**Factorial.** Positives are *repeated* (:math:`M = 1`) or *new* (:math:`M = 0`); each
positive :math:`(u, v^+, t)` is ranked against two negative sets drawn for the same event:

* *seen*: :math:`S_u = H_u \setminus (\{u\} \cup P_{u,t})`, the destinations the source met
  before the batch (:class:`~tgeval.samplers.membership.SeenSampler`, the source-history pool);
* *unseen*: :math:`U_u = C \setminus (H_u \cup \{u\} \cup P_{u,t})`, catalog destinations the
  source has not met (:class:`~tgeval.samplers.membership.UnseenSampler`),

with :math:`P_{u,t}` the simultaneous positives (which hold :math:`v^+`). Repeated–seen is
recurrent-link ranking, new–unseen novel-link ranking; the off-diagonal cells show whether a
model simply prefers seen (or unseen) pairs.

**Same positives in every cell.** An event enters the two cells of its row only if *both*
its pools are non-empty; an event with an empty seen pool (a source without history) or an
empty unseen pool (a source that met the whole catalog) is excluded from both cells of its
row and counted (``excluded_empty_seen`` / ``excluded_empty_unseen``). The seen and unseen
columns of a row are therefore computed on exactly the same positive events.

**Short pools.** ``K`` distinct negatives are drawn without replacement (shared kernel
of the pooled samplers, counter-based randomness keyed by replay
position). A pool with fewer than ``K`` valid items contributes all of them (padding slots
masked, :class:`~tgeval.samplers.base.Negatives`); such events are counted (``num_short``).

**Exhaustive cells.** The exact versions rank each positive against *all* of its seen
destinations and *all* of its unseen catalog destinations, from counts of candidates above /
equal (the seen part by a ragged, vectorised expansion of the source's history slice; the
unseen part as the all-entity counts of :func:`~tgeval.eval.ranking.all_entity_counts` minus
the seen catalog items). The diagonal (repeated vs all seen, new vs all unseen) is the one
docs/protocol.md §7 asks for; the off-diagonal exhaustive values are reported too.

**β\*.** For the minimal scorer :math:`s = b + \beta M`, with :math:`p_1` / :math:`q_1` the
shares of positives / negatives with :math:`M = 1`, :math:`\beta^* = \mathrm{logit}(p_1) -
\mathrm{logit}(q_1)`. Under uniform sampling over a catalog :math:`C`,
:math:`q_{1,i} = |S_{u_i}(t_i) \cap C| / |C \setminus (\{u_i\} \cup P_{u_i,t_i})|` exactly per
event, and :math:`q_1` is its mean over events (every event contributes ``K`` negatives).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Literal, Optional, Union

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import build_exclusions
from tgeval.data.split import Segment, check_whole_groups
from tgeval.data.validation import validate
from tgeval.errors import CatalogError, ProtocolError, SamplerError, TemporalDataError
from tgeval.eval.metrics import check_ties, count_above_equal, rank_from_counts
from tgeval.eval.ranking import all_entity_counts, check_no_nan
from tgeval.models.base import TemporalLinkModel, score_of
from tgeval.samplers.base import NegativeSampler, NegativesCheck
from tgeval.samplers.membership import BatchPools, SeenSampler, UnseenSampler, require_fixed_catalog
from tgeval.samplers.uniform import UniformSampler
from tgeval.stream.walk import Step, Walk, eval_mode

__all__ = ["MembershipReplay", "FactorialCell", "MembershipFactorial", "membership_factorial", "BetaStar", "beta_star",
           "fit_membership_beta", "pair_membership"]


# ---------------------------------------------------------------------------------------------
# Factorial
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FactorialCell:
    """One cell of the factorial.

    Attributes:
        positive: ``"repeated"`` or ``"new"``; negative: ``"seen"`` or ``"unseen"``.
        mrr: MRR against the ``K`` sampled negatives (NaN for an empty cell).
        exhaustive_mrr: MRR against every negative of the pool (NaN for an empty cell).
        count: events in the cell (the same events in both cells of a row).
        num_short: events of the cell whose pool held fewer than ``K`` items (all were used).
        excluded_empty_seen, excluded_empty_unseen: events of the row left out because that
            pool was empty (an event with both pools empty counts in both).
        events: int64 ``[count]``, the cell's event indices in the input ``data``.
    """

    positive: str
    negative: str
    mrr: float
    exhaustive_mrr: float
    count: int
    num_short: int
    excluded_empty_seen: int
    excluded_empty_unseen: int
    events: Tensor

    def to_dict(self) -> dict:
        return {"positive": self.positive, "negative": self.negative, "mrr": self.mrr,
                "exhaustive_mrr": self.exhaustive_mrr, "count": self.count, "num_short": self.num_short,
                "excluded_empty_seen": self.excluded_empty_seen,
                "excluded_empty_unseen": self.excluded_empty_unseen}


@dataclass
class MembershipFactorial:
    """The 2 x 2 table (``cells``), per-event ``records`` (int64 / bool ``[E]``) and a ``manifest``."""

    cells: list[FactorialCell]
    records: dict[str, Tensor]
    manifest: dict = field(default_factory=dict)

    def cell(self, positive: str, negative: str) -> FactorialCell:
        for c in self.cells:
            if c.positive == positive and c.negative == negative:
                return c
        raise KeyError(f"no cell ({positive!r}, {negative!r}); positive in ('repeated', 'new'), "
                       f"negative in ('seen', 'unseen').")

    def to_dict(self) -> dict:
        return {"cells": [c.to_dict() for c in self.cells],
                "diagonal": {"repeated_vs_all_seen": self.cell("repeated", "seen").exhaustive_mrr,
                             "new_vs_all_unseen": self.cell("new", "unseen").exhaustive_mrr},
                "manifest": self.manifest}


def _walk(data: TemporalData, segment: Segment, num_nodes: int, batch_size: int) -> Walk:
    """The walk of ``segment`` (:class:`~tgeval.stream.walk.Walk`: validated, canonical order, ``e_id`` and
    ``position``), its ids below ``num_nodes``."""
    data = validate(data)
    largest = int(torch.maximum(data.src.max(), data.dst.max())) if data.num_events else -1
    if largest >= num_nodes:
        raise TemporalDataError(f"node id {largest} is >= num_nodes={num_nodes}. "
                                f"Use num_nodes >= {largest + 1} (e.g. `info.num_nodes`).")
    check_whole_groups(data.t, segment.start, segment.end, what=f"{segment.name!r} segment")
    return Walk(data, segment, batch_size=batch_size, validated=True)


def _seen_exhaustive(model: TemporalLinkModel, src: Tensor, t: Tensor, pos: Tensor, pools: BatchPools,
                     catalog: Catalog, budget: int) -> tuple[Tensor, ...]:
    """Above / equal among all seen items, and above / equal / count among the seen catalog items: ``[B]`` each."""
    b = src.numel()
    device = src.device
    out = [torch.zeros(b, dtype=torch.long, device=device) for _ in range(5)]
    lo, hi = pools.bounds()
    cum = torch.cumsum(hi - lo, 0)
    chunk = torch.div(cum - 1, max(budget, 1), rounding_mode="floor").clamp(min=0)
    for c in torch.unique(chunk).tolist():
        rows = torch.nonzero(chunk == c).flatten()
        row, item = pools.valid_items(rows)
        if row.numel() == 0:
            continue
        scores = score_of(model, src[row], item, t[row])
        check_no_nan(scores, "scores of seen candidates")
        above, equal = (a.flatten().long() for a in count_above_equal(pos[row], scores[:, None], None,
                                                                         model.capabilities.tie_tolerance))
        in_cat = (catalog.position(item) >= 0).long()
        for target, value in zip(out, (above, equal, above * in_cat, equal * in_cat, in_cat)):
            target.index_add_(0, row, value)
    return tuple(out)


class MembershipReplay:
    """The replay behind the factorial (and the intervention's fitting pairs), the walk of
    :func:`~tgeval.eval.engine.evaluate` (:class:`~tgeval.stream.walk.Walk`): the stream validated and put in
    canonical order (``events``: the segment, with ``e_id``), the model warmed up in eval mode on the
    history before the segment, and :class:`SeenSampler` / :class:`UnseenSampler` (``seen``, ``unseen``)
    holding that history. :meth:`steps` yields the segment's timestamp batches in eval mode without
    gradients, the state before each batch; once the caller is done with a step, an ``online`` replay
    updates the model and both samplers with it (``online=False``: the fixed protocol, nothing updated).
    The model's train / eval mode is restored at the end.

    Args:
        model: any model; data, segment: the stream and the replayed segment (whole groups).
        catalog: fixed catalog of the unseen pools (moved to the data's device: ``catalog``).
        batch_size: target events per batch; directed: pair definition.
    """

    def __init__(self, model: TemporalLinkModel, data: TemporalData, segment: Segment, catalog: Catalog, *,
                 batch_size: int = 200, directed: bool = True, online: bool = True) -> None:
        require_fixed_catalog(catalog)
        n = model.num_nodes
        self.walk = _walk(data, segment, n, batch_size)
        self.model, self.online, self.events = model, online, self.walk.events
        device = self.events.src.device
        self.catalog = catalog if catalog.device == device else catalog.to(device)
        self.seen = SeenSampler(n, directed=directed)
        self.unseen = UnseenSampler(self.catalog, n, directed=directed)
        with eval_mode(model):
            self.walk.warm_up(model, [self.seen, self.unseen])

    def steps(self, check_state: bool = True) -> Iterator[Step]:
        """The segment's steps (:meth:`~tgeval.stream.walk.Walk.steps`; ``check_state``: the guard of
        ``step.scoring()``)."""
        with eval_mode(self.model), torch.no_grad():
            yield from self.walk.steps(self.model, samplers=[self.seen, self.unseen], online=self.online,
                                       check_state=check_state)


def membership_factorial(model: TemporalLinkModel, data: TemporalData, segment: Segment, catalog: Catalog, *,
                         num_negatives: int = 20, seed: int = 0, ties: str = "average", batch_size: int = 200,
                         protocol: Literal["online", "fixed"] = "online", candidate_budget: int = 2**22,
                         directed: bool = True, check_state: bool = True) -> MembershipFactorial:
    r"""The pair-membership factorial of ``model`` on ``segment`` (see the module docstring).

    Replays the segment like :func:`~tgeval.eval.engine.evaluate` (warm-up on
    ``data[:segment.start]``, canonical order, score -> record -> update, state guarded).
    For each event the positive is ranked against ``K`` seen and ``K`` unseen negatives and,
    exactly, against all of them. Cell value: :math:`\mathrm{MRR} = \frac{1}{n}\sum_i 1/r_i`
    with ``ties`` applied to the counts of negatives above / equal.

    Args:
        model: any :class:`~tgeval.models.base.TemporalLinkModel`.
        data: the whole time-sorted stream; ``segment``: the evaluated events (whole groups).
        catalog: fixed catalog of the unseen negatives (and of the exhaustive unseen cell).
        num_negatives: ``K`` per negative type.
        seed: seed of the draws (counter-based on the replay position).
        ties: ``"average"``, ``"pessimistic"`` or ``"optimistic"``.
        batch_size: target events per timestamp batch.
        protocol: ``"online"`` (update after each batch) or ``"fixed"``.
        candidate_budget: most (event, candidate) scores held at once.
        directed: pair definition.
        check_state: guard scoring with :func:`~tgeval.stream.state.no_state_change`.

    Returns:
        MembershipFactorial: four cells; ``records`` hold, per event (replay order),
        ``event``, ``src``, ``dst``, ``t``, ``repeated``, ``seen_size``, ``unseen_size``,
        ``{seen,unseen}_{above,equal}`` (sampled) and ``{seen,unseen}_all_{above,equal}``.
    """
    tie_policy = check_ties(ties)
    if protocol not in ("online", "fixed"):
        raise ProtocolError(f"protocol must be 'online' or 'fixed', got {protocol!r}.")
    if num_negatives < 1:
        raise ProtocolError(f"num_negatives must be >= 1, got {num_negatives}.")
    replay = MembershipReplay(model, data, segment, catalog, batch_size=batch_size, directed=directed,
                              online=protocol == "online")
    catalog, seen, unseen = replay.catalog, replay.seen, replay.unseen
    generator = torch.Generator(device=catalog.device).manual_seed(seed)
    parts: dict[str, list[Tensor]] = {}
    for step in replay.steps(check_state):
        batch = step.batch
        src, dst, t = batch.src, batch.dst, batch.t
        ds, du = seen.draw(batch, num_negatives, generator), unseen.draw(batch, num_negatives, generator)
        pools = seen.pools(batch)
        rec: dict[str, Tensor] = {"repeated": pools.holds(dst), "seen_size": ds.size, "unseen_size": du.size}
        with step.scoring():
            k = num_negatives
            scores = score_of(model, torch.cat([src, src.repeat_interleave(k), src.repeat_interleave(k)]),
                              torch.cat([dst, ds.negatives.dst.flatten(), du.negatives.dst.flatten()]),
                              torch.cat([t, t.repeat_interleave(k), t.repeat_interleave(k)]))
            check_no_nan(scores, "scores")
            b = src.numel()
            pos = scores[:b]
            s_seen, s_unseen = scores[b : b + b * k].view(b, k), scores[b + b * k :].view(b, k)
            rec["seen_above"], rec["seen_equal"] = count_above_equal(pos, s_seen, ds.negatives.mask,
                                                                         model.capabilities.tie_tolerance)
            rec["unseen_above"], rec["unseen_equal"] = count_above_equal(pos, s_unseen, du.negatives.mask,
                                                                             model.capabilities.tie_tolerance)
            sa, se, sca, sce, scn = _seen_exhaustive(model, src, t, pos, pools, catalog, candidate_budget)
            counts = all_entity_counts(model, src, dst, t, pos, catalog, candidate_budget=candidate_budget,
                                       directed=directed)
        rec["seen_all_above"], rec["seen_all_equal"] = sa, se
        rec["unseen_all_above"], rec["unseen_all_equal"] = counts.above - sca, counts.equal - sce
        rec["unseen_all_size"] = counts.num_candidates - scn
        for key, value in rec.items():
            parts.setdefault(key, []).append(value)
    events = replay.events
    records = {key: torch.cat(value).cpu() for key, value in parts.items()}
    records.update(event=events.e_id.cpu(), src=events.src.cpu(), dst=events.dst.cpu(), t=events.t.cpu())
    cells = _cells(records, num_negatives, tie_policy)
    manifest = {"model": model.describe(), "segment": segment.to_dict(), "num_negatives": num_negatives,
                "seed": seed, "ties": tie_policy, "protocol": protocol, "directed": directed,
                "catalog": catalog.describe(), "samplers": {"seen": seen.describe(), "unseen": unseen.describe()},
                "membership_reference": "pairs observed before the event's batch",
                "empty_pools": "event excluded from both cells of its row, counted",
                "short_pools": "all valid pool items used (counted as num_short)"}
    return MembershipFactorial(cells, records, manifest)


def _mrr(above: Tensor, equal: Tensor, ties: str) -> float:
    if above.numel() == 0:
        return float("nan")
    return float((1.0 / rank_from_counts(above, equal, ties=ties)).mean())  # type: ignore[arg-type]


def _cells(records: dict[str, Tensor], k: int, ties: str) -> list[FactorialCell]:
    has_seen, has_unseen = records["seen_size"] > 0, records["unseen_size"] > 0
    both = has_seen & has_unseen
    cells = []
    for positive, row in (("repeated", records["repeated"]), ("new", ~records["repeated"])):
        chosen = row & both
        for negative in ("seen", "unseen"):
            short = chosen & (records[f"{negative}_size"] < k)
            cells.append(FactorialCell(
                positive, negative,
                _mrr(records[f"{negative}_above"][chosen], records[f"{negative}_equal"][chosen], ties),
                _mrr(records[f"{negative}_all_above"][chosen], records[f"{negative}_all_equal"][chosen], ties),
                int(chosen.sum()), int(short.sum()), int((row & ~has_seen).sum()), int((row & ~has_unseen).sum()),
                records["event"][chosen]))
    return cells


# ---------------------------------------------------------------------------------------------
# beta*
# ---------------------------------------------------------------------------------------------
def _first_seen(src: Tensor, dst: Tensor, t: Tensor, n: int, directed: bool) -> tuple[Tensor, Tensor]:
    """Sorted distinct directed keys ``u * n + v`` (both orientations if undirected) and their first time."""
    if not directed:
        src, dst, t = torch.cat([src, dst]), torch.cat([dst, src]), torch.cat([t, t])
    keys, inverse = torch.unique(src * n + dst, return_inverse=True)
    first = torch.full((keys.numel(),), float("inf"), dtype=torch.float64, device=src.device)
    first.scatter_reduce_(0, inverse, t.double(), reduce="amin")
    return keys, first


def pair_membership(keys: Tensor, first: Tensor, src: Tensor, dst: Tensor, t: Tensor, n: int) -> Tensor:
    r""":math:`M = 1\{(u, v) \in H_{<t}\}` given sorted pair ``keys`` ``[P]`` and their first times ``first``.

    Args:
        keys: int64 ``[P]`` sorted distinct directed keys; ``first``: float64 ``[P]``.
        src, dst: int64, any shape; ``t``: broadcastable to them.

    Returns:
        Tensor: bool, the broadcast shape.
    """
    key = src * n + dst
    if keys.numel() == 0:
        return torch.zeros_like(key, dtype=torch.bool)
    pos = torch.searchsorted(keys, key.contiguous()).clamp(max=keys.numel() - 1)
    return (keys[pos] == key) & (first[pos] < t.double())


def fit_membership_beta(m_pos: Tensor, m_neg: Tensor, *, method: Literal["closed_form", "logistic"] = "closed_form",
                        ) -> float:
    r"""Coefficient :math:`\hat\beta` of the minimal scorer :math:`s = b + \beta M` fitted on positives vs negatives.

    The maximum-likelihood logistic fit with one binary feature is saturated, so
    ``"closed_form"`` gives it exactly from the pooled counts :math:`n_{y,m}`:

    .. math::
        \hat\beta = \mathrm{logit}\,P(y{=}1 \mid M{=}1) - \mathrm{logit}\,P(y{=}1 \mid M{=}0)
        = \log\frac{n_{1,1}\, n_{0,0}}{n_{0,1}\, n_{1,0}}
        = \mathrm{logit}(\hat p_1) - \mathrm{logit}(\hat q_1).

    ``"logistic"`` fits scikit-learn's ``LogisticRegression`` (no penalty, weighted on the
    four count cells, which has the same likelihood) as an independent check.

    Args:
        m_pos: bool ``[P]``, membership of the positives; ``m_neg``: bool ``[N]``, of the negatives.
        method: ``"closed_form"`` or ``"logistic"``.

    Returns:
        float: :math:`\hat\beta` (``±inf`` when a count cell is empty, closed form only).
    """
    if method not in ("closed_form", "logistic"):
        raise ProtocolError(f"method must be 'closed_form' or 'logistic', got {method!r}.")
    n11, n10 = int(m_pos.sum()), int((~m_pos.bool()).sum())
    n01, n00 = int(m_neg.sum()), int((~m_neg.bool()).sum())
    if method == "closed_form":
        def log(x: int) -> float:
            return math.log(x) if x > 0 else float("-inf")
        return (log(n11) - log(n10)) - (log(n01) - log(n00))
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.array([[1.0], [0.0], [1.0], [0.0]])
    y = np.array([1, 1, 0, 0])
    w = np.array([n11, n10, n01, n00], dtype=float)
    keep = w > 0
    fit = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)  # C = inf: no penalty
    fit.fit(x[keep], y[keep], sample_weight=w[keep])
    return float(fit.coef_[0, 0])


@dataclass(frozen=True)
class BetaStar:
    r"""Analytic and fitted membership coefficients.

    Attributes:
        p1: share of positives with :math:`M = 1`; q1: share of negatives with :math:`M = 1`
            (analytic for ``"uniform"``, from the draws otherwise).
        beta: :math:`\mathrm{logit}(p_1) - \mathrm{logit}(q_1)`.
        beta_fitted: :func:`fit_membership_beta` on the positives and the drawn negatives
            (``None`` with ``fit=False``).
        q1_draws: share of drawn negatives with :math:`M = 1` (``None`` without draws).
        num_positives, num_negatives: sample sizes of the fit.
        sampler: name of the sampler; method: ``"analytic-uniform"`` or ``"draws"``.
    """

    p1: float
    q1: float
    beta: float
    beta_fitted: Optional[float]
    q1_draws: Optional[float]
    num_positives: int
    num_negatives: int
    sampler: str
    method: str


def _uniform_q1(events: TemporalData, keys: Tensor, first: Tensor, catalog: Catalog, n: int,
                directed: bool) -> Tensor:
    """Per event, the share of uniform catalog candidates the source met before ``t``: float64 ``[E]``."""
    src, t = events.src, events.t
    a, b = keys // n, keys % n
    inside = (catalog.position(b) >= 0) & (a != b)
    a, f = a[inside], first[inside]
    values = torch.unique(torch.cat([f, t.double()]))
    width = values.numel() + 1
    sorted_keys = torch.sort(a * width + torch.searchsorted(values, f)).values
    tr = torch.searchsorted(values, t.double())
    seen_cat = torch.searchsorted(sorted_keys, src * width + tr) - torch.searchsorted(sorted_keys, src * width)
    excl = build_exclusions(src, events.dst, t, catalog, directed=directed)
    group, item = excl.items()
    num_events = src.numel()
    num_groups = int(torch.cat([excl.group, group]).max()) + 1 if num_events else 0
    owner = torch.full((num_groups,), num_events, dtype=torch.long, device=src.device)
    owner.scatter_reduce_(0, excl.group, torch.arange(num_events, device=src.device), reduce="amin")
    used = owner[group] < num_events
    group, item = group[used], item[used]
    o = owner[group]
    seen_excl_item = pair_membership(keys, first, src[o], item, t[o], n) & (item != src[o])
    seen_excl = torch.zeros(num_groups, dtype=torch.long, device=src.device).index_add_(0, group,
                                                                                         seen_excl_item.long())
    candidates = catalog.num_available(t) - excl.count
    return (seen_cat - seen_excl[excl.group]).double() / candidates.double().clamp(min=1)


def beta_star(data: TemporalData, segment: Segment, catalog: Optional[Catalog] = None, *,
              sampler: Union[str, NegativeSampler] = "uniform", num_negatives: int = 20, seed: int = 0,
              batch_size: int = 200, num_nodes: Optional[int] = None, directed: bool = True,
              fit: bool = True) -> BetaStar:
    r""":math:`\beta^* = \mathrm{logit}(p_1) - \mathrm{logit}(q_1)` on ``segment`` (see the module docstring).

    :math:`M = 1\{(u, v) \in H_{<t}\}` (strictly earlier timestamps). ``sampler="uniform"``:
    :math:`q_1` analytic, the mean over events of
    :math:`|\{v \in C \setminus (\{u\} \cup P_{u,t}) : (u, v) \in H_{<t}\}| / |C \setminus (\{u\}
    \cup P_{u,t})|`, and (with ``fit``) a fit on actual uniform draws without replacement. A
    :class:`~tgeval.samplers.base.NegativeSampler`: the segment is replayed through it
    (history observed first, then each batch sampled and observed) and :math:`q_1` is the
    share of its (unmasked) negatives with :math:`M = 1`.

    Args:
        data: the whole time-sorted stream; ``segment``: the positives.
        catalog: fixed catalog (required for ``"uniform"``).
        sampler: ``"uniform"`` or a sampler object.
        num_negatives: ``K`` per positive for the draws.
        seed, batch_size: of the draws.
        num_nodes: id bound (default: largest id + 1).
        directed: pair definition.
        fit: also fit :func:`fit_membership_beta` on the draws.

    Returns:
        BetaStar.
    """
    if isinstance(sampler, str) and sampler != "uniform":
        raise SamplerError(f"sampler must be 'uniform' or a NegativeSampler, got {sampler!r}.")
    n = int(num_nodes) if num_nodes is not None else int(torch.maximum(data.src.max(), data.dst.max())) + 1
    walk = _walk(data, segment, n, batch_size)
    device, events = walk.events.src.device, walk.events
    upto = walk.stream[: segment.end]
    keys, first = _first_seen(upto.src, upto.dst, upto.t, n, directed)
    m_pos = pair_membership(keys, first, events.src, events.dst, events.t, n)
    p1 = float(m_pos.double().mean()) if m_pos.numel() else float("nan")
    draw_sampler: Optional[NegativeSampler]
    if isinstance(sampler, str):
        if catalog is None:
            raise CatalogError("sampler='uniform' needs a `catalog` (the candidates of the uniform draws).")
        require_fixed_catalog(catalog)
        catalog = catalog.to(device) if catalog.device != device else catalog
        q1 = float(_uniform_q1(events, keys, first, catalog, n, directed).mean())
        draw_sampler = UniformSampler(catalog, replace=False, directed=directed) if fit else None
        name, method = "uniform", "analytic-uniform"
    else:
        draw_sampler, name, method = sampler, str(sampler.describe().get("name", sampler.name)), "draws"
        q1 = float("nan")
    q1_draws: Optional[float] = None
    beta_fitted: Optional[float] = None
    num_neg = 0
    if draw_sampler is not None:
        generator = torch.Generator(device=device).manual_seed(seed)
        check = NegativesCheck(draw_sampler, n)
        walk.warm_up(samplers=[draw_sampler])
        m_neg_parts = []
        for step in walk.steps(samplers=[draw_sampler]):
            batch = step.batch
            negs = check.draw(batch, num_negatives, generator)
            neg_src = batch.src[:, None].expand_as(negs.dst) if negs.src is None else negs.src
            m = pair_membership(keys, first, neg_src, negs.dst, batch.t[:, None], n)
            m_neg_parts.append(m[negs.mask] if negs.mask is not None else m.flatten())
        m_neg = torch.cat(m_neg_parts) if m_neg_parts else torch.zeros(0, dtype=torch.bool)
        num_neg = m_neg.numel()
        q1_draws = float(m_neg.double().mean()) if num_neg else float("nan")
        if method == "draws":
            q1 = q1_draws
        if fit:
            beta_fitted = fit_membership_beta(m_pos, m_neg)
    beta = float(torch.logit(torch.tensor(p1, dtype=torch.float64))
                 - torch.logit(torch.tensor(q1, dtype=torch.float64)))
    return BetaStar(p1, q1, beta, beta_fitted, q1_draws, int(m_pos.numel()), num_neg, name, method)
