import pytest
import torch

from tgeval import CatalogError, LeakageError, build_catalog, no_state_change
from tgeval.data.catalog import Catalog
from tgeval.data.exclusions import build_exclusions
from tgeval.data.hashing import fingerprint, tensor_checksum
from tgeval.models.heuristics import EdgeBank
from tgeval.stream.state import first_difference
from tests.conftest import make_stream

# t:   1  1  2  3  4
# src: 0  1  0  2  0
# dst: 3  4  5  3  6
DATA = make_stream([0, 1, 0, 2, 0], [3, 4, 5, 3, 6], [1, 1, 2, 3, 4])


def test_catalog_kinds():
    train = build_catalog(DATA, "train", train_end=3)
    assert train.items.tolist() == [3, 4, 5] and train.available_from is None
    assert build_catalog(DATA, "all").items.tolist() == [3, 4, 5, 6]
    gap = make_stream([0, 1], [5, 2], [1, 2])  # TGB's range holds 3 and 4, never a destination
    assert build_catalog(gap, "range").items.tolist() == [2, 3, 4, 5]
    assert build_catalog(gap, "range").definition["first"] == 2
    timed = build_catalog(DATA, "time-available")
    assert timed.items.tolist() == [3, 4, 5, 6] and timed.available_from.tolist() == [1, 1, 2, 4]
    # strictly before t: at t=2 only {3, 4}; at t=4 also 5; 6 only after t=4
    assert timed.num_available(torch.tensor([1, 2, 4, 5])).tolist() == [0, 2, 3, 4]
    assert timed.available(torch.tensor([5, 5, 9]), torch.tensor([2, 3, 9])).tolist() == [False, True, False]
    assert train.position(torch.tensor([4, 6, 100, -1])).tolist() == [1, -1, -1, -1]


def test_catalog_errors():
    with pytest.raises(CatalogError, match="empty"):
        Catalog("custom", torch.zeros(0, dtype=torch.long), None, 3)
    with pytest.raises(ValueError, match="train_end"):
        build_catalog(DATA, "train")
    with pytest.raises(ValueError, match="catalog kind"):
        build_catalog(DATA, "everything")


def _excluded(excl):
    return [sorted(item for g, item in zip(*[x.tolist() for x in excl.items()]) if g == group)
            for group in excl.group.tolist()]


def test_exclusions_by_hand():
    catalog = Catalog("custom", torch.arange(7), None, 7)
    # events 0, 1 share source 0 at t=1; event 2 (1 -> 0) at t=1; event 3 (0 -> 5) at t=2
    src, dst, t = torch.tensor([0, 0, 1, 0]), torch.tensor([3, 4, 0, 5]), torch.tensor([1, 1, 1, 2])
    directed = build_exclusions(src, dst, t, catalog)
    assert _excluded(directed) == [[0, 3, 4], [0, 3, 4], [0, 1], [0, 5]]
    assert directed.count.tolist() == [3, 3, 2, 2]
    assert directed.group[0] == directed.group[1] != directed.group[3]
    # undirected: (1 -> 0, t=1) also makes 1 a simultaneous positive of source 0, and 3, 4 of ... nobody else
    undirected = build_exclusions(src, dst, t, catalog, directed=False)
    assert _excluded(undirected) == [[0, 1, 3, 4], [0, 1, 3, 4], [0, 1], [0, 5]]
    # only available items are stored and counted
    small = Catalog("custom", torch.tensor([3, 5]), None, 7)
    assert _excluded(build_exclusions(src, dst, t, small)) == [[3], [3], [], [5]]


def test_exclusions_stay_linear_for_a_hub_group():
    n = 20_000
    catalog = Catalog("custom", torch.arange(n + 1), None, n + 1)
    src, dst, t = torch.zeros(n, dtype=torch.long), torch.arange(1, n + 1), torch.zeros(n, dtype=torch.long)
    excl = build_exclusions(src, dst, t, catalog)
    assert excl.keys.numel() == n + 1  # one group: its n destinations and the source, not n * n pairs
    assert bool((excl.count == n + 1).all())


