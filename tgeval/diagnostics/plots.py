r"""Birth–Death diagrams and the novelty time series as PNG files (docs/protocol.md §3, §4). Needs matplotlib.

**Birth–Death diagram**: one point per node (or pair) :math:`x` at
:math:`(d_x, b_x)` (x = death, y = birth), coloured historical / overlap / inductive for a
split time, with the split drawn as the lines :math:`d = t_{split}` and :math:`b = t_{split}`
(and the diagonal :math:`b = d`; every point lies on or below it). Points are drawn as a
rasterised scatter whose marker size and alpha shrink with the number of points, so 10^6
points stay readable and the file stays small. For bipartite data the nodes are drawn in two
panels, sources (users) and destinations (items).

The helpers every tgeval plot shares (these files, the time profile, ``tgeval report``): time axes
through :func:`time_axis` (dates, durations or the stream's own numbers, never raw seconds with a
``1e9`` offset), rank axes through :func:`rank_axis` (plain numbers), legends outside the axes with
:func:`legend_outside` (no legend covers data), and data names cut to a title with :func:`short_name`.

matplotlib is imported lazily, through its object-oriented API with the Agg canvas (no
``pyplot``, no change of the global backend). Files are written atomically.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, Optional, Sequence, Union

import numpy as np
import torch
from torch_geometric.data import TemporalData

from tgeval.core.atomic import PathLike, write_atomic
from tgeval.diagnostics.novelty import NoveltySeries
from tgeval.errors import DiagnosticError, ProtocolError
from tgeval.samplers.lifespans import CLASSES, Lifetimes, node_lifetimes, pair_lifetimes

__all__ = ["is_bipartite", "birth_death_panels", "plot_birth_death", "plot_novelty", "TimeAxis", "time_axis",
           "duration_unit", "legend_outside", "short_name", "rank_axis", "new_figure", "save_png"]

Number = Union[int, float]

_COLOURS = {"H": "#1f77b4", "O": "#2ca02c", "I": "#d62728"}
_NAMES = {"H": "historical", "O": "overlap", "I": "inductive"}


def new_figure(width: float, height: float) -> Any:
    """A matplotlib ``Figure`` of ``width`` x ``height`` inches on an Agg canvas (no display, no pyplot state).

    Raises:
        ImportError: matplotlib is not installed (the message names the install command).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("tgeval plots need matplotlib, which is not installed. Install it with "
                          "`pip install matplotlib`.") from error
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


#: Times inside this range are read as Unix seconds (1973-03-03 to 2099-12-04 UTC) and shown as dates.
UNIX_SECONDS = (1e8, 4.1e9)
#: Times of magnitude below this are shown as they are: no unit can be read from them (snapshot indices, years).
PLAIN_BELOW = 1e4
_UNITS = (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0))


def duration_unit(seconds: float) -> tuple[str, float]:
    """``(name, seconds per unit)`` a duration reads best in: the largest of days, h, min in which it is at
    least 2, else s (``duration_unit(7200) == ("h", 3600.0)``)."""
    return next(((name, size) for name, size in _UNITS if abs(seconds) >= 2 * size), ("s", 1.0))


