"""Checks of drawn matplotlib figures shared by the plot and report tests."""


def assert_legends_outside(fig):
    """``fig`` has a legend, and every legend is disjoint from every axes box (it covers no data) and inside the
    figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    page = fig.bbox
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), "a legend covers an axes"
