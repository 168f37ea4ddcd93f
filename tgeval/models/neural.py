r"""Base of the neural reference models: embeddings of the state, then a link decoder.

A :class:`NeuralLinkModel` scores :math:`s(u, v) = \mathrm{dec}(z_u, z_v)` where
:math:`z = \mathrm{embed}(\text{state})` depends only on the state (history before the
batch being scored), not on the query time, exactly as PyG's TGN example: a node's
embedding is the same for every event of a batch. That makes all-entity ranking cheap and
exact: :meth:`~NeuralLinkModel.candidate_scorer` embeds the batch's sources and every
candidate once, computes the decoder's per-source and per-candidate terms once, and then
each (event, candidate) block costs one add, ReLU and projection per pair.

**Incremental scoring.** In evaluation (eval mode, no gradients) the embeddings of every node
and the decoder's target terms of the candidate list are kept across batches in a cache
that is part of no state: after :meth:`~NeuralLinkModel.update`, only the nodes whose
embedding inputs the batch changed are marked dirty (:meth:`~NeuralLinkModel.changed`), and
a scoring call recomputes just the dirty nodes it asks for. The cache is dropped on
:meth:`~NeuralLinkModel.reset_state`, :meth:`~NeuralLinkModel.restore`, ``.to()``, and
whenever a parameter or a state buffer changed other than through ``update`` (tensor
identity and version counters are compared before every use). Each scoring call reads all
the sizes it needs from the device at once (one host synchronisation) and then runs with
fixed shapes.

Data without event features (no ``msg`` field) gets a message of one zero column
(``msg_dim=1``), as PyG's recipe does for such data (a width-0 message crashes
``TGNMemory``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.core.compat import ApplyHookModule, tensor_version, view_base
from tgeval.core.device import host_ints, positions
from tgeval.errors import DataFormatError, ModelCapabilityError, ModelConfigError
from tgeval.models.base import CandidateScorer, TemporalLinkModel
from tgeval.models.capabilities import Capabilities
from tgeval.models.layers import LinkDecoder
from tgeval.models.memory import TensorMemory
from tgeval.models.neighbors import BatchInteractions
from tgeval.stream.state import State

__all__ = ["NeuralLinkModel", "message_dim"]


def message_dim(data: TemporalData) -> int:
    """Width of ``data.msg``, or 1 (the zero-column stand-in) when the data has no features."""
    msg = getattr(data, "msg", None)
    return 1 if msg is None or msg.dim() != 2 or msg.size(1) == 0 else int(msg.size(1))


class _Cache:
    """Embeddings ``z [N, D]`` of every node (rows valid where not ``dirty``) and, for one
    candidate list ``items [C]``, the decoder's target terms ``target [C + 1, H]`` (valid for
    rows below ``filled``; row ``C`` is padding, written for nodes outside the list)."""

    def __init__(self, num_nodes: int, stamp: dict, device: torch.device) -> None:
        self.stamp = stamp
        self.z: Optional[Tensor] = None  # allocated with the first embeddings (their width)
        self.dirty = torch.ones(num_nodes, dtype=torch.bool, device=device)
        self.items: Optional[Tensor] = None
        self.row: Optional[Tensor] = None  # int64 [N]: each node's row in ``items``, C elsewhere
        self.target: Optional[Tensor] = None
        self.filled = 0  # rows [0, filled) of ``target`` hold terms (later ones were never asked for)


class NeuralLinkModel(TemporalLinkModel, ApplyHookModule):
    """Subclasses implement :meth:`embed_rows`, :meth:`ingest`, :meth:`changed` and
    :attr:`stateful_parts`; they are built from a config dataclass (:mod:`tgeval.models.config`),
    kept as ``self.config``, from which checkpoints rebuild them.

    Args:
        config: the model's config, with at least ``num_nodes`` (exclusive upper bound of node
            ids) and ``msg_dim`` (width of event messages, 1 for data without features).
        embedding_dim: width of node embeddings, the decoder's input.
    """

    #: Memory, last updates, pending messages, neighbour slots and the event store are all
    #: registered buffers (written in place or reassigned by name), so the scoring guard's
    #: tensor-version check covers the state without copying it twice per batch; float32 rounding
    #: differs across call shapes by ~1e-7 relative, so ties are counted within 1e-5. A node embedded
    #: at a query time (``config.time_gap == "query"``) is embedded per scored pair: no all-entity ranking.
    capabilities = Capabilities(state_in_registered_tensors=True, tie_tolerance=1e-5)
    #: most nodes embedded in one call (bounds peak memory when many nodes are asked for)
    embed_chunk = 8192
    #: keep embeddings across batches in evaluation (memory: one ``[num_nodes, D]`` float array
    #: and the candidates' ``[C, H]`` decoder terms); ``False`` embeds afresh in every call
    incremental = True
    #: the embedding cache is derived from the state and parameters (and dropped when they change),
    #: not state: the guards ignore it (:func:`~tgeval.stream.state.scratch_names`)
    state_scratch = ("_cache",)

    def __init__(self, config: Any, embedding_dim: int) -> None:
        super().__init__(config.num_nodes)
        if config.msg_dim < 1:
            raise ModelConfigError(f"msg_dim must be >= 1 (use 1, a zero column, for data without features), got "
                                   f"{config.msg_dim}.")
        self.config = config
        self.capabilities = self.capabilities.replace(
            ranks_all_entities=getattr(config, "time_gap", "latest") == "latest")
        self.msg_dim = config.msg_dim
        self.decoder = LinkDecoder(embedding_dim)
        self._cache: Optional[_Cache] = None

    # -- to implement ------------------------------------------------------------------
    def embed_rows(self, rows: Tensor, sizes: list[int]) -> Tensor:
        """Embeddings ``[n, D]`` of the sorted distinct nodes ``rows`` from the current state;
        ``sizes`` are the host values of :meth:`row_sizes` for them."""
        raise NotImplementedError

    def row_sizes(self, rows: Tensor) -> list[Tensor]:
        """Device int64 scalars that :meth:`embed_rows` needs on the host for the nodes ``rows``,
        a bool ``[num_nodes]`` mask or their sorted int64 ids (read together with their number,
        in one copy)."""
        return []

    def ingest(self, src: Tensor, dst: Tensor, t: Tensor, msg: Tensor, touched: Optional[Tensor] = None) -> None:
        """Add observed events (``[B]``, ``msg [B, R]``) to the state; ``touched``: bool
        ``[num_nodes]``, the nodes of the events (computed when ``None``)."""
        raise NotImplementedError

    def changed(self, touched: Tensor) -> Tensor:
        """bool ``[num_nodes]``: the nodes whose embedding the last :meth:`ingest` may have
        changed, given its ``touched`` nodes (read after the ingest; a superset is safe)."""
        raise NotImplementedError

    @property
    def stateful_parts(self) -> dict[str, nn.Module]:
        """Submodules holding the state, each with ``reset_state`` / ``snapshot`` / ``restore``."""
        raise NotImplementedError

    def embed_at(self, ids: Tensor, at: Tensor) -> Tensor:
        """Embeddings ``[n, D]`` of nodes ``ids`` at query times ``at`` (``[n]``), for a model
        whose embeddings depend on the query time (``config.time_gap == "query"``)."""
        raise NotImplementedError

    # -- embeddings ---------------------------------------------------------------------
    def _mask(self, ids: Tensor) -> Tensor:
        mask = torch.zeros(self.num_nodes, dtype=torch.bool, device=ids.device)
        mask[ids] = True
        return mask

    def _batch_nodes(self, src: Tensor, dst: Tensor, touched: Optional[Tensor],
                     memory: Optional[TensorMemory] = None) -> tuple[Tensor, list[int]]:
        """The sorted distinct nodes of a batch and, for a ``memory``, the host values of its
        :meth:`~tgeval.models.memory.TensorMemory.message_sizes` for them: one host read."""
        if touched is None:
            touched = self._mask(torch.cat([src, dst]))
        count, *sizes = host_ints(touched.sum(), *([] if memory is None else memory.message_sizes(touched)))
        return positions(touched, count), sizes

    def _embed_mask(self, mask: Tensor, sizes: Optional[list[int]] = None) -> tuple[Tensor, Tensor]:
        """``(rows, z)``: the sorted nodes of a bool mask and their embeddings, in calls of at most
        :attr:`embed_chunk` nodes; ``sizes`` (its count, then :meth:`row_sizes`) if already read."""
        if not self.capabilities.ranks_all_entities:
            raise ModelCapabilityError(f"{type(self).__name__} with time_gap='query' embeds a node at a query time, "
                                       f"not once per batch: it scores pairs (sampled metrics, training) but has no "
                                       f"all-entity ranking; evaluate it with catalog=None (--no-all-entity), or use "
                                       f"time_gap='latest'.")
        if sizes is None:
            sizes = host_ints(mask.sum(), *self.row_sizes(mask))
        rows = positions(mask, sizes[0])
        if sizes[0] <= self.embed_chunk:
            return rows, self.embed_rows(rows, sizes[1:])
        parts = []
        for start in range(0, sizes[0], self.embed_chunk):
            part = rows[start:start + self.embed_chunk]
            parts.append(self.embed_rows(part, host_ints(*self.row_sizes(part))))  # ids: work ~ the chunk
        return rows, torch.cat(parts)

    def embed(self, ids: Tensor) -> Tensor:
        """Embeddings ``[n, D]`` of any node ids (each distinct node embedded once)."""
        if self._caching() and ids.numel():
            return self._cached(ids)
        rows, z = self._embed_mask(self._mask(ids))
        return z[torch.searchsorted(rows, ids)]

    # -- the evaluation cache -----------------------------------------------------------
    def _caching(self) -> bool:
        return self.incremental and not self.training and not torch.is_grad_enabled()

    def _stamp(self) -> dict:
        return {name: (tensor, tensor_version(tensor)) for name, tensor in
                list(self.named_parameters()) + list(self.named_buffers())}

    def _cache_if_valid(self) -> Optional[_Cache]:
        """The cache, or ``None`` when a parameter or a state buffer changed behind its back."""
        cache = self._cache
        if cache is None:
            return None
        stamp = self._stamp()
        if stamp.keys() != cache.stamp.keys() or any(
                now is not then or version != then_version
                for (now, version), (then, then_version) in zip(stamp.values(), cache.stamp.values())):
            self._cache = None
            return None
        return cache

    def _refreshed(self, ids: Tensor) -> _Cache:
        """The cache with the dirty nodes among ``ids`` recomputed (one host read when few are)."""
        cache = self._cache_if_valid()
        if cache is None:
            cache = self._cache = _Cache(self.num_nodes, self._stamp(), ids.device)
        need = self._mask(ids) & cache.dirty
        sizes = host_ints(need.sum(), *self.row_sizes(need))
        if sizes[0]:
            rows, z = self._embed_mask(need, sizes)
            if cache.z is None:
                cache.z = z.new_zeros((self.num_nodes, z.size(1)))
            cache.z[rows] = z
            cache.dirty[rows] = False
            if cache.target is not None and cache.row is not None:
                cache.target[cache.row[rows]] = self.decoder.target_terms(z)
        return cache

    def _cached(self, ids: Tensor) -> Tensor:
        z = self._refreshed(ids).z
        assert z is not None  # ids is not empty: the first refresh allocated it
        return z[ids]

    def _cached_scorer(self, src: Tensor, candidates: Tensor) -> Optional[tuple[Tensor, Tensor]]:
        """``(source terms [B, H], target terms [C, H])`` from the cache, the target terms kept
        across batches for ``candidates`` or for the list it is a prefix view of (the engine passes
        ``catalog.items[:width]``, whose width grows with a time-masked catalog); ``None`` for a
        candidate list with duplicates. Only the rows asked for are ever computed, so a score
        never depends on candidates beyond them (e.g. items not yet available)."""
        base = view_base(candidates)
        if not (base is not None and base.dim() == 1 and base.stride(0) == 1 and candidates.stride(0) == 1
                and candidates.data_ptr() == base.data_ptr()):
            base = candidates
        cache = self._cache_if_valid()
        if cache is None or cache.items is not base:
            if int(torch.unique(base).numel()) != base.numel():  # once per candidate list
                return None
            cache = self._cache = cache or _Cache(self.num_nodes, self._stamp(), base.device)
            size = base.numel()
            cache.items, cache.filled = base, 0
            cache.row = torch.full((self.num_nodes,), size, dtype=torch.long, device=base.device)
            cache.row[base] = torch.arange(size, device=base.device)
            weight = self.decoder.lin_dst.weight
            cache.target = weight.new_zeros((size + 1, weight.size(0)))  # row C: padding
        cache = self._refreshed(torch.cat([src, candidates]))
        assert cache.z is not None and cache.target is not None
        width = candidates.numel()
        for start in range(cache.filled, width, self.embed_chunk):  # rows asked for the first time
            stop = min(start + self.embed_chunk, width)
            cache.target[start:stop] = self.decoder.target_terms(cache.z[base[start:stop]])
        cache.filled = max(cache.filled, width)
        return self.decoder.source_terms(cache.z[src]), cache.target[:width]

    # -- scoring ----------------------------------------------------------------------
    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """``dec(z_src, z_dst)`` ``[B]``; every node is embedded once per call, or, for a model
        without all-entity ranking, every distinct (node, time) of the call at that time
        (:meth:`embed_at`, in chunks of :attr:`embed_chunk`)."""
        ids = torch.cat([src, dst])
        if self.capabilities.ranks_all_entities:
            z = self.embed(ids)
        else:
            pairs, inverse = torch.unique(torch.stack([ids, torch.cat([t, t])]), dim=1, return_inverse=True)
            z = torch.cat([self.embed_at(pairs[0, i:i + self.embed_chunk].contiguous(),
                                         pairs[1, i:i + self.embed_chunk].contiguous())
                           for i in range(0, pairs.size(1), self.embed_chunk)])[inverse]
        return self.decoder(z[:src.numel()], z[src.numel():])

    def _candidate_terms(self, src: Tensor, candidates: Tensor) -> tuple[Tensor, Tensor]:
        """Decoder terms ``(source [B, H], target [C, H])``: from the evaluation cache when it applies,
        else with candidates embedded :attr:`embed_chunk` at a time."""
        terms = self._cached_scorer(src, candidates) if self._caching() and candidates.numel() else None
        if terms is not None:
            return terms
        source = self.decoder.source_terms(self.embed(src))
        parts = [self.decoder.target_terms(self.embed(candidates[i:i + self.embed_chunk]))
                 for i in range(0, candidates.numel(), self.embed_chunk)]
        return source, torch.cat(parts) if parts else source.new_zeros((0, source.size(1)))

    def candidate_scorer(self, src: Tensor, t: Tensor, candidates: Tensor) -> CandidateScorer:
        """Embed the sources and every candidate once; chunks then only combine decoder terms.

        In evaluation the candidates' target terms are kept across batches (recomputed only for
        dirty nodes); otherwise candidates are embedded :attr:`embed_chunk` at a time and only
        their decoder terms (``[C, H]``) are kept, so peak memory does not grow with the catalog
        beyond them.
        """
        source, target = self._candidate_terms(src, candidates)
        scores: CandidateScorer = lambda ev, cand: self.decoder.combine(source[ev], target[cand])
        return scores

    def candidate_prior(self, src: Tensor, t: Tensor, candidates: Tensor) -> Optional[Tensor]:
        r"""Each candidate's score against the step's **mean source term**: with the decoder
        :math:`s(u, c) = w^\top \mathrm{relu}(a_u + b_c) + w_0`, the prior is
        :math:`w^\top \mathrm{relu}(\bar a + b_c) + w_0`, :math:`\bar a` the mean of the
        sources' :math:`a_u`: ``[C]``, one decoder row, from the same (cached) terms as
        :meth:`candidate_scorer`."""
        source, target = self._candidate_terms(src, candidates)
        return self.decoder.combine(source.mean(0, keepdim=True), target)[0]

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
        the replay engine's ``(t, src, dst)`` order leaves in file order. A kept evaluation
        cache marks the nodes whose embeddings may have changed.
        """
        src, dst, t, msg = batch.src, batch.dst, batch.t, self.messages(batch)
        if src.numel() == 0:
            return
        order = self._canonical_order(src, dst, t, msg if getattr(batch, "msg", None) is not None else None)
        cache = self._cache_if_valid()
        touched = self._mask(torch.cat([src, dst]))
        self.ingest(src[order], dst[order], t[order], msg[order], touched)
        if cache is not None:  # still describes the state before this batch: mark what it changed
            cache.dirty |= self.changed(touched)
            cache.stamp = self._stamp()

    def _canonical_order(self, src: Tensor, dst: Tensor, t: Tensor, msg: Optional[Tensor]) -> Tensor:
        """Permutation sorting the events by ``(t, src, dst, msg)`` (stable): one sort of the
        int64 key ``(rank(t) * N + src) * N + dst`` when it fits, then rows of ``msg`` when the
        data has features (ranked lexicographically, one host read, for more than one column)."""
        n, size = self.num_nodes, src.numel()
        if n * n * (size + 1) < 2**62:
            ordered = torch.topk(t, size, largest=False).values
            keys = [(torch.searchsorted(ordered, t) * n + src) * n + dst]
        else:
            keys = [t, src, dst]
        if msg is not None and msg.numel() > 0:  # lexicographic rank of each row (a one-column message is its own)
            keys.append(msg[:, 0] if msg.size(1) == 1 else torch.unique(msg, dim=0, return_inverse=True)[1])
        order = torch.arange(size, device=src.device)
        for key in reversed(keys):  # stable sorts, last key first: lexicographic order
            order = order[torch.argsort(key[order], stable=True)]
        return order

    def index_earlier(self, batch: TemporalData) -> BatchInteractions:
        src, dst, t, msg = batch.src, batch.dst, batch.t, self.messages(batch)
        order = self._canonical_order(src, dst, t, msg if getattr(batch, "msg", None) is not None else None)
        return BatchInteractions.of(src[order], dst[order], t[order], msg[order])

    def reset_state(self) -> None:
        self._cache = None
        for part in self.stateful_parts.values():
            part.reset_state()  # type: ignore[operator]

    def snapshot(self) -> State:
        return {name: part.snapshot() for name, part in self.stateful_parts.items()}  # type: ignore[operator]

    def restore(self, state: State) -> None:
        self._cache = None
        for name, part in self.stateful_parts.items():
            part.restore(state[name])  # type: ignore[operator]

    def tensors_applied(self, fn) -> None:  # type: ignore[no-untyped-def]
        self._cache = None  # .to(), .cuda(), .half(): the cache is rebuilt on the new tensors

    def describe(self) -> dict:
        return {"name": type(self).__name__, **dataclasses.asdict(self.config)}
