r"""The membership intervention: does a model rank the right destination, or know the pair was seen?

A neural model scores :math:`s(u, v) = w^\top h(u, v) + c`, where :math:`h = \mathrm{relu}(W_s z_u
+ W_d z_v + b) \in \mathbb{R}^H` is the pair representation entering the decoder's last layer
(:meth:`~tgeval.models.layers.LinkDecoder.hidden`). The intervention

1. **fits the membership direction** :math:`d` on candidate pairs of a fitting segment (the
   training segment): every event's source paired with ``K`` destinations it met before the
   batch (label :math:`M = 1`, :class:`~tgeval.samplers.membership.SeenSampler`) and ``K``
   catalog destinations it did not (:math:`M = 0`,
   :class:`~tgeval.samplers.membership.UnseenSampler`), :math:`h` taken from the state
   before the batch as in a replay. The probe is linear discriminant analysis (Fisher's
   direction) :math:`d = (\Sigma_w + \lambda I)^{-1} (\bar h_{M=1} - \bar h_{M=0})`, with
   :math:`\Sigma_w` the pooled within-class covariance and the ridge :math:`\lambda = 10^{-3}
   \mathrm{tr}(\Sigma_w) / H`; ``probe="mean_difference"`` takes :math:`\Sigma_w = I`. (The
   plain class-mean difference also follows whatever else differs between seen and unseen
   pairs, e.g. popular destinations' features; Fisher's direction discounts what varies inside
   the classes.) Its AUROC, :math:`h \cdot d` against :math:`M` on the fitting pairs, says
   how linearly membership is carried;
2. **projects it out at scoring time**, :math:`h' = h - (h \cdot d)\, d / \lVert d \rVert^2`.
   The last layer is linear, so :math:`w^\top h' = (P w)^\top h` with the projector
   :math:`P = I - d d^\top / \lVert d \rVert^2`: the projected model is a copy of the model
   whose last-layer weight is :math:`P w` (:func:`project_out`). Every scoring path (sampled,
   all-entity, the factorial) then scores :math:`h'` exactly, and neither the model's
   parameters nor its state change; the state does not depend on the last layer, so every
   variant replays the same states;
3. **controls**: a random direction (standard normal, seeded) and the probe's direction
   after a seeded permutation of the labels. A model that *ranks* destinations keeps its
   MRR under all three projections; a model whose MRR rests on "the pair was seen" loses it
   under the membership projection only, most visibly in the Repeated–Unseen cell of the
   factorial (:func:`~tgeval.diagnostics.membership.membership_factorial`), which it then
   ranks at chance.

:func:`membership_intervention` reports, for the base model and each projection, the
full-catalog MRR of :func:`~tgeval.eval.engine.evaluate` (online replay, all-entity over the
catalog) and the four cells of the factorial.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.core.choices import TiePolicy
from tgeval.core.atomic import json_safe
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.diagnostics.membership import MembershipReplay, membership_factorial
from tgeval.errors import DiagnosticError, ProtocolError
from tgeval.eval.metrics import auroc
from tgeval.eval.engine import evaluate
from tgeval.eval.protocol import Protocol

__all__ = ["Direction", "InterventionResult", "pair_representations", "fit_directions", "project_out",
           "membership_intervention"]

VARIANTS = ("base", "membership", "random", "shuffled")


@dataclass(frozen=True)
class Direction:
    """A direction in the decoder's pair-representation space.

    Attributes:
        name: ``"membership"``, ``"random"`` or ``"shuffled"``.
        vector: float ``[H]``.
        probe_auroc: AUROC of :math:`h \\cdot d` against the membership labels of the fitting pairs.
    """

    name: str
    vector: Tensor
    probe_auroc: float

    def to_dict(self) -> dict:
        return {"name": self.name, "norm": float(self.vector.norm()), "probe_auroc": self.probe_auroc}


def _check_model(model: Any) -> None:
    decoder = getattr(model, "decoder", None)
    if not (callable(getattr(decoder, "hidden", None)) and isinstance(getattr(decoder, "lin_out", None),
                                                                      torch.nn.Linear) and hasattr(model, "embed")):
        raise TypeError(f"the membership intervention needs a neural model whose decoder exposes hidden() and a "
                        f"linear last layer lin_out (TGN, DyRep, GraphMixer: tgeval.models.NeuralLinkModel); got "
                        f"{type(model).__name__}. Heuristics have no representation to project.")


def pair_representations(model: Any, data: TemporalData, segment: Segment, catalog: Catalog, *,
                         num_negatives: int = 1, seed: int = 0, batch_size: int = 200,
                         directed: bool = True) -> tuple[Tensor, Tensor]:
    """Pair representations and membership labels of the fitting pairs of ``segment``.

    Replays ``model`` with :class:`~tgeval.diagnostics.membership.MembershipReplay` (as
    :func:`~tgeval.eval.engine.evaluate` does: warm-up on ``data[:segment.start]``, timestamp
    batches in canonical order, embeddings from the state before each batch, then ``update``),
    so it resets the model's state. Per event, ``K =
    num_negatives`` seen and ``K`` unseen destinations of its source (fewer when a pool is
    short; an empty pool gives none).

    Returns:
        ``(h [P, H], seen [P])``: float32 representations and bool labels (``True``: the pair
        was observed before the batch).
    """
    _check_model(model)
    if num_negatives < 1:
        raise ProtocolError(f"num_negatives must be >= 1, got {num_negatives}.")
    replay = MembershipReplay(model, data, segment, catalog, batch_size=batch_size, directed=directed)
    generator = torch.Generator(device=replay.catalog.device).manual_seed(seed)
    reps, labels = [], []
    for step in replay.steps():
        batch = step.batch
        src = batch.src.repeat_interleave(num_negatives)
        seen, unseen = (sampler.draw(batch, num_negatives, generator).negatives
                        for sampler in (replay.seen, replay.unseen))
        assert seen.mask is not None and unseen.mask is not None  # pool draws carry their padding mask
        valid = torch.cat([seen.mask.flatten(), unseen.mask.flatten()])
        u = torch.cat([src, src])[valid]
        v = torch.cat([seen.dst.flatten(), unseen.dst.flatten()])[valid]
        z = model.embed(torch.cat([u, v]))  # one call: every node embedded once per batch
        reps.append(model.decoder.hidden(z[: u.numel()], z[u.numel():]))
        labels.append(torch.arange(valid.numel(), device=valid.device)[valid] < src.numel())  # the seen half
    width = model.decoder.lin_out.in_features
    h = torch.cat(reps) if reps else torch.zeros((0, width))
    return h, torch.cat(labels) if labels else torch.zeros(0, dtype=torch.bool)


PROBES = ("fisher", "mean_difference")
#: Fisher probe ridge, relative to the mean within-class variance
RIDGE = 1e-3


def _probe(h: Tensor, labels: Tensor, probe: str) -> Tensor:
    """The probe's direction ``[H]`` (float64 arithmetic, returned as float32)."""
    h = h.double()
    mean1, mean0 = h[labels].mean(0), h[~labels].mean(0)
    if probe == "mean_difference":
        return (mean1 - mean0).float()
    centred = torch.where(labels[:, None], h - mean1, h - mean0)
    within = centred.T @ centred / max(h.size(0) - 2, 1)
    ridge = RIDGE * float(within.diagonal().mean()) + torch.finfo(torch.float64).tiny
    eye = torch.eye(h.size(1), dtype=torch.float64, device=h.device)
    return torch.linalg.solve(within + ridge * eye, mean1 - mean0).float()


