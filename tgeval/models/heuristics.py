r"""Parameter-free baselines with the common model interface (SPEC §6).

All state lives in registered buffers (so ``.to(device)`` moves it), all operations are
batch-vectorised torch, and scores are float64 so that integer-valued scores (degree
products) compare exactly.

* :class:`EdgeBank` — :math:`s_t(u, v) = 1\{(u, v) \in E_{<t}\}`, or with a window ``w``
  :math:`1\{(u, v)` seen in :math:`[t - w, t)\}`. Storage: sorted int64 pair keys
  ``u * num_nodes + v`` and the last time each pair was seen, O(distinct pairs).
* :class:`PairMembership` — the minimal scorer :math:`b + \beta M` with
  :math:`M = 1\{(u, v) \in H_{<t}\}`.
* :class:`NodeMemory` — :math:`1\{u \in U_{<t} \wedge v \in U_{<t}\}`.
* :class:`PreferentialAttachment` — :math:`k_u k_v`, degrees counted over past events.
* :class:`Popularity` — destination in-degree over past events, optionally decayed with a
  half-life.
"""

from __future__ import annotations

from typing import Optional, Union

import torch
from torch import Tensor, nn
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.sorted_keys import expand_ranges, merge_slots
from tgeval.data.strata import MAX_PAIR_KEY_NODES, pair_keys
from tgeval.models.base import TemporalLinkModel
from tgeval.state import State, clone_state

__all__ = ["EdgeBank", "PairMembership", "NodeMemory", "PreferentialAttachment", "Popularity"]


class _BufferState(TemporalLinkModel):
    """State = the registered buffers named in ``_state_keys``."""

    _state_keys: tuple[str, ...] = ()
    state_in_registered_tensors = True

    def snapshot(self) -> State:
        return {key: clone_state(getattr(self, key)) for key in self._state_keys}

    def restore(self, state: State) -> None:
        for key in self._state_keys:
            setattr(self, key, clone_state(state[key]).to(getattr(self, key).device))


