r"""Birth–Death diagrams and the novelty time series as PNG files (SPEC §3, §4). Needs matplotlib.

**Birth–Death diagram**: one point per node (or pair) :math:`x` at
:math:`(d_x, b_x)` (x = death, y = birth), coloured historical / overlap / inductive for a
split time, with the split drawn as the lines :math:`d = t_{split}` and :math:`b = t_{split}`
(and the diagonal :math:`b = d`; every point lies on or below it). Points are drawn as a
rasterised scatter whose marker size and alpha shrink with the number of points, so 10^6
points stay readable and the file stays small. For bipartite data the nodes are drawn in two
panels, sources (users) and destinations (items).

matplotlib is imported lazily, through its object-oriented API with the Agg canvas (no
``pyplot``, no change of the global backend). Files are written atomically.
"""

from __future__ import annotations

import io
import os
from typing import Any, Literal, Optional, Sequence, Union

import torch
from torch_geometric.data import TemporalData

from tgeval.atomic import write_atomic
from tgeval.diagnostics.novelty import NoveltySeries
from tgeval.samplers.birth_death import CLASSES, Lifetimes, node_lifetimes, pair_lifetimes

__all__ = ["is_bipartite", "birth_death_panels", "plot_birth_death", "plot_novelty"]

Number = Union[int, float]
PathLike = Union[str, "os.PathLike[str]"]

_COLOURS = {"H": "#1f77b4", "O": "#2ca02c", "I": "#d62728"}
_NAMES = {"H": "historical", "O": "overlap", "I": "inductive"}