def fit_directions(h: Tensor, seen: Tensor, *, probe: str = "fisher", seed: int = 0) -> dict[str, Direction]:
    """The membership direction and its two controls from fitting pairs (``h [P, H]``, ``seen [P]``).

    ``membership``: the ``probe``'s direction (module docstring); ``random``: a standard normal
    vector; ``shuffled``: the probe's direction after a permutation of the labels (both seeded).
    """
    if probe not in PROBES:
        raise DiagnosticError(f"probe must be one of {PROBES}, got {probe!r}.")
    num_seen = int(seen.sum())
    if num_seen == 0 or num_seen == seen.numel():
        raise DiagnosticError(f"fitting the membership direction needs seen and unseen pairs; got {num_seen} seen of "
                              f"{seen.numel()}. Fit on a longer segment (sources need history before their events).")
    generator = torch.Generator().manual_seed(seed)
    shuffled = seen.cpu()[torch.randperm(seen.numel(), generator=generator)].to(seen.device)
    vectors = {"membership": _probe(h, seen, probe),
               "random": torch.randn(h.size(1), generator=generator).to(h.device),
               "shuffled": _probe(h, shuffled, probe)}
    return {name: Direction(name, d, float(auroc(h @ d, seen))) for name, d in vectors.items()}


def project_out(model: Any, direction: Tensor) -> Any:
    """A copy of ``model`` that scores :math:`w^\\top (h - (h \\cdot d) d / \\lVert d \\rVert^2) + c`.

    The copy's last-layer weight is :math:`w - (w \\cdot d)\\, d / \\lVert d \\rVert^2`; the
    model itself (parameters, state, cache) is not touched.
    """
    _check_model(model)
    d = direction.to(model.decoder.lin_out.weight).flatten()
    norm2 = float(d @ d)
    if not norm2 > 0 or d.numel() != model.decoder.lin_out.in_features:
        raise DiagnosticError(f"the direction must be a nonzero vector of width {model.decoder.lin_out.in_features}, "
                              f"got shape {tuple(direction.shape)} with squared norm {norm2}.")
    projected = copy.deepcopy(model)
    with torch.no_grad():
        weight = projected.decoder.lin_out.weight  # [1, H]
        weight -= (weight @ d)[:, None] * d / norm2
    return projected


