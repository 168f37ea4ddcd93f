r"""Base of the neural reference models: embeddings of the state, then a link decoder.

A :class:`NeuralLinkModel` scores :math:`s(u, v) = \mathrm{dec}(z_u, z_v)` where
:math:`z = \mathrm{embed}(\text{state})` depends only on the state (history before the
batch being scored), not on the query time, exactly as PyG's TGN example: a node's
embedding is the same for every event of a batch. That makes all-entity ranking cheap and
exact: :meth:`~NeuralLinkModel.candidate_scorer` embeds the batch's sources and every
candidate once, computes the decoder's per-source and per-candidate terms once, and then
each (event, candidate) block costs one add, ReLU and projection per pair.

Data without event features (no ``msg`` field) gets a message of one zero column
(``msg_dim=1``), as PyG's recipe does for such data (a width-0 message crashes
``TGNMemory``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.errors import DataFormatError
from tgeval.models.base import CandidateScorer, TemporalLinkModel
from tgeval.models.layers import LinkDecoder
from tgeval.state import State

__all__ = ["NeuralLinkModel", "message_dim"]


def message_dim(data: TemporalData) -> int:
    """Width of ``data.msg``, or 1 (the zero-column stand-in) when the data has no features."""
    msg = getattr(data, "msg", None)
    return 1 if msg is None or msg.dim() != 2 or msg.size(1) == 0 else int(msg.size(1))


class NeuralLinkModel(TemporalLinkModel):
    """Subclasses implement :meth:`embed`, :meth:`ingest` and :attr:`stateful_parts`, and keep
    their constructor arguments in ``self.config`` (checkpoints rebuild models from it).

    Args:
        num_nodes: exclusive upper bound of node ids.
        msg_dim: width of event messages (1 for data without features).
        embedding_dim: width of node embeddings, the decoder's input.
    """

    #: Memory, last updates, pending messages, neighbour slots and the event store are all
    #: registered buffers (written in place or reassigned by name), so the scoring guard's
    #: tensor-version check covers the state without copying it twice per batch.
    state_in_registered_tensors = True

    #: float32 rounding differs across call shapes by ~1e-7 relative; ties within 1e-5
    tie_tolerance = 1e-5
    #: most catalog nodes embedded in one call by :meth:`candidate_scorer`
    embed_chunk = 8192

    def __init__(self, num_nodes: int, msg_dim: int, embedding_dim: int) -> None:
        super().__init__(num_nodes)
        if msg_dim < 1:
            raise ValueError(f"msg_dim must be >= 1 (use 1, a zero column, for data without features), got {msg_dim}.")
        self.msg_dim = int(msg_dim)
        self.decoder = LinkDecoder(embedding_dim)
        self.config: dict[str, Any] = {}

    # -- to implement ------------------------------------------------------------------
    def embed(self, n_id: Tensor) -> Tensor:
        """Embeddings ``[n, D]`` of the sorted unique nodes ``n_id`` from the current state."""
        raise NotImplementedError

    def ingest(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor) -> None:
        """Add observed events (``[B]``, ``msg [B, R]``) to the state."""
        raise NotImplementedError

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        """Submodules holding the state, each with ``reset_state`` / ``snapshot`` / ``restore``."""
        raise NotImplementedError

    # -- scoring ----------------------------------------------------------------------
    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """``dec(z_src, z_dst)`` ``[B]``; every node is embedded once per call."""
        z = self._embed_any(torch.cat([src, dst]))
        return self.decoder(z[:src.numel()], z[src.numel():])

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """Embed the sources and every candidate once; chunks then only combine decoder terms.

        Candidates are embedded :attr:`embed_chunk` at a time and only their decoder terms
        (``[C, H]``) are kept, so peak memory does not grow with the catalog beyond them.
        """
        source = self.decoder.source_terms(self._embed_any(src))
        parts = [self.decoder.target_terms(self._embed_any(candidates[i:i + self.embed_chunk]))
                 for i in range(0, candidates.numel(), self.embed_chunk)]
        target = torch.cat(parts) if parts else source.new_zeros((0, source.size(1)))
        return lambda ev, cand: self.decoder.combine(source[ev], target[cand])

    def _embed_any(self, ids: Tensor) -> Tensor:
        """Embeddings ``[n, D]`` of any node ids (each distinct node embedded once)."""
        n_id, inverse = ids.unique(return_inverse=True)
        return self.embed(n_id)[inverse]

    def score_candidates(self, src: Tensor, t: Tensor, candidates: Tensor) -> Tensor:
        return self.candidate_scorer(src, t, candidates)(slice(None), slice(None))

    # -- state ------------------------------------------------------------------------
    def messages(self, batch: TemporalData) -> Tensor:
        """``batch.msg`` as float ``[B, msg_dim]``, or zeros when the data has no features."""
        msg = getattr(batch, "msg", None)
        size = batch.src.numel()
        if msg is None or (msg.dim() == 2 and msg.size(1) == 0):
            return torch.zeros(size, self.msg_dim, device=batch.src.device)
        if msg.dim() != 2 or msg.size(0) != size or msg.size(1) != self.msg_dim:
            raise DataFormatError(f"event messages have shape {tuple(msg.shape)}, the model expects "
                                  f"[{size}, {self.msg_dim}]. Build the model with msg_dim={message_dim(batch)}.")
        return msg.float()

    def update(self, batch: TemporalData) -> None:
        """Ingest the batch's events in canonical order ``(t, src, dst, msg)``.

        The state keeps events in insertion order (the neighbour buffer's recency, the
        truncation to ``K`` neighbours, the order messages are summed in), so the batch is
        ordered first: the state then does not depend on the file order of simultaneous
        events, including events equal in ``(t, src, dst)`` with different features, which
        the replay engine's ``(t, src, dst)`` order leaves in file order.
        """
        src, dst, t, msg = batch.src, batch.dst, batch.t, self.messages(batch)
        keys = [t, src, dst]
        if getattr(batch, "msg", None) is not None and msg.numel() > 0:
            keys.append(torch.unique(msg, dim=0, return_inverse=True)[1])  # lexicographic rank of each row
        order = torch.arange(src.numel(), device=src.device)
        for key in reversed(keys):  # stable sorts, last key first: lexicographic order
            order = order[torch.argsort(key[order], stable=True)]
        self.ingest(src[order], dst[order], t[order], msg[order])

    def reset_state(self) -> None:
        for part in self.stateful_parts.values():
            part.reset_state()  # type: ignore[operator]

    def snapshot(self) -> State:
        return {name: part.snapshot() for name, part in self.stateful_parts.items()}  # type: ignore[operator]

    def restore(self, state: State) -> None:
        for name, part in self.stateful_parts.items():
            part.restore(state[name])  # type: ignore[operator]

    def describe(self) -> dict:
        return {"name": type(self).__name__, **self.config}