def _matplotlib() -> tuple[Any, Any]:
    """``(Figure, FigureCanvasAgg)``, or an ImportError that names the install command."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("tgeval plots need matplotlib, which is not installed. Install it with "
                          "`pip install matplotlib`.") from error
    return Figure, FigureCanvasAgg


def is_bipartite(data: TemporalData) -> bool:
    """Whether every source id is below every destination id: ``max(src) < min(dst)``."""
    return bool(data.src.numel()) and int(data.src.max()) < int(data.dst.min())


def birth_death_panels(data: TemporalData, *, kind: Literal["nodes", "pairs"], directed: bool = True,
                       bipartite: Optional[bool] = None, num_nodes: Optional[int] = None) -> list[tuple[str, Lifetimes]]:
    """The ``(title, lifetimes)`` panels of a Birth–Death diagram.

    Args:
        data: the whole stream.
        kind: ``"nodes"`` or ``"pairs"``.
        directed: pairs are ordered (``False``: ``(min, max)``).
        bipartite: nodes in two panels, sources (``id <= max(src)``) and destinations;
            ``None`` detects it with :func:`is_bipartite`. Pairs are always one panel.
        num_nodes: id bound for pair keys.
    """
    if kind not in ("nodes", "pairs"):
        raise ValueError(f"kind must be 'nodes' or 'pairs', got {kind!r}.")
    if kind == "pairs":
        what = "pairs" if directed else "undirected pairs"
        return [(what, pair_lifetimes(data, num_nodes, directed=directed))]
    lt = node_lifetimes(data)
    if not (is_bipartite(data) if bipartite is None else bipartite):
        return [("nodes", lt)]
    users = lt.keys <= int(data.src.max())
    return [("source nodes (users)", Lifetimes(lt.keys[users], lt.birth[users], lt.death[users])),
            ("destination nodes (items)", Lifetimes(lt.keys[~users], lt.birth[~users], lt.death[~users]))]


def _save(fig: Any, canvas_type: Any, path: PathLike, dpi: int) -> None:
    canvas_type(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    write_atomic(path, buffer.getvalue())


def plot_birth_death(path: PathLike, panels: Sequence[tuple[str, Lifetimes]], t_split: Number, *,
                     title: str = "", dpi: int = 110) -> None:
    """Write a Birth–Death diagram (one subplot per panel) as a PNG at ``path``.

    Args:
        path: the PNG file (written atomically; folders are created).
        panels: ``(title, lifetimes)`` pairs, e.g. from :func:`birth_death_panels`.
        t_split: the split time that defines the colours and the drawn lines.
        title: the figure title.
        dpi: resolution.

    Raises:
        ImportError: matplotlib is not installed.
        ValueError: ``panels`` is empty.
    """
    if not panels:
        raise ValueError("panels must hold at least one (title, lifetimes) pair.")
    figure_type, canvas_type = _matplotlib()
    fig = figure_type(figsize=(max(7.0, 5.4 * len(panels)), 5.2))
    split = float(t_split)
    for i, (name, lt) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        codes = lt.classes(split).cpu()
        birth, death = lt.birth.cpu().double().numpy(), lt.death.cpu().double().numpy()
        n = max(int(codes.numel()), 1)
        size = min(12.0, max(0.3, 3e4 / n))
        alpha = min(0.8, max(0.04, 3e3 / n))
        for code, cls in enumerate(CLASSES):
            mask = (codes == code).numpy()
            ax.scatter(death[mask], birth[mask], s=size, alpha=alpha, c=_COLOURS[cls], linewidths=0,
                       rasterized=True, label=f"{_NAMES[cls]} ({int(mask.sum())})")
        if birth.size:
            low, high = float(min(birth.min(), split)), float(max(death.max(), split))
            ax.plot([low, high], [low, high], color="0.6", linewidth=0.8, linestyle=":")
        ax.axvline(split, color="k", linewidth=0.9, linestyle="--")
        ax.axhline(split, color="k", linewidth=0.9, linestyle="--")
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_xlabel("death (time of last event)")
        ax.set_ylabel("birth (time of first event)")
        ax.set_title(f"{name}: {int(codes.numel())}")
        legend = ax.legend(loc="upper left", fontsize=8, markerscale=max(1.0, 4.0 / size ** 0.5), frameon=True)
        for handle in legend.legend_handles:
            if handle is not None:
                handle.set_alpha(1.0)
    fig.suptitle(title or f"Birth-Death diagram, t_split = {split:g}", fontsize=9)
    fig.tight_layout()
    _save(fig, canvas_type, path, dpi)


def plot_novelty(path: PathLike, series: NoveltySeries, *, t_split: Optional[Number] = None, title: str = "",
                 bins: int = 200, dpi: int = 110) -> None:
    r"""Write the novelty time series as a PNG: :math:`\nu_t` per timestamp (light points) and its
    mean weighted by :math:`|E_t|` in ``bins`` equal time bins (line); ``t_split`` is drawn if given."""
    figure_type, canvas_type = _matplotlib()
    fig = figure_type(figsize=(8.0, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    t = series.t.cpu().double()
    nu = series.novelty.cpu()
    if t.numel():
        ax.scatter(t.numpy(), nu.numpy(), s=2, alpha=min(0.5, max(0.03, 2e3 / t.numel())), c="0.5", linewidths=0,
                   rasterized=True, label="per timestamp")
        lo, hi = float(t.min()), float(t.max())
        edges = torch.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1, dtype=torch.float64)
        which = torch.bucketize(t, edges[1:-1], right=True)
        size = torch.bincount(which, weights=series.num_pairs.cpu().double(), minlength=bins)
        new = torch.bincount(which, weights=series.num_new_pairs.cpu().double(), minlength=bins)
        keep = size > 0
        centres = (edges[:-1] + edges[1:]) / 2
        ax.plot(centres[keep].numpy(), (new[keep] / size[keep]).numpy(), color="#d62728", linewidth=1.2,
                label=f"new / distinct pairs in {bins} time bins")
    if t_split is not None:
        ax.axvline(float(t_split), color="k", linewidth=0.9, linestyle="--", label="t_split")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("time")
    ax.set_ylabel("novelty  |E_t \\ E_<t| / |E_t|")
    legend = ax.legend(loc="center right", fontsize=8, markerscale=3.0)
    for handle in legend.legend_handles:
        if handle is not None:
            handle.set_alpha(1.0)
    ax.set_title(title or "novelty ratio", fontsize=10)
    fig.tight_layout()
    _save(fig, canvas_type, path, dpi)
