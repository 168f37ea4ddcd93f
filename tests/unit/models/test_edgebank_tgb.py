"""EdgeBank with TGB's time window (``anchor="latest"``) against a plain-Python re-implementation of
TGB's dict-based ``EdgeBankPredictor`` (``fixed_time_window``): TGB's float64 arithmetic where the
times are small, the same rule in exact rational arithmetic anywhere in int64 (times near 2^62)."""

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tgeval import evaluate
from tgeval.data.catalog import Catalog
from tgeval.models import registry
from tgeval.models.heuristics import EdgeBank, tgb_time_window
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream
from tests.helpers import brute_force_counts
from tests.strategies import segment_from

N = 6


class TGBEdgeBank:
    """TGB's ``EdgeBankPredictor(memory_mode="fixed_time_window")``, dict for dict.

    ``exact=False``: TGB's float64 arithmetic; ``exact=True``: its window duration ``w`` (a float,
    as TGB computes it) with the threshold ``cur_t - w`` and the comparison in rationals.
    """

    def __init__(self, src, dst, ts, ratio=0.15, exact=False, window=None):
        self.exact = exact
        duration = max(ts) - min(ts)
        prev_t = float(min(ts)) + float(duration) * (1 - ratio)  # numpy: int64 span times a Python float
        self.cur_t = max(ts)
        self.duration = float(self.cur_t) - prev_t if window is None else window
        self.prev_t = self._start() if exact or window is not None else prev_t
        self.memory = {}
        self.update_memory(src, dst, ts)

    def _start(self):
        if self.exact:
            return Fraction(self.cur_t) - Fraction(self.duration)
        return float(self.cur_t) - self.duration

    def update_memory(self, src, dst, ts):
        if not self.memory:
            for u, v, s in zip(src, dst, ts):
                self.memory[(u, v)] = s
            return
        if max(ts) > self.cur_t:
            self.cur_t = max(ts)
            self.prev_t = self._start()
        for u, v, s in zip(src, dst, ts):
            self.memory[(u, v)] = s

    def predict_link(self, src, dst):
        seen = lambda s: (Fraction(s) if self.exact else float(s)) >= self.prev_t  # noqa: E731
        return [float((u, v) in self.memory and seen(self.memory[(u, v)])) for u, v in zip(src, dst)]


@st.composite
def tgb_streams(draw, base=0, max_time=60, max_events=80):
    """A time-sorted stream from ``base`` and the length of its training prefix (events of at least
    two distinct times, so that the window is positive)."""
    n = draw(st.integers(4, max_events))
    src = draw(st.lists(st.integers(0, N - 1), min_size=n, max_size=n))
    dst = draw(st.lists(st.integers(0, N - 1), min_size=n, max_size=n))
    t = sorted(base + x for x in draw(st.lists(st.integers(0, max_time), min_size=n, max_size=n)))
    train = draw(st.integers(2, n - 1))
    assume(t[0] < t[train - 1])
    return src, dst, t, train


def _replay_in_slices(model, reference, src, dst, t, train, batch_size):
    """TGB's loop: both banks hold the training events; every later slice of ``batch_size`` events
    is scored for all N x N pairs, then fed to both."""
    model.update(make_stream(src[:train], dst[:train], t[:train]))
    us, vs = torch.arange(N).repeat_interleave(N), torch.arange(N).repeat(N)
    for start in range(train, len(t), batch_size):
        end = min(start + batch_size, len(t))
        got = model.score(us, vs, torch.full_like(us, t[start])).tolist()
        assert got == reference.predict_link(us.tolist(), vs.tolist()), start
        model.update(make_stream(src[start:end], dst[start:end], t[start:end]))
        reference.update_memory(src[start:end], dst[start:end], t[start:end])


@settings(max_examples=120, deadline=None)
@given(stream=tgb_streams(), batch_size=st.sampled_from([1, 3, 200]), ratio=st.sampled_from([0.15, 0.3, 0.5, 1.0]))
def test_equals_tgb_float_arithmetic_on_small_times(stream, batch_size, ratio):
    src, dst, t, train = stream
    window = tgb_time_window(t[0], t[train - 1], ratio)
    reference = TGBEdgeBank(src[:train], dst[:train], t[:train], ratio=ratio)
    assert reference.duration == window
    _replay_in_slices(EdgeBank(N, window=window, anchor="latest"), reference, src, dst, t, train, batch_size)


@settings(max_examples=120, deadline=None)
@given(stream=tgb_streams(base=2**62, max_time=2**40), batch_size=st.sampled_from([1, 7, 200]),
       window=st.one_of(st.integers(1, 2**41), st.floats(0.5, 2.0**41), st.sampled_from([1, 2**62, 2**63 - 1])))
def test_equals_tgb_rule_in_exact_arithmetic_near_2_62(stream, batch_size, window):
    src, dst, t, train = stream
    model = EdgeBank(N, window=window, anchor="latest")
    reference = TGBEdgeBank(src[:train], dst[:train], t[:train], exact=True, window=window)
    _replay_in_slices(model, reference, src, dst, t, train, batch_size)


