"""A static pair scorer as a temporal model with fixed history (docs/protocol.md §8, §10).

A scorer fitted once on the graph of the events before the evaluated segment, e.g. a GCN of
:func:`tgeval.static.train_link_gnn` on ``static_graph(data, end=t_start)``, has observed
exactly what a temporal model has observed at the segment's start under
``Protocol(replay="fixed")`` (the replay warms models up on those events, then never updates them).
:class:`FixedScorerModel` puts it through the same replay, sampler, catalog and metrics:
its scores ignore ``t`` and :meth:`~FixedScorerModel.update` ignores events, so it has no
state to snapshot.
"""

from __future__ import annotations

from typing import Callable, Optional

from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.models.base import CandidateScorer, TemporalLinkModel, pairwise_scorer
from tgeval.models.capabilities import Capabilities

__all__ = ["FixedScorerModel"]


class FixedScorerModel(TemporalLinkModel):
    """``score(src, dst, t) = scorer(src, dst)``, never updated.

    Args:
        num_nodes: exclusive upper bound of node ids.
        scorer: int64 ``[B]`` sources and destinations -> float ``[B]`` scores, on their device,
            without side effects (e.g. a :class:`tgeval.static.TrainedGNN`).
        description: recorded in result manifests (e.g. ``scorer.describe()`` and the training end).
        tie_tolerance: relative tie band (float32 neural scores: above their rounding noise).
    """

    def __init__(self, num_nodes: int, scorer: Callable[[Tensor, Tensor], Tensor], *,
                 description: Optional[dict] = None, tie_tolerance: float = 1e-6) -> None:
        super().__init__(num_nodes)
        self.scorer = scorer
        self.description = dict(description or {})
        self.capabilities = Capabilities(tie_tolerance=tie_tolerance)

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        return self.scorer(src, dst)

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """Pair by pair on purpose: ``scorer`` is a function of pairs (e.g. a fitted GNN's lookups)."""
        return pairwise_scorer(self.score, src, t, candidates)

    def update(self, batch: TemporalData) -> None:
        """Nothing: the history is fixed when the scorer was fitted."""

    def describe(self) -> dict:
        return {"name": "fixed-scorer", "num_nodes": self.num_nodes, "history": "fixed at fitting",
                **self.description}
