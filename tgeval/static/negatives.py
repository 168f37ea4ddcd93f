r"""Negative pairs of a static graph: uniform and degree-corrected benchmarks (docs/protocol.md §5, §10).

Both samplers draw the two endpoints of a pair independently from a **draw list** :math:`L`
and keep the unordered pair :math:`\{a, b\}`:

* ``weighting="uniform"``: :math:`L` holds every node of degree :math:`\ge 1` once;
* ``weighting="degree"`` (degree-corrected): :math:`L` holds node :math:`v` :math:`k_v` times
  (it is the list of edge endpoints), so a negative's endpoints have the degree
  distribution of a positive's endpoints (or :math:`L` is the list of endpoints of given
  ``stubs`` pairs, e.g. the test edges, and :math:`k_v` counts them), and

.. math::
    P(\{a, b\}) \propto m_a m_b, \qquad m_v = 1 \text{ (uniform) or } k_v \text{ (degree)},

over the **valid** pairs (below).

On a **bipartite** graph (:attr:`~tgeval.static.graph.StaticGraph.dst_offset`) there is one
draw list per side: :math:`a` comes from the source side's list (its nodes of degree
:math:`\ge 1` once, or its edge endpoints: each source node :math:`k_v` times) and :math:`b`
from the destination side's, so every negative joins the two sides as every edge does, and
degree-corrected negatives match the positives' degree distribution on each side. The
formula above holds with :math:`(a, b)` ranging over source side :math:`\times` destination side.

**Valid** pairs: :math:`a \ne b`, not an edge of the graph, not an excluded pair
(e.g. a test edge), and, without replacement, not drawn before (no duplicates). Invalid draws
are rejected and redrawn: keeping the accepted draws of an i.i.d. sequence is exactly
successive sampling without replacement. Randomness is counter-based
(:func:`~tgeval.core.rng.counter_uniform`): slot :math:`i` of a request reads
draw round :math:`r` as a pure function of (seed, :math:`i`, :math:`r`), vectorised over the
slots still open. If slots are still open after ``64`` rounds (a request close to the number
of valid pairs), they are finished exactly over the enumerated valid pairs
(Efraimidis–Spirakis keys :math:`E / w` without replacement, inverse CDF with it); this needs
at most :math:`2^{26}` candidate pairs and otherwise raises.

The samplers return int64 ``[2, M]`` pairs (``u < v``) on the graph's device, so they serve as
training negatives as well as benchmarks. (The event samplers of :mod:`tgeval.samplers`, e.g.
:class:`~tgeval.samplers.DegreeSampler`, corrupt the destination of temporal events instead.)
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from tgeval.core.choices import WEIGHTINGS, Weighting
from tgeval.errors import ProtocolError, SamplerError, StaticGraphError
from tgeval.core.rng import counter_uniform
from tgeval.data.sorted_keys import is_member, merge_slots
from tgeval.static.graph import StaticGraph, edge_keys

__all__ = ["Weighting", "WEIGHTINGS", "PairSampler"]


_MAX_ROUNDS = 64
_FINISH_ROUND = 1 << 20  # counter round of the exact finish
_FINISH_LIMIT = 1 << 26  # most candidate pairs enumerated by the exact finish


class PairSampler:
    """Negative node pairs of ``graph`` (module docstring).

    Args:
        graph: its edges are never negatives; its degrees give the draw list.
        weighting: ``"uniform"`` or ``"degree"`` (degree-corrected).
        exclude: int64 ``[2, X]`` further pairs that are never negatives (e.g. the test edges
            when sampling training negatives from the training graph), either orientation.
        stubs: ``"degree"`` only: int64 ``[2, S]`` pairs whose endpoints form the draw list
            instead of the graph's edges (node :math:`v` as often as it occurs in them), e.g. the
            test edges, whose endpoints are the positives' own; on a bipartite graph each pair
            joins the two sides, either orientation.

    Raises:
        StaticGraphError: ``stubs`` hold an id outside the graph or, bipartite, a pair within one side.

    Example:
        >>> g = StaticGraph(torch.tensor([[0, 0, 1, 2], [1, 2, 2, 3]]), 5)
        >>> PairSampler(g, weighting="degree").sample(2, seed=0).shape
        torch.Size([2, 2])
    """

    def __init__(self, graph: StaticGraph, *, weighting: Weighting, exclude: Optional[Tensor] = None,
                 stubs: Optional[Tensor] = None) -> None:
        if weighting not in WEIGHTINGS:
            raise SamplerError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}.")
        if exclude is not None and (exclude.dim() != 2 or exclude.size(0) != 2):
            raise StaticGraphError(f"exclude must be an edge_index [2, X], got shape {tuple(exclude.shape)}.")
        self.weighting = weighting
        self.num_nodes = n = graph.num_nodes
        self.dst_offset = d = graph.dst_offset
        device = graph.device
        degree = graph.degree()
        ends = graph.edge_index if stubs is None else _stubs(graph, stubs, weighting)
        self.num_stubs = None if stubs is None else int(ends.size(1))
        weight = degree if stubs is None else torch.bincount(ends.flatten(), minlength=n)
        self.multiplicity = (weight if weighting == "degree" else (degree > 0).long()).double()
        #: the draw lists of the first and the second endpoint (one list twice when unipartite)
        self.draw_lists: tuple[Tensor, Tensor]
        if d is None:
            self.draw_lists = (ends.flatten() if weighting == "degree" else torch.nonzero(degree > 0).flatten(),) * 2
        else:  # every edge (and stub pair) is (source-side u, destination-side v)
            active = torch.nonzero(degree > 0).flatten()
            self.draw_lists = ((ends[0], ends[1]) if weighting == "degree"
                               else (active[active < d], active[active >= d]))
        excluded = [graph.keys()]
        if exclude is not None:
            exclude = exclude.to(device).long()
            excluded.append(edge_keys(exclude[0], exclude[1], n))
        self.excluded = torch.unique(torch.cat(excluded))
        a, b = self.excluded // n, self.excluded % n
        inside = (self.multiplicity[a] > 0) & (self.multiplicity[b] > 0) & (a != b)
        #: number of valid pairs (distinct negatives available)
        if d is None:
            active_count = int((self.multiplicity > 0).sum())
            self.num_available = active_count * (active_count - 1) // 2 - int(inside.sum())
        else:
            first, second = (torch.unique(x).numel() for x in self.draw_lists)
            self.num_available = first * second - int((inside & (a < d) & (b >= d)).sum())

    def describe(self) -> dict:
        """The benchmark's definition, for result files."""
        if self.dst_offset is None:
            rule = ("endpoints drawn uniformly from the nodes of degree >= 1" if self.weighting == "uniform" else
                    "endpoints drawn from a list holding each node degree-many times (degree-corrected)")
        else:
            rule = ("bipartite: one endpoint from each side, drawn uniformly from that side's nodes of degree >= 1"
                    if self.weighting == "uniform" else "bipartite: one endpoint from each side, drawn from a list "
                    "holding each node of that side degree-many times (degree-corrected per side)")
        if self.num_stubs is not None:
            rule += f"; the list holds the endpoints of {self.num_stubs} given pairs, not of the graph's edges"
        return {"weighting": self.weighting, "draw": rule,
                "rejects": "self-loops, edges of the graph, excluded pairs, duplicates (without replacement)",
                "num_available_pairs": self.num_available,
                "randomness": "counter-based: (seed, slot, round)"}

    def sample(self, num: int, *, seed: int, replace: bool = False) -> Tensor:
        """``num`` negative pairs: int64 ``[2, num]`` with ``u < v``.

        Raises:
            SamplerError: ``num`` exceeds the valid pairs without ``replace`` (or there is none with it).
        """
        num = int(num)
        if num < 0:
            raise ProtocolError(f"num must be >= 0, got {num}.")
        need = min(num, 1) if replace else num
        if need > self.num_available:
            raise SamplerError(f"{num} distinct negative pairs were asked for, but the graph has only "
                               f"{self.num_available} valid pairs (weighting={self.weighting!r}, after rejecting "
                               f"self-loops, edges and excluded pairs). Ask for fewer, or pass replace=True.")
        n, device = self.num_nodes, self.excluded.device
        keys = torch.full((num,), -1, dtype=torch.long, device=device)
        accepted = keys.new_zeros(0)
        open_slots = torch.arange(num, device=device)
        for round_index in range(_MAX_ROUNDS):
            if open_slots.numel() == 0:
                break
            u = counter_uniform(seed, open_slots, round_index, 2)
            nodes = torch.stack([draws[(u[:, i] * draws.numel()).long().clamp(max=draws.numel() - 1)]
                                 for i, draws in enumerate(self.draw_lists)], dim=1)
            # The round's keys in sorted order (stable: equal keys stay in slot order), where lookups
            # in the sorted key arrays run several times faster than for keys in random order.
            # Validity is a function of the key, so a key's first occurrence is its first valid one.
            key, order = torch.sort(edge_keys(nodes[:, 0], nodes[:, 1], n), stable=True)
            ok = (key // n != key % n) & ~is_member(self.excluded, key)
            if not replace:
                ok &= ~is_member(accepted, key)
                ok[1:] &= key[1:] != key[:-1]
                accepted = _merge(accepted, key[ok])
            keys[open_slots[order[ok]]] = key[ok]
            ok = torch.zeros_like(ok).scatter_(0, order, ok)
            open_slots = open_slots[~ok]
        if open_slots.numel():
            keys[open_slots] = self._finish(open_slots, accepted, seed, replace)
        return torch.stack([keys // n, keys % n])

    def _finish(self, slots: Tensor, accepted: Tensor, seed: int, replace: bool) -> Tensor:
        """Keys for the slots rejection left open, drawn exactly over the enumerated valid pairs."""
        nodes = torch.nonzero(self.multiplicity > 0).flatten()
        if self.dst_offset is None:
            count = nodes.numel() * (nodes.numel() - 1) // 2
        else:  # source side x destination side
            first, second = nodes[nodes < self.dst_offset], nodes[nodes >= self.dst_offset]
            count = first.numel() * second.numel()
        if count > _FINISH_LIMIT:
            raise SamplerError(f"{slots.numel()} negative pairs were still open after {_MAX_ROUNDS} rejection "
                               f"rounds, and finishing them exactly would enumerate {count} pairs (more than "
                               f"{_FINISH_LIMIT}). Ask for fewer negatives (the valid pairs are nearly used up).")
        if self.dst_offset is None:
            i, j = torch.triu_indices(nodes.numel(), nodes.numel(), 1, device=nodes.device)
            key = edge_keys(nodes[i], nodes[j], self.num_nodes)
        else:
            key = (first[:, None] * self.num_nodes + second[None, :]).flatten()
        valid = ~is_member(self.excluded, key)
        if not replace:
            valid &= ~is_member(accepted, key)
        key = key[valid]
        weight = self.multiplicity[key // self.num_nodes] * self.multiplicity[key % self.num_nodes]
        if replace:
            cum = torch.cumsum(weight, 0)
            u = counter_uniform(seed, slots, _FINISH_ROUND, 1)[:, 0]
            return key[torch.searchsorted(cum, u * cum[-1], right=True).clamp(max=key.numel() - 1)]
        u = counter_uniform(seed, key, _FINISH_ROUND, 1)[:, 0]
        order = torch.argsort(-torch.log1p(-u) / weight, stable=True)
        return key[order[: slots.numel()]]


def _stubs(graph: StaticGraph, stubs: Tensor, weighting: Weighting) -> Tensor:
    """``stubs`` checked (PairSampler's argument), each pair ordered ``u <= v``: int64 ``[2, S]``."""
    if weighting != "degree":
        raise ProtocolError(f"stubs give the draw list of weighting='degree', not of {weighting!r}.")
    if stubs.dim() != 2 or stubs.size(0) != 2 or stubs.size(1) == 0:
        raise StaticGraphError(f"stubs must be a non-empty edge_index [2, S], got shape {tuple(stubs.shape)}.")
    ends = torch.sort(stubs.to(graph.device).long(), dim=0).values
    if int(ends.min()) < 0 or int(ends.max()) >= graph.num_nodes:
        raise StaticGraphError(f"stubs hold ids in [{int(ends.min())}, {int(ends.max())}], outside the graph's "
                               f"[0, {graph.num_nodes}). Pass pairs of the graph's nodes (e.g. its test edges).")
    if graph.dst_offset is not None and bool(((ends[0] >= graph.dst_offset) | (ends[1] < graph.dst_offset)).any()):
        raise StaticGraphError(f"stubs of a bipartite graph must each join its two sides (dst_offset="
                               f"{graph.dst_offset}), as its edges do; some pair lies within one side.")
    return ends


def _merge(old: Tensor, new: Tensor) -> Tensor:
    """Two sorted int64 key arrays, none in both, as one sorted array, in time linear in their size."""
    if new.numel() == 0:
        return old
    old_slot, new_slot = merge_slots(old.numel(), torch.searchsorted(old, new))
    merged = torch.empty(old.numel() + new.numel(), dtype=old.dtype, device=old.device)
    merged[old_slot] = old
    merged[new_slot] = new
    return merged