@settings(max_examples=60, deadline=None)
@given(base=st.sampled_from([0, 2**40, 2**62]), stream=tgb_streams(max_time=2**20), ratio=st.floats(0.01, 1.0))
def test_tgb_time_window_is_numpys_arithmetic(base, stream, ratio):
    ts = np.asarray(stream[2], dtype=np.int64) + np.int64(base)
    duration = ts.max() - ts.min()
    prev_t = ts.min() + duration * (1 - ratio)  # TGB's EdgeBankPredictor.__init__
    expected = float(ts.max() - prev_t)
    if expected > 0:
        assert tgb_time_window(int(ts.min()), int(ts.max()), ratio) == expected
    else:
        with pytest.raises(ValueError, match="span no time"):
            tgb_time_window(int(ts.min()), int(ts.max()), ratio)


def test_tgb_time_window_bad_input():
    assert tgb_time_window(0, 100) == 15.0  # 100 - 100 * 0.85, both rounded as TGB does
    with pytest.raises(ValueError, match=r"ratio must be in \(0, 1\]"):
        tgb_time_window(0, 100, ratio=0.0)
    with pytest.raises(ValueError, match="span no time"):
        tgb_time_window(5, 5)
    with pytest.raises(ValueError, match="anchor must be one of 'query', 'latest'"):
        EdgeBank(N, window=3, anchor="now")


def test_the_window_ends_at_the_latest_event_not_at_the_query():
    query, latest = EdgeBank(N, window=2), EdgeBank(N, window=2, anchor="latest")
    history = make_stream([0, 1, 2], [1, 2, 3], [1, 5, 10])
    for model in (query, latest):
        model.update(history)
    pairs = torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3])
    at_20 = torch.full((3,), 20)
    assert latest.score(*pairs, at_20).tolist() == [0.0, 0.0, 1.0]  # seen at or after 10 - 2
    assert query.score(*pairs, at_20).tolist() == [0.0, 0.0, 0.0]  # seen at or after 20 - 2
    assert latest.describe()["anchor"] == "latest" and "anchor" not in query.describe()
    # the latest time is state: it moves with the updates, snapshots and restores, resets
    snap = latest.snapshot()
    latest.update(make_stream([4], [5], [13]))
    assert latest.score(*pairs, at_20).tolist() == [0.0, 0.0, 0.0]
    latest.restore(snap)
    assert latest.score(*pairs, at_20).tolist() == [0.0, 0.0, 1.0] and int(snap["latest"]) == 10
    latest.reset_state()
    assert int(latest.snapshot()["latest"]) == torch.iinfo(torch.long).min
    model = registry.build("edgebank-window", num_nodes=N, window=2, anchor="latest", directed=True)
    assert model.anchor == "latest" and model.window == 2


def _reference_exact(events, window, u, v, t):
    """TGB's rule from every event strictly before ``t``: the window ends at the latest of them."""
    before = [(a, b, s) for a, b, s in events if s < t]
    if not before:
        return 0.0
    latest = max(s for _, _, s in before)
    return float(any((a, b) == (u, v) and Fraction(s) >= latest - Fraction(window) for a, b, s in before))


@settings(max_examples=80, deadline=None)
@given(stream=tgb_streams(max_time=10, max_events=30), start=st.integers(1, 20), batch_size=st.integers(1, 30),
       window=st.sampled_from([1, 2, 2.5, 4]))
def test_exact_history_equals_a_per_timestamp_brute_force(stream, start, batch_size, window):
    """``history="exact"``: each event of a merged batch sees the window end at the latest event
    before its own time; sampled and all-entity counts (the catalog shortcut included) follow."""
    src, dst, t, _ = stream
    data = make_stream(src, dst, t)
    segment = segment_from(data, min(start, data.num_events - 1))
    catalog = Catalog("custom", torch.arange(N + 4), None, N + 4)  # room for 3 negatives beside a batch's positives
    result = evaluate(EdgeBank(N + 4, window=window, anchor="latest"), data, segment,
                      Protocol(num_negatives=3, batch_size=batch_size, seed=0),
                      sampler=UniformSampler(catalog, replace=True), catalog=catalog)
    assert result.manifest["history"]["mode"] == "exact"
    rec, events = result.records, list(zip(src, dst, t))
    for i, (u, v, s) in enumerate(zip(rec["src"].tolist(), rec["dst"].tolist(), rec["t"].tolist())):
        assert rec["score"][i].item() == _reference_exact(events, window, u, v, s), i
        for q, score in zip(rec["neg"][i].tolist(), rec["neg_score"][i].tolist()):
            assert score == _reference_exact(events, window, u, q, s), (i, q)
    expected = brute_force_counts(lambda u, c, s: _reference_exact(events, window, u, c, s), rec["src"], rec["dst"],
                                  rec["t"], catalog.items)
    assert [(a, e) for a, e, _ in expected] == list(zip(rec["above"].tolist(), rec["equal"].tolist()))