class EdgeBank(_BufferState):
    """EdgeBank: remembers every pair seen (or seen within ``window`` time units).

    Args:
        num_nodes: exclusive upper bound of node ids.
        window: ``None`` for unlimited memory, else a positive duration ``w``: a pair
            counts at time ``t`` if it was last seen in ``[t - w, t)``.
        directed: if ``False``, ``(u, v)`` and ``(v, u)`` are the same pair.
    """

    _state_keys = ("keys", "last_seen")
    keys: Tensor  # int64 [P], sorted distinct pair keys
    last_seen: Tensor  # float64 [P], last time each pair occurred

    def __init__(self, num_nodes: int, window: Optional[float] = None, directed: bool = True) -> None:
        super().__init__(num_nodes)
        if num_nodes > MAX_PAIR_KEY_NODES:
            raise ValueError(f"num_nodes={num_nodes} is too large for int64 pair keys (at most {MAX_PAIR_KEY_NODES:,}).")
        if window is not None and not window > 0:
            raise ValueError(f"window must be a positive duration or None, got {window}.")
        self.window = None if window is None else float(window)
        self.directed = directed
        self.register_buffer("keys", torch.zeros(0, dtype=torch.long))
        self.register_buffer("last_seen", torch.zeros(0, dtype=torch.float64))

    def _key(self, src: Tensor, dst: Tensor) -> Tensor:
        return pair_keys(src, dst, self.num_nodes, directed=self.directed)

    def membership(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        """``M`` (bool, shape of ``src``): the pair was seen before (within the window)."""
        key = self._key(src, dst)
        pos = torch.searchsorted(self.keys, key).clamp(max=max(self.keys.numel() - 1, 0))
        if self.keys.numel() == 0:
            return torch.zeros_like(key, dtype=torch.bool)
        found = self.keys[pos] == key
        if self.window is not None:
            found &= self.last_seen[pos] >= t.double() - self.window
        return found

    def _values(self) -> tuple[Union[float, Tensor], Union[float, Tensor]]:
        """Scores of an unseen and of a seen pair."""
        return 0.0, 1.0

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        unseen, seen = self._values()
        member = self.membership(src, dst, t).double()
        return member if (unseen, seen) == (0.0, 1.0) else unseen + (seen - unseen) * member

    def update(self, batch: TemporalData) -> None:
        """Insert the batch's pairs (sorted merge, O(P + B log B)) and refresh their last-seen times."""
        batch_keys, inverse = torch.unique(self._key(batch.src, batch.dst), return_inverse=True)
        times = torch.full((batch_keys.numel(),), float("-inf"), dtype=torch.float64, device=batch_keys.device)
        times.scatter_reduce_(0, inverse, batch.t.double(), reduce="amax")  # batch times are >= stored ones
        pos = torch.searchsorted(self.keys, batch_keys)
        found = self.keys[pos.clamp(max=max(self.keys.numel() - 1, 0))] == batch_keys if self.keys.numel() \
            else torch.zeros_like(batch_keys, dtype=torch.bool)
        new_keys, new_times = batch_keys[~found], times[~found]
        old_slot, new_slot = merge_slots(self.keys.numel(), pos[~found])
        size = self.keys.numel() + new_keys.numel()
        keys = torch.empty(size, dtype=torch.long, device=pos.device)
        last_seen = torch.empty(size, dtype=torch.float64, device=pos.device)
        keys[old_slot], keys[new_slot] = self.keys, new_keys
        last_seen[old_slot] = self.last_seen
        last_seen[old_slot[pos[found]]] = times[found]  # batch times are the latest for seen pairs
        last_seen[new_slot] = new_times
        self.keys, self.last_seen = keys, last_seen

    def reset_state(self) -> None:
        self.keys = self.keys.new_zeros(0)
        self.last_seen = self.last_seen.new_zeros(0)

    def catalog_counts(self, src: Tensor, t: Tensor, pos_score: Tensor,
                       catalog: Catalog) -> Optional[tuple[Tensor, Tensor]]:
        r"""Exact counts from per-source numbers of seen catalog destinations.

        With :math:`n_1(u, t)` the catalog items :math:`c` for which :math:`(u, c)` counts as
        seen at :math:`t` and :math:`n(t)` the items available at :math:`t`, seen items score
        :math:`s_1` and the others :math:`s_0`, so ``above``
        :math:`= n_1 [s_1 > p] + (n - n_1)[s_0 > p]` (likewise ``equal``). :math:`n_1` comes
        from ``searchsorted`` on the sorted pair keys; with a window, on keys
        ``src * (U + 1) + rank(last_seen)`` (``U`` distinct last-seen times), which order each
        source's pairs by time. Offered for directed banks when every seen catalog
        destination is available at every ``t`` of the batch; ``None`` otherwise.
        """
        if not self.directed:
            return None
        n = self.num_nodes
        if self.window is None and catalog.available_from is None:
            n_seen = self._seen_in_catalog(src, catalog)
            if n_seen is not None:
                return self._counts(n_seen, catalog.num_available(t), pos_score)
        dst_pos = catalog.position(self.keys % n)
        in_catalog = dst_pos >= 0
        if catalog.available_from is not None and bool(in_catalog.any()):
            latest = catalog.available_from[dst_pos[in_catalog]].max()
            if not bool(latest < t.min().to(latest.dtype)):
                return None
        keys = self.keys[in_catalog]
        if self.window is None:
            n_seen = torch.searchsorted(keys, src * n + n) - torch.searchsorted(keys, src * n)
        else:
            times = torch.unique(self.last_seen[in_catalog])  # sorted distinct times, U of them
            stride = times.numel() + 1
            rank = torch.searchsorted(times, self.last_seen[in_catalog])
            by_source_then_time = torch.sort((keys // n) * stride + rank).values
            first_rank = torch.searchsorted(times, t.double() - self.window)  # first time >= t - w
            n_seen = (torch.searchsorted(by_source_then_time, (src + 1) * stride)
                      - torch.searchsorted(by_source_then_time, src * stride + first_rank))
        return self._counts(n_seen, catalog.num_available(t), pos_score)

    def _counts(self, n_seen: Tensor, n_available: Tensor, pos_score: Tensor) -> tuple[Tensor, Tensor]:
        n_unseen = n_available - n_seen
        unseen, seen = self._values()
        above = n_seen * (seen > pos_score) + n_unseen * (unseen > pos_score)
        equal = n_seen * (seen == pos_score) + n_unseen * (unseen == pos_score)
        return above.long(), equal.long()

    def _seen_in_catalog(self, src: Tensor, catalog: Catalog) -> Optional[Tensor]:
        """Per event, the bank's catalog destinations of its source, reading only those sources'
        key ranges (cheaper than a pass over the whole bank); ``None`` when the ranges are
        longer than the bank (hub sources repeated in a batch)."""
        n = self.num_nodes
        lo = torch.searchsorted(self.keys, src * n)
        lengths = torch.searchsorted(self.keys, src * n + n) - lo
        total = int(lengths.sum())
        if total > self.keys.numel():
            return None
        event, index = expand_ranges(lo, lengths)
        inside = catalog.position(self.keys[index] % n) >= 0
        return torch.zeros_like(src).index_add_(0, event, inside.long())

    def describe(self) -> dict:
        return {"name": "edgebank" if self.window is None else "edgebank-window",
                "window": self.window, "directed": self.directed, "num_nodes": self.num_nodes}


class PairMembership(EdgeBank):
    r"""Minimal pair-membership scorer :math:`s = b + \beta M` (SPEC §6); ``EdgeBank`` with
    ``beta=1, bias=0``. With ``beta < 0`` it prefers unseen pairs.

    ``beta`` and ``bias`` are float64 parameters, so the scorer can be fitted with
    :func:`tgeval.train.train_epoch` (e.g. BCE against a sampler's negatives); the bank of
    seen pairs is state, as in :class:`EdgeBank`.
    """

    def __init__(self, num_nodes: int, beta: float = 1.0, bias: float = 0.0, directed: bool = True) -> None:
        super().__init__(num_nodes, window=None, directed=directed)
        self.beta = nn.Parameter(torch.tensor(float(beta), dtype=torch.float64))
        self.bias = nn.Parameter(torch.tensor(float(bias), dtype=torch.float64))

    def _values(self) -> tuple[Tensor, Tensor]:
        return self.bias.detach(), (self.bias + self.beta).detach()

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        return self.bias + self.beta * self.membership(src, dst, t).double()

    def describe(self) -> dict:
        return {"name": "membership", "beta": float(self.beta.detach()), "bias": float(self.bias.detach()),
                "directed": self.directed, "num_nodes": self.num_nodes}


class NodeMemory(_BufferState):
    """``1{u seen and v seen}``: both endpoints took part in an earlier event."""

    _state_keys = ("seen",)
    seen: Tensor  # bool [N]

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes)
        self.register_buffer("seen", torch.zeros(num_nodes, dtype=torch.bool))

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        return (self.seen[src] & self.seen[dst]).double()

    def update(self, batch: TemporalData) -> None:
        self.seen[batch.src] = True
        self.seen[batch.dst] = True

    def reset_state(self) -> None:
        self.seen = torch.zeros_like(self.seen)

    def describe(self) -> dict:
        return {"name": "node-memory", "num_nodes": self.num_nodes}


class PreferentialAttachment(_BufferState):
    """Degree product ``k_u * k_v``; ``k`` counts past events touching a node (as source or destination)."""

    _state_keys = ("degree",)
    degree: Tensor  # float64 [N]

    def __init__(self, num_nodes: int) -> None:
        super().__init__(num_nodes)
        self.register_buffer("degree", torch.zeros(num_nodes, dtype=torch.float64))

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        return self.degree[src] * self.degree[dst]

    def update(self, batch: TemporalData) -> None:
        ones = torch.ones(batch.src.numel(), dtype=torch.float64, device=self.degree.device)
        self.degree.index_add_(0, batch.src, ones).index_add_(0, batch.dst, ones)

    def reset_state(self) -> None:
        self.degree = torch.zeros_like(self.degree)

    def describe(self) -> dict:
        return {"name": "pa", "num_nodes": self.num_nodes}


class Popularity(_BufferState):
    r"""Destination popularity: past in-degree of ``v``, optionally decayed.

    Without ``half_life`` the score is the number of past events with destination ``v``.
    With ``half_life=h`` an event at time :math:`s` contributes :math:`2^{-(t - s)/h}` to the
    popularity at time :math:`t`, and the score is its base-2 logarithm,

    .. math::
        s_t(v) = \log_2 c_v - (t - t_{ref}) / h,

    a monotone transform of the decayed count (same ranks, AUROC and AP) computed with
    exactly rounded arithmetic only: a per-query ``exp2`` would round differently in
    vectorised and scalar code paths, making a score depend on the length of the tensor it
    was computed in (i.e. on the other events of its batch). ``-inf`` for ``c_v = 0``.
    """

    _state_keys = ("in_degree", "reference_time")
    in_degree: Tensor  # float64 [N], decayed counts as of reference_time
    reference_time: Tensor  # float64 []

    def __init__(self, num_nodes: int, half_life: Optional[float] = None) -> None:
        super().__init__(num_nodes)
        if half_life is not None and not half_life > 0:
            raise ValueError(f"half_life must be positive or None, got {half_life}.")
        self.half_life = half_life
        self.register_buffer("in_degree", torch.zeros(num_nodes, dtype=torch.float64))
        # in_degree holds the decayed counts as of reference_time.
        self.register_buffer("reference_time", torch.zeros((), dtype=torch.float64))

    def _decay(self, elapsed: Tensor) -> Tensor:
        if self.half_life is None:
            return torch.ones_like(elapsed)
        return torch.exp2(-elapsed / self.half_life)

    def _decayed(self, counts: Tensor, elapsed: Tensor) -> Tensor:
        """``counts * decay(elapsed)``, with zero counts staying 0 (no ``0 * inf``)."""
        if self.half_life is None:
            return counts
        return torch.where(counts > 0, counts * self._decay(elapsed), torch.zeros_like(counts))

    def score(self, src: Tensor, dst: Tensor, t: Tensor) -> Tensor:
        if self.half_life is None:
            return self.in_degree[dst]
        # log2 over the whole [N] table: the same code path whatever the batch.
        return torch.log2(self.in_degree)[dst] - (t.double() - self.reference_time) / self.half_life

    def update(self, batch: TemporalData) -> None:
        now = batch.t.double().max()
        decayed = self._decayed(self.in_degree, now - self.reference_time)
        self.in_degree = decayed.index_add(0, batch.dst, self._decay(now - batch.t.double()))
        self.reference_time = now

    def reset_state(self) -> None:
        self.in_degree = torch.zeros_like(self.in_degree)
        self.reference_time = torch.zeros_like(self.reference_time)

    def describe(self) -> dict:
        return {"name": "popularity", "half_life": self.half_life, "num_nodes": self.num_nodes}