@dataclass(frozen=True)
class TimeAxis:
    """How the times of one plot axis are shown; made by :func:`time_axis`.

    Attributes:
        kind: ``"date"`` (UTC dates), ``"duration"`` (time since ``t = 0`` in ``unit``) or ``"plain"``.
        unit: ``"UTC"``, the duration unit (``s``, ``min``, ``h``, ``days``) or ``""``.
        scale: seconds per ``unit`` (1 for ``"date"`` and ``"plain"``).
    """

    kind: Literal["date", "duration", "plain"]
    unit: str
    scale: float

    @property
    def label(self) -> str:
        """The axis label's description of the times, with the reading it assumes."""
        return {"date": "UTC date (from Unix seconds)",
                "duration": f"{self.unit} since t = 0 (times as seconds)",
                "plain": "the stream's own time units"}[self.kind]

    def values(self, t: Any) -> np.ndarray:
        """Positions of times ``t`` (array-like, any shape) on the axis: matplotlib date numbers, ``t / scale``,
        or ``t``."""
        t = np.asarray(t, dtype=np.float64)
        if self.kind == "date":
            from matplotlib.dates import date2num

            return date2num(np.datetime64("1970-01-01T00:00:00")) + t / 86400.0
        return t / self.scale

    def text(self, t: float) -> str:
        """One time as words: ``2004-04-15 05:56 UTC``, ``26.62 days`` or ``42``."""
        if self.kind == "date":
            return datetime.fromtimestamp(float(t), timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return f"{float(t) / self.scale:.4g}" + (f" {self.unit}" if self.kind == "duration" else "")

    def apply(self, axis: Any, what: str = "time") -> None:
        """Give a matplotlib ``Axis`` (``ax.xaxis``) ticks and a label for values from :meth:`values`;
        ``what`` starts the label."""
        if self.kind == "date":
            from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

            locator = AutoDateLocator(tz=timezone.utc)
            axis.set_major_locator(locator)
            axis.set_major_formatter(ConciseDateFormatter(locator, tz=timezone.utc))
        else:
            axis.set_major_formatter(_plain_formatter())
        axis.set_label_text(f"{what}: {self.label}")
        if self.kind == "date" and axis.axis_name == "x":  # clear of the date offset (``2004-May``) at the right
            axis.label.set(x=0.0, horizontalalignment="left")


def time_axis(lo: float, hi: float) -> TimeAxis:
    """How to show times in ``[lo, hi]``. The rule, in order:

    1. ``UNIX_SECONDS[0] <= lo`` and ``hi <= UNIX_SECONDS[1]``: Unix seconds, shown as UTC dates;
    2. ``max(|lo|, |hi|) < PLAIN_BELOW``: small numbers with no unit to read (snapshot indices, years,
       a synthetic clock), shown as they are;
    3. otherwise seconds since ``t = 0`` (the relative clocks of Wikipedia, Reddit, UCI, TGB), shown as
       durations in the :func:`duration_unit` of ``max(|lo|, |hi|)``.
    """
    if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
        raise ProtocolError(f"a time axis needs finite lo <= hi, got [{lo}, {hi}].")
    if UNIX_SECONDS[0] <= lo and hi <= UNIX_SECONDS[1]:
        return TimeAxis("date", "UTC", 1.0)
    largest = max(abs(lo), abs(hi))
    if largest < PLAIN_BELOW:
        return TimeAxis("plain", "", 1.0)
    return TimeAxis("duration", *duration_unit(largest))


def _plain_formatter() -> Any:
    """Tick labels as plain numbers: no offset, no scientific notation."""
    from matplotlib.ticker import ScalarFormatter

    formatter = ScalarFormatter(useOffset=False)
    formatter.set_scientific(False)
    return formatter


def rank_axis(ax: Any, ranks: Sequence[torch.Tensor]) -> None:
    """Make the y axis of ``ax`` fit the finite values of ``ranks``: a log scale labelled 1, 10, 100, 1,000
    when they span a decade or more, else a linear one; plain numbers either way (never 2.5 × 10^1)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    finite = torch.cat([r[torch.isfinite(r)].double().flatten() for r in ranks] + [torch.zeros(0).double()])
    if finite.numel() and float(finite.max()) >= 10 * float(finite.min()) > 0:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.yaxis.set_major_formatter(_plain_formatter())


def short_name(name: str) -> str:
    """A data name fit for a title: every path in it cut to its last component
    (``/data/uci/ml_uci.csv`` -> ``ml_uci.csv``)."""
    return re.sub(r"\S*[/\\]\S*", lambda m: re.split(r"[/\\]", m.group().rstrip("/\\"))[-1] or m.group(), name)


def legend_outside(ax: Any, **options: Any) -> Any:
    """A legend to the right of ``ax``, outside the axes so that it covers no data, with opaque keys (faint
    scatter points stay readable); ``options`` go to ``ax.legend``. Lay the figure out afterwards
    (``tight_layout``) to make room."""
    legend = ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8, **options)
    for handle in legend.legend_handles:
        if handle is not None:
            handle.set_alpha(1.0)
    return legend


def is_bipartite(data: TemporalData) -> bool:
    """Whether every source id is below every destination id: ``max(src) < min(dst)``."""
    return bool(data.src.numel()) and int(data.src.max()) < int(data.dst.min())


def birth_death_panels(data: TemporalData, *, kind: Literal["nodes", "pairs"], directed: bool = True,
                       bipartite: Optional[bool] = None,
                       num_nodes: Optional[int] = None) -> list[tuple[str, Lifetimes]]:
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
        raise ProtocolError(f"kind must be 'nodes' or 'pairs', got {kind!r}.")
    if kind == "pairs":
        what = "pairs" if directed else "undirected pairs"
        return [(what, pair_lifetimes(data, num_nodes, directed=directed))]
    lt = node_lifetimes(data)
    if not (is_bipartite(data) if bipartite is None else bipartite):
        return [("nodes", lt)]
    users = lt.keys <= int(data.src.max())
    return [("source nodes (users)", Lifetimes(lt.keys[users], lt.birth[users], lt.death[users])),
            ("destination nodes (items)", Lifetimes(lt.keys[~users], lt.birth[~users], lt.death[~users]))]


def save_png(fig: Any, path: PathLike, dpi: int) -> None:
    """Write ``fig`` (of :func:`new_figure`) to ``path`` as a PNG at ``dpi``, atomically."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    write_atomic(path, buffer.getvalue())


def plot_birth_death(path: PathLike, panels: Sequence[tuple[str, Lifetimes]], t_split: Number, *,
                     title: str = "", dpi: int = 110) -> Any:
    """Write a Birth–Death diagram (one subplot per panel) as a PNG at ``path``.

    Args:
        path: the PNG file (written atomically; folders are created).
        panels: ``(title, lifetimes)`` pairs, e.g. from :func:`birth_death_panels`.
        t_split: the split time that defines the colours and the drawn lines.
        title: the figure title.
        dpi: resolution.

    Returns:
        matplotlib.figure.Figure: the drawn figure (already written).

    Raises:
        ImportError: matplotlib is not installed.
        DiagnosticError: ``panels`` is empty.
    """
    if not panels:
        raise DiagnosticError("panels must hold at least one (title, lifetimes) pair.")
    fig = new_figure(max(8.0, 6.6 * len(panels)), 5.2)
    split = float(t_split)
    times = torch.cat([torch.tensor([split], dtype=torch.float64)]
                      + [torch.cat([lt.birth, lt.death]).cpu().double() for _, lt in panels])
    axis = time_axis(float(times.min()), float(times.max()))
    for i, (name, lt) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        codes = lt.classes(split).cpu()
        birth, death = axis.values(lt.birth.cpu().double()), axis.values(lt.death.cpu().double())
        n = max(int(codes.numel()), 1)
        size = min(12.0, max(0.3, 3e4 / n))
        alpha = min(0.8, max(0.04, 3e3 / n))
        for code, cls in enumerate(CLASSES):
            mask = (codes == code).numpy()
            ax.scatter(death[mask], birth[mask], s=size, alpha=alpha, c=_COLOURS[cls], linewidths=0,
                       rasterized=True, label=f"{_NAMES[cls]} ({int(mask.sum())})")
        at = float(axis.values(split))
        if birth.size:
            low, high = float(min(birth.min(), at)), float(max(death.max(), at))
            ax.plot([low, high], [low, high], color="0.6", linewidth=0.8, linestyle=":")
        ax.axvline(at, color="k", linewidth=0.9, linestyle="--")
        ax.axhline(at, color="k", linewidth=0.9, linestyle="--")
        axis.apply(ax.xaxis, "death (last event)")
        axis.apply(ax.yaxis, "birth (first event)")
        ax.set_title(f"{name}: {int(codes.numel())}")
        legend_outside(ax, markerscale=max(1.0, 4.0 / size ** 0.5))
    fig.suptitle(title or f"Birth-Death diagram, t_split = {axis.text(split)}", fontsize=9)
    fig.tight_layout()
    save_png(fig, path, dpi)
    return fig


def plot_novelty(path: PathLike, series: NoveltySeries, *, t_split: Optional[Number] = None, title: str = "",
                 bins: int = 200, dpi: int = 110) -> Any:
    r"""Write the novelty time series as a PNG: :math:`\nu_t` per timestamp (light points) and its
    mean weighted by :math:`|E_t|` in ``bins`` equal time bins (line); ``t_split`` is drawn if given.
    Returns the drawn figure (already written)."""
    fig = new_figure(9.0, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    t = series.t.cpu().double()
    nu = series.novelty.cpu()
    ends = [float(t.min()), float(t.max())] if t.numel() else []
    ends += [] if t_split is None else [float(t_split)]
    axis = time_axis(min(ends), max(ends)) if ends else TimeAxis("plain", "", 1.0)
    if t.numel():
        ax.scatter(axis.values(t), nu.numpy(), s=2, alpha=min(0.5, max(0.03, 2e3 / t.numel())), c="0.5",
                   linewidths=0, rasterized=True, label="per timestamp")
        lo, hi = float(t.min()), float(t.max())
        edges = torch.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1, dtype=torch.float64)
        which = torch.bucketize(t, edges[1:-1], right=True)
        size = torch.bincount(which, weights=series.num_pairs.cpu().double(), minlength=bins)
        new = torch.bincount(which, weights=series.num_new_pairs.cpu().double(), minlength=bins)
        keep = size > 0
        centres = (edges[:-1] + edges[1:]) / 2
        ax.plot(axis.values(centres[keep]), (new[keep] / size[keep]).numpy(), color="#d62728", linewidth=1.2,
                label=f"new / distinct pairs\nin {bins} time bins")
    if t_split is not None:
        ax.axvline(float(axis.values(float(t_split))), color="k", linewidth=0.9, linestyle="--", label="t_split")
    ax.set_ylim(-0.02, 1.02)
    axis.apply(ax.xaxis)
    ax.set_ylabel("novelty  |E_t \\ E_<t| / |E_t|")
    legend_outside(ax, markerscale=3.0)
    ax.set_title(title or "novelty ratio", fontsize=10)
    fig.tight_layout()
    save_png(fig, path, dpi)
    return fig
