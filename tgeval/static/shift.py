r"""Structural-shift splits of a static graph's links (docs/protocol.md §10).

Every link :math:`e = (u, v)` of the graph :math:`G` gets a heuristic score :math:`h(e)`:

* ``"cn"``: common neighbours in :math:`G` (on a bipartite graph, which has none across its sides:
  the paths of length 3 between :math:`u` and :math:`v`, :mod:`tgeval.static.heuristics`);
  ``"pa"``: :math:`k_u k_v` in :math:`G`;
* ``"sp"``: :math:`1 / \mathrm{SP}_{G - e}(u, v)`, the shortest-path length with the link
  itself removed while measuring (``0`` when :math:`v` is not reached within ``max_depth``).

With thresholds :math:`(i_{train}, i_{valid})` the **forward** split puts
:math:`h \le i_{train}` in train, :math:`i_{train} < h \le i_{valid}` in valid and the rest in
test; the **inverse** split swaps train and test. Caps keep at most so many links per split
(a seeded random subset; the rest are counted as capped). The training graph holds the
train links only, so no valid or test link is in it; valid and test links with no endpoint in
the training graph are dropped and counted. The shift is measured by the earth mover's
distance between the score distributions of train and test (:func:`wasserstein_1d`).

Shortest paths come from a batched breadth-first search on the device: one column per link,
frontiers expanded by a sparse-dense product with the adjacency, bounded by ``max_depth``.
Removing :math:`e` only changes the first step from :math:`u` (a simple graph reaches
:math:`v` in one step through :math:`e` alone, and :math:`e` leads nowhere new later), so the
search from :math:`u` drops :math:`v` from its first frontier.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

import torch
from torch import Tensor

from tgeval.core.choices import SHIFT_HEURISTICS, ShiftHeuristic
from tgeval.errors import MetricInputError, ProtocolError, SplitError, StaticGraphError
from tgeval.core.rng import counter_uniform
from tgeval.static.graph import StaticGraph
from tgeval.static.heuristics import Adjacency, adjacency, heuristic_scores

__all__ = ["ShiftHeuristic", "SHIFT_HEURISTICS", "ShiftSplit", "shortest_path_lengths", "link_scores",
           "wasserstein_1d", "shift_split"]


_BUDGET = 1 << 22  # (node, link) cells of one breadth-first batch
_CAP_ROUND = 1 << 25  # counter round of the caps' random keys


def shortest_path_lengths(adj: Adjacency, src: Tensor, dst: Tensor, *, max_depth: int, skip_direct: bool = False,
                          budget: int = _BUDGET) -> Tensor:
    """Hop distance from ``src[i]`` to ``dst[i]``: int64 ``[B]``, ``-1`` if farther than ``max_depth``.

    Args:
        adj: the graph.
        src, dst: int64 ``[B]``.
        max_depth: deepest level searched (``>= 1``).
        skip_direct: measure in the graph without the edge ``(src[i], dst[i])`` (module docstring).
        budget: most ``n x links`` cells per batch.
    """
    if max_depth < 1:
        raise ProtocolError(f"max_depth must be >= 1, got {max_depth}.")
    n, device = adj.num_nodes, src.device
    out = torch.full((src.numel(),), -1, dtype=torch.long, device=device)
    width = max(1, budget // max(n, 1))
    for start in range(0, src.numel(), width):
        s, d = src[start : start + width], dst[start : start + width]
        cols = torch.arange(s.numel(), device=device)
        frontier = torch.zeros(n, s.numel(), dtype=torch.float32, device=device)
        frontier[s, cols] = 1.0
        visited = frontier.bool()
        dist = torch.where(s == d, 0, -1)
        for depth in range(1, max_depth + 1):
            reached = torch.sparse.mm(adj.matrix, frontier) > 0
            if depth == 1 and skip_direct:
                reached[d, cols] = False
            new = reached & ~visited
            hit = new[d, cols] & (dist < 0)
            dist = torch.where(hit, depth, dist)
            visited |= new
            frontier = new.float()
            if not bool(((dist < 0) & new.any(0)).any()):  # every column found or exhausted
                break
        out[start : start + width] = dist
    return out


def link_scores(graph: StaticGraph, heuristic: ShiftHeuristic, *, max_depth: int = 6) -> Tensor:
    """:math:`h(e)` of every link of ``graph`` (module docstring): float64 ``[E]``."""
    if heuristic not in SHIFT_HEURISTICS:
        raise ProtocolError(f"heuristic must be one of {SHIFT_HEURISTICS}, got {heuristic!r}.")
    u, v = graph.edge_index
    if heuristic != "sp":
        return heuristic_scores(adjacency(graph), u, v, heuristic)
    # breadth-first search reads the neighbour lists only: no pair map
    sp = shortest_path_lengths(adjacency(graph, map_limit=0), u, v, max_depth=max_depth, skip_direct=True)
    return torch.where(sp > 0, 1.0 / sp.clamp(min=1).double(), torch.zeros_like(sp, dtype=torch.float64))


def wasserstein_1d(a: Tensor, b: Tensor) -> Tensor:
    r"""Earth mover's (1-Wasserstein) distance of two samples, :math:`\int |F_a(z) - F_b(z)|\,dz`:
    0-dim float64 (equals ``scipy.stats.wasserstein_distance(a, b)``).

    Example:
        >>> wasserstein_1d(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
        tensor(1., dtype=torch.float64)
    """
    if a.numel() == 0 or b.numel() == 0:
        raise MetricInputError(f"both samples must be non-empty, got {a.numel()} and {b.numel()} values.")
    a, b = torch.sort(a.double()).values, torch.sort(b.double()).values
    z = torch.unique(torch.cat([a, b]))
    fa = torch.searchsorted(a, z[:-1], right=True).double() / a.numel()
    fb = torch.searchsorted(b, z[:-1], right=True).double() / b.numel()
    return torch.sum(torch.abs(fa - fb) * torch.diff(z))


@dataclass(frozen=True)
class ShiftSplit:
    """A structural-shift split (module docstring).

    Attributes:
        graph: the whole graph.
        train: the training graph (train links only; same ``num_nodes``).
        valid, test: int64 ``[2, V]``, ``[2, T]`` links.
        scores: split name -> float64 heuristic scores of its links.
        counts: ``sizes``, ``capped`` and ``dropped_isolated`` (links with no training endpoint) per split.
        emd: earth mover's distance between the train and test score distributions.
        heuristic, thresholds, inverse, caps, seed, max_depth: the split's definition.
    """

    graph: StaticGraph
    train: StaticGraph
    valid: Tensor
    test: Tensor
    scores: dict[str, Tensor]
    counts: dict[str, dict[str, int]]
    emd: float
    heuristic: str
    thresholds: tuple[float, float]
    inverse: bool
    caps: tuple[Optional[int], Optional[int], Optional[int]]
    seed: int
    max_depth: int

    def describe(self) -> dict:
        """The split's definition, sizes, counts and EMD, for result files."""
        return {"split": "structural shift", "heuristic": self.heuristic, "thresholds": list(self.thresholds), "inverse": self.inverse,
                "caps": dict(zip(("train", "valid", "test"), self.caps)), "seed": self.seed,
                "max_depth": self.max_depth, **self.counts, "emd_train_test": self.emd,
                "rule": ("h <= i_train: train; i_train < h <= i_valid: valid; h > i_valid: test"
                         + (" (inverse: train and test swapped)" if self.inverse else "")),
                "score": {"cn": "paths of length 3 (bipartite)" if self.graph.bipartite else "common neighbours",
                          "pa": "k_u * k_v",
                          "sp": "1 / shortest-path length without the link itself (0 beyond max_depth)"}[self.heuristic]}


def _cap(index: Tensor, cap: Optional[int], keys: Tensor, seed: int) -> Tensor:
    """At most ``cap`` of the link indices ``index``: the ones with the smallest counter-based keys."""
    if cap is None or index.numel() <= cap:
        return index
    u = counter_uniform(seed, keys[index], _CAP_ROUND, 1)[:, 0]
    return torch.sort(index[torch.argsort(u, stable=True)[:cap]]).values


def shift_split(graph: StaticGraph, heuristic: ShiftHeuristic, thresholds: Sequence[float], *, inverse: bool = False,
                caps: Sequence[Optional[int]] = (None, None, None), seed: int = 0, max_depth: int = 6) -> ShiftSplit:
    """Split ``graph``'s links by ``heuristic`` at ``thresholds = (i_train, i_valid)`` (module docstring).

    Raises:
        StaticGraphError: a split would be empty (the message gives the score range).
        SplitError: ``i_train > i_valid`` or a negative cap.
        ProtocolError: an unknown heuristic.
    """
    if len(thresholds) != 2 or float(thresholds[0]) > float(thresholds[1]):
        raise SplitError(f"thresholds must be (i_train, i_valid) with i_train <= i_valid, got {tuple(thresholds)}.")
    if len(caps) != 3 or any(c is not None and c < 1 for c in caps):
        raise SplitError(f"caps must be three sizes >= 1 (or None) for train, valid, test; got {tuple(caps)}.")
    low, high = float(thresholds[0]), float(thresholds[1])
    h = link_scores(graph, heuristic, max_depth=max_depth)
    below, middle, above = h <= low, (h > low) & (h <= high), h > high
    member = {"train": above if inverse else below, "valid": middle, "test": below if inverse else above}
    keys = graph.keys()
    counts: dict[str, dict[str, int]] = {"sizes": {}, "capped": {}, "dropped_isolated": {}}
    index = {}
    for name, cap in zip(("train", "valid", "test"), caps):
        chosen = torch.nonzero(member[name]).flatten()
        if chosen.numel() == 0:
            raise StaticGraphError(
                f"thresholds (i_train={low}, i_valid={high}) leave the {name} split empty: the {heuristic} scores of "
                f"the {graph.num_edges} links range over [{float(h.min()):.4g}, {float(h.max()):.4g}] (median "
                f"{float(h.median()):.4g}). Choose thresholds inside that range.")
        index[name] = _cap(chosen, cap, keys, seed)
        counts["capped"][name] = int(chosen.numel() - index[name].numel())
    train = replace(graph, edge_index=graph.edge_index[:, index["train"]],
                    weight=None if graph.weight is None else graph.weight[index["train"]])
    in_train = train.degree() > 0
    counts["dropped_isolated"]["train"] = 0
    for name in ("valid", "test"):
        u, v = graph.edge_index[:, index[name]]
        keep = in_train[u] | in_train[v]
        counts["dropped_isolated"][name] = int((~keep).sum())
        index[name] = index[name][keep]
        if index[name].numel() == 0:
            raise StaticGraphError(f"every {name} link touches no node of the training graph (all dropped): choose "
                                   f"thresholds that put more links in train.")
    counts["sizes"] = {name: int(i.numel()) for name, i in index.items()}
    scores = {name: h[i] for name, i in index.items()}
    return ShiftSplit(graph, train, graph.edge_index[:, index["valid"]], graph.edge_index[:, index["test"]], scores,
                      counts, float(wasserstein_1d(scores["train"], scores["test"])), heuristic, (low, high),
                      bool(inverse), (caps[0], caps[1], caps[2]), int(seed), int(max_depth))