def test_fingerprint_depends_on_content_and_order():
    base = fingerprint(DATA)
    assert base == fingerprint(make_stream([0, 1, 0, 2, 0], [3, 4, 5, 3, 6], [1, 1, 2, 3, 4]))
    assert base != fingerprint(make_stream([1, 0, 0, 2, 0], [4, 3, 5, 3, 6], [1, 1, 2, 3, 4]))
    assert base.startswith("sha256:") and len(base) == 7 + 64
    assert tensor_checksum(torch.tensor([1, 2])) != tensor_checksum(torch.tensor([1, 2], dtype=torch.int32))


class _Leaky(EdgeBank):
    def score(self, src, dst, t):
        out = super().score(src, dst, t)
        self.update(make_stream(src[:1].tolist(), dst[:1].tolist(), t[:1].tolist()))  # sneaks the answer in
        return out


def test_guard_catches_state_change_while_scoring():
    model = _Leaky(10)
    with pytest.raises(LeakageError, match=r"_Leaky changed `keys` while scoring.*update\(\)"):
        with no_state_change(model):
            model.score(torch.tensor([1]), torch.tensor([2]), torch.tensor([5]))


def test_guard_catches_parameter_change():
    model = EdgeBank(10)
    model.register_parameter("w", torch.nn.Parameter(torch.zeros(2)))
    with pytest.raises(LeakageError, match="changed `w`"):
        with no_state_change(model):
            with torch.no_grad():
                model.w.add_(1.0)


class _ListState(EdgeBank):
    """State partly outside registered tensors (a Python list): the guard's attribute fingerprints
    see it, and so does the comparison of snapshots."""

    capabilities = EdgeBank.capabilities.replace(state_in_registered_tensors=False)

    def __init__(self):
        super().__init__(10)
        self.log = []

    def snapshot(self):
        return {"bank": super().snapshot(), "log": list(self.log)}

    def score(self, src, dst, t):
        self.log.append(len(src))
        return super().score(src, dst, t)


def test_guard_sees_state_outside_tensors():
    model = _ListState()
    with pytest.raises(LeakageError, match=r"_ListState changed `log`"):
        with no_state_change(model):
            model.score(torch.tensor([1]), torch.tensor([2]), torch.tensor([5]))
    model.state_scratch = ("log",)  # hidden from the fingerprints: the snapshots still differ
    with pytest.raises(LeakageError, match=r"_ListState changed `state.log`"):
        with no_state_change(model):
            model.score(torch.tensor([1]), torch.tensor([2]), torch.tensor([5]))


def test_deep_guard_catches_writes_that_bypass_version_counters():
    model = EdgeBank(10)
    model.update(DATA)
    # a write through .data does not bump the version counter; the snapshot comparison sees it
    with pytest.raises(LeakageError, match="state.last_seen"):
        with no_state_change(model, deep=True):
            model.last_seen.data[0] = 42.0


def test_guard_passes_pure_scoring_and_snapshot_restore():
    model = EdgeBank(10)
    model.update(DATA)
    snap = model.snapshot()
    with no_state_change(model):
        model.score(DATA.src, DATA.dst, DATA.t)
    model.update(make_stream([7], [8], [9]))
    assert first_difference(snap, model.snapshot()) is not None
    model.restore(snap)
    assert first_difference(snap, model.snapshot()) is None


def test_first_difference_nan_and_structure():
    a = {"x": torch.tensor([1.0, float("nan")]), "y": [1, 2]}
    assert first_difference(a, {"x": torch.tensor([1.0, float("nan")]), "y": [1, 2]}) is None
    assert first_difference(a, {"x": torch.tensor([1.0, 2.0]), "y": [1, 2]}) == "state.x"
    assert first_difference(a, {"x": a["x"], "y": [1, 3]}) == "state.y[1]"