@dataclass
class InterventionResult:
    """Full-catalog MRR and the factorial's cells for the base model and each projection.

    Attributes:
        rows: variant (``base``, ``membership``, ``random``, ``shuffled``) -> ``{"mrr": float,
            "weight_cosine": cos(w, d) (how much the last layer reads the direction; ``None`` for
            the base), "factorial": {"repeated_seen": {"mrr", "exhaustive_mrr", "count"}, ...}}``.
        directions: the fitted :class:`Direction` of each projection.
        manifest: protocol, segments, catalog, seeds, the model.
    """

    rows: dict[str, dict]
    directions: dict[str, Direction]
    manifest: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json_safe({"rows": self.rows, "directions": {k: d.to_dict() for k, d in self.directions.items()},
                          "manifest": self.manifest})

    def format_table(self) -> str:
        """One line per variant: full-catalog MRR, then the factorial's sampled MRR per cell."""
        cells = ("repeated_seen", "repeated_unseen", "new_seen", "new_unseen")
        lines = [f"{'projection':<12} {'MRR (all)':>10} " + " ".join(f"{c:>16}" for c in cells)]
        for name, row in self.rows.items():
            probe = "" if name == "base" else (f"   probe AUROC {self.directions[name].probe_auroc:.3f}, "
                                               f"cos(w, d) {row['weight_cosine']:+.3f}")
            lines.append(f"{name:<12} {row['mrr']:>10.4f} "
                         + " ".join(f"{row['factorial'][c]['mrr']:>16.4f}" for c in cells) + probe)
        return "\n".join(lines)


def membership_intervention(model: Any, data: TemporalData, fit_segment: Segment, eval_segment: Segment,
                            catalog: Catalog, *, num_negatives: int = 20, fit_negatives: int = 1, probe: str = "fisher",
                            seed: int = 0, batch_size: int = 200, ties: TiePolicy = "average",
                            directed: bool = True) -> InterventionResult:
    """Fit the membership direction on ``fit_segment`` and compare the projections on ``eval_segment``.

    Works on copies of ``model`` (its state and parameters are left as they were). Each
    variant is evaluated by :func:`~tgeval.eval.engine.evaluate` (online, all-entity over the
    fixed ``catalog``, ``ties``) and by
    :func:`~tgeval.diagnostics.membership.membership_factorial` (``num_negatives`` seen and
    unseen negatives per event, ``seed``).

    Args:
        model: a neural model (decoder with ``hidden`` and a linear ``lin_out``).
        data: the whole time-sorted stream.
        fit_segment: where the direction is fitted (the training segment).
        eval_segment: where the variants are compared (the test segment).
        catalog: fixed catalog of the unseen pairs and of the full-catalog ranking.
        num_negatives: ``K`` per factorial cell; fit_negatives: seen and unseen pairs per
            fitting event; probe: ``"fisher"`` or ``"mean_difference"``.
    """
    _check_model(model)
    h, seen = pair_representations(copy.deepcopy(model), data, fit_segment, catalog, num_negatives=fit_negatives,
                                   seed=seed, batch_size=batch_size, directed=directed)
    directions = fit_directions(h, seen, probe=probe, seed=seed)
    weight = model.decoder.lin_out.weight.detach().flatten()
    rows: dict[str, dict] = {}
    for name in VARIANTS:
        variant = copy.deepcopy(model) if name == "base" else project_out(model, directions[name].vector)
        result = evaluate(variant, data, eval_segment,
                          Protocol(ties=ties, directed=directed, batch_size=batch_size, seed=seed), catalog=catalog)
        factorial = membership_factorial(variant, data, eval_segment, catalog, num_negatives=num_negatives,
                                         seed=seed, ties=ties, batch_size=batch_size, directed=directed)
        rows[name] = {"mrr": result.metrics["all_entity"]["mrr"]["micro"],
                      "weight_cosine": None if name == "base" else float(
                          torch.nn.functional.cosine_similarity(weight, directions[name].vector.to(weight), dim=0)),
                      "factorial": {f"{c.positive}_{c.negative}": {"mrr": c.mrr, "exhaustive_mrr": c.exhaustive_mrr,
                                                                   "count": c.count} for c in factorial.cells}}
    manifest = {"model": model.describe() if hasattr(model, "describe") else type(model).__name__,
                "fit_segment": fit_segment.to_dict(), "eval_segment": eval_segment.to_dict(),
                "fit_pairs": {"total": int(seen.numel()), "seen": int(seen.sum()), "per_event": fit_negatives,
                              "labels": "seen: a destination the source met before the batch; unseen: a catalog "
                                        "destination it did not"},
                "probe": {"method": probe, "ridge": RIDGE if probe == "fisher" else None,
                          "space": "the decoder's pair representation entering its last layer"},
                "projection": "h - (h.d) d / |d|^2 before the decoder's last layer (its weight w -> P w)",
                "controls": {"random": "standard normal direction", "shuffled": "the probe on permuted labels"},
                "catalog": catalog.describe(), "num_negatives": num_negatives, "seed": seed, "ties": ties,
                "protocol": "online", "directed": directed, "mrr": "all-entity over the catalog, micro"}
    return InterventionResult(rows, directions, manifest)
