"""The interface every temporal link model implements (SPEC §6, §8).

A model scores candidate links ``(src, dst, t)`` from its current state without changing
it, and ingests observed positive events with :meth:`update`. The replay engine
(:mod:`tgeval.eval.replay`) owns the order score -> record -> update; models never update
themselves while scoring.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.state import State

__all__ = ["TemporalLinkModel", "CandidateScorer"]

#: ``scorer(events, candidates) -> [b, c]`` for a slice of a batch's events and a slice of
#: the candidate list given to :meth:`TemporalLinkModel.candidate_scorer`.
CandidateScorer = Callable[[slice, slice], Tensor]


class TemporalLinkModel(nn.Module):
    """Base class of tgeval's models (heuristic and neural).

    Subclasses implement :meth:`score`, :meth:`update`, :meth:`reset_state`,
    :meth:`snapshot` and :meth:`restore`; they may override :meth:`score_candidates` /
    :meth:`candidate_scorer` with a faster path that gives the same scores, and
    :meth:`catalog_counts` with an exact counting shortcut.

    Args:
        num_nodes: exclusive upper bound of node ids.
    """

    #: ``True`` when the whole state lives in registered buffers, so the scoring guard's
    #: tensor-version check covers it and the snapshot comparison can be skipped.
    state_in_registered_tensors: bool = False

    #: Relative half-width of the band in which the engine counts a candidate's score as
    #: tied with the positive's (:func:`~tgeval.eval.metrics.count_above_equal`). ``0``:
    #: exact comparison (heuristics, whose scores are exact). Float32 neural models set it
    #: above their rounding noise: the same pair scored in differently shaped calls
    #: (positive alone, candidates in blocks) differs in the last bits, and that noise must
    #: not decide exact ties such as between nodes with identical embeddings.
    tie_tolerance: float = 0.0

    def __init__(self, num_nodes: int) -> None:
        super().__init__()
        if num_nodes < 1:
            raise ValueError(f"num_nodes must be >= 1, got {num_nodes}.")
        self.num_nodes = int(num_nodes)

    # -- scoring (must not change state) ------------------------------------------------
    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """Scores of links: float ``[B]`` for int64 ``src``, ``dst`` and ``t`` ``[B]``.

        Higher means more likely. Uses only the current state (history strictly before
        the batch being evaluated) and never modifies it.
        """
        raise NotImplementedError

    def score_candidates(self, src: Tensor, t: Tensor, candidates: Tensor) -> Tensor:
        """Scores of every ``(src[i], candidates[j], t[i])``: float ``[B, C]``.

        The default expands the pairs and calls :meth:`score`.
        """
        b, c = src.numel(), candidates.numel()
        return self.score(src.repeat_interleave(c), candidates.repeat(b), t.repeat_interleave(c)).view(b, c)

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """Prepare all-entity scoring of a batch against ``candidates`` (``[C]``).

        Returns a function of ``(event_slice, candidate_slice)`` giving the ``[b, c]`` score
        block. Models override this to compute per-batch work once (embeddings of the
        sources and of every candidate) before the engine asks for chunks.
        """
        return lambda ev, cand: self.score_candidates(src[ev], t[ev], candidates[cand])

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        """Optional exact shortcut for all-entity ranking.

        Returns int64 ``(above, equal)`` ``[B]``: the numbers of catalog items available at
        ``t[i]`` whose score for ``(src[i], item, t[i])`` is ``> pos_score[i]`` / ``==
        pos_score[i]``, with no item excluded. ``None`` (the default) means "not offered";
        the engine then scores the catalog in chunks. The engine removes excluded items
        (the source, simultaneous positives) itself, so a shortcut must count exactly what
        :meth:`score` would give.
        """
        return None

    # -- state ------------------------------------------------------------------------
    def update(self, batch: TemporalData) -> None:
        """Ingest a batch of observed positive events (called after they were scored)."""
        raise NotImplementedError

    def reset_state(self) -> None:
        raise NotImplementedError

    def snapshot(self) -> State:
        raise NotImplementedError

    def restore(self, state: State) -> None:
        raise NotImplementedError

    def describe(self) -> dict:
        """Name and configuration, recorded in result manifests."""
        return {"name": type(self).__name__, "num_nodes": self.num_nodes}

    @property
    def device(self) -> torch.device:
        for tensor in list(self.parameters()) + list(self.buffers()):
            return tensor.device
        return torch.device("cpu")
