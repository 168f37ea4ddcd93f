"""Time axes read as dates, durations or the stream's own numbers (never raw seconds with a 1e9
offset), and every plot's legend lies outside its axes and inside the figure, so it covers no data.
Checked on drawn matplotlib figures: the tick labels and the legend's and axes' window boxes."""

import re

import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tgeval.data.synthetic import generate_events
from tgeval.cli import diagnose as diagnostics_cli
from tgeval.diagnostics.novelty import novelty_series
from tgeval.diagnostics.plots import (birth_death_panels, duration_unit, plot_birth_death, plot_novelty, rank_axis,
                                     short_name, time_axis)
from tgeval.samplers.lifespans import split_time
from tests.plot_checks import assert_legends_outside
from tgeval.diagnostics.time_bins import plot_time_profile, time_profile

COLLEGEMSG = (1_082_008_561, 1_098_744_742)  # Unix seconds of CollegeMsg's first and last message


def _ticks(lo, hi):
    """(tick labels, offset text, axis label) of an x axis drawn over [lo, hi] with its time axis."""
    axis = time_axis(lo, hi)
    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(axis.values(np.linspace(lo, hi, 50)), np.arange(50))
    axis.apply(ax.xaxis)
    fig.canvas.draw()
    return [t.get_text() for t in ax.get_xticklabels()], ax.xaxis.get_offset_text().get_text(), ax.get_xlabel()


def test_unix_seconds_read_as_utc_dates():
    axis = time_axis(*COLLEGEMSG)
    assert axis.kind == "date" and axis.text(COLLEGEMSG[0]) == "2004-04-15 05:56 UTC"
    labels, offset, name = _ticks(*COLLEGEMSG)
    assert labels[:3] == ["May", "Jun", "Jul"] and offset == "2004"  # months of 2004, no 1e9 anywhere
    assert name == "time: UTC date (from Unix seconds)"
    labels, offset, _ = _ticks(COLLEGEMSG[0], COLLEGEMSG[0] + 5 * 3600)  # five hours: clock times of that day
    assert all(re.fullmatch(r"\d\d:\d\d", label) for label in labels) and offset == "2004-Apr-15"


def test_small_integer_times_are_shown_as_they_are():
    axis = time_axis(0, 2012)
    assert axis.kind == "plain" and axis.text(42) == "42" and axis.text(1999.0) == "1999"
    labels, offset, name = _ticks(0, 2012)
    assert "1000" in labels and all(re.fullmatch(r"−?\d+", label) for label in labels) and offset == ""
    assert name == "time: the stream's own time units"
    assert time_axis(1990, 2020).text(2004) == "2004"  # years stay years


def test_relative_seconds_read_as_durations_since_zero():
    axis = time_axis(2.3e6, 2.7e6)  # Wikipedia's test segment: seconds since the stream's start
    assert (axis.kind, axis.unit, axis.scale) == ("duration", "days", 86400.0)
    assert axis.text(2.3e6) == "26.62 days"
    labels, offset, name = _ticks(2.3e6, 2.7e6)
    assert labels == ["26", "27", "28", "29", "30", "31", "32"] and offset == ""
    assert name == "time: days since t = 0 (times as seconds)"
    assert time_axis(1e4, 5e4).unit == "h" and time_axis(-2e4, 0).unit == "h"


@pytest.mark.parametrize("seconds, unit", [(0, "s"), (90, "s"), (120, "min"), (7199, "min"), (7200, "h"),
                                           (172_799, "h"), (172_800, "days"), (3e7, "days"), (-600, "min")])
def test_duration_units(seconds, unit):
    assert duration_unit(seconds)[0] == unit


def test_a_time_axis_needs_finite_ordered_ends():
    for lo, hi in ((float("nan"), 1.0), (2.0, 1.0), (0.0, float("inf"))):
        with pytest.raises(ValueError, match="finite lo <= hi"):
            time_axis(lo, hi)


@pytest.fixture(scope="module")
def stream():
    data = generate_events(num_events=3000, num_nodes=120, seed=5)
    data.t = data.t * 900 + 1_082_008_561  # a Unix-second clock, 15 minutes a step
    data.dst = data.dst + 200  # bipartite: users 0..119, items 200..319
    return data


def test_birth_death_and_novelty_plots_keep_legends_off_the_data_and_show_dates(stream, tmp_path):
    split = float(stream.t[2400])
    for bipartite in (False, True):
        fig = plot_birth_death(tmp_path / "bd.png", birth_death_panels(stream, kind="nodes", bipartite=bipartite),
                               split)
        assert_legends_outside(fig)
        assert all(ax.get_xlabel().endswith("UTC date (from Unix seconds)") for ax in fig.axes)
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:  # the date offset (2004-May) at the right end does not run into the axis label
            offset = ax.xaxis.get_offset_text()
            assert offset.get_text() and not offset.get_window_extent(renderer).overlaps(
                ax.xaxis.label.get_window_extent(renderer))
        assert "t_split = 2004-" in fig.get_suptitle()
    fig = plot_novelty(tmp_path / "novelty.png", novelty_series(stream, directed=True), t_split=split)
    assert_legends_outside(fig)
    assert fig.axes[0].xaxis.get_offset_text().get_text().startswith("2004") and (tmp_path / "novelty.png").is_file()


def test_the_time_profile_plot_keeps_its_legend_off_the_data(tmp_path):
    n = 400
    g = torch.Generator().manual_seed(0)
    records = {"event": torch.arange(n), "t": torch.arange(n, dtype=torch.float64) * 6000.0 + 2.3e6,
               "above": torch.randint(0, 50, (n,), generator=g), "equal": torch.zeros(n, dtype=torch.long),
               "score": torch.rand(n, generator=g), "neg_score": torch.rand(n, 5, generator=g),
               "sampled_above": torch.randint(0, 5, (n,), generator=g),
               "sampled_equal": torch.zeros(n, dtype=torch.long)}
    fig = plot_time_profile(tmp_path / "profile.png", time_profile({"uniform": records}, bins=20))
    assert_legends_outside(fig)
    assert fig.axes[0].get_xlabel() == "time: days since t = 0 (times as seconds)"


@pytest.mark.parametrize("name, short", [("tgbl-wiki", "tgbl-wiki"), ("/data/tgb/ml_uci.csv", "ml_uci.csv"),
                                         ("C:\\data\\ml_uci.csv", "ml_uci.csv"), ("folder/", "folder"),
                                         ("CollegeMsg from pkg: /home/u/x/CollegeMsg.txt",
                                          "CollegeMsg from pkg: CollegeMsg.txt")])
def test_short_names_cut_paths_to_their_last_component(name, short):
    assert short_name(name) == short


def test_diagnose_titles_name_the_file_and_date_the_split(stream, tmp_path, monkeypatch):
    titles = []
    real = diagnostics_cli.plot_birth_death  # the real plot runs; its titles are recorded on the way
    monkeypatch.setattr(diagnostics_cli, "plot_birth_death", lambda *a, **k: titles.append(k["title"]) or real(*a, **k))
    diagnostics_cli.diagnose(stream, tmp_path, name="/a/long/folder/CollegeMsg.txt")
    when = time_axis(*COLLEGEMSG).text(split_time(stream, 0.15))
    assert when.startswith("2004-") and titles == [
        f"CollegeMsg.txt: Birth-Death diagram of nodes, t_split = {when} (test ratio 0.15)",
        f"CollegeMsg.txt: Birth-Death diagram of directed pairs, t_split = {when}"]


def _rank_labels(ranks):
    """(y scale, y tick labels) of ranks drawn with rank_axis."""
    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(np.arange(ranks.numel()), ranks.numpy())
    rank_axis(ax, [ranks, torch.tensor([float("nan")])])  # NaN (empty bins) is left out
    fig.canvas.draw()
    return ax.get_yscale(), [t.get_text() for t in ax.get_yticklabels() + ax.yaxis.get_minorticklabels()
                             if t.get_text()]


def test_rank_axes_show_plain_numbers():
    scale, labels = _rank_labels(torch.linspace(1.0, 5000.0, 50))  # four decades: log, labelled at powers of 10
    assert scale == "log" and {"1", "10", "100", "1,000"} <= set(labels)
    assert all(re.fullmatch(r"[\d,.]+", label) for label in labels)
    scale, labels = _rank_labels(torch.linspace(24.9, 25.4, 50))  # less than a decade: linear, no 2.5 x 10^1
    assert scale == "linear" and "25.0" in labels and all(re.fullmatch(r"\d+\.\d+", label) for label in labels)
