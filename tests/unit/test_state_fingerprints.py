"""The fingerprints behind the guards (:mod:`tgeval.stream.state`): any single in-place change of a value
reachable from a model's plain attributes changes them, and nothing else does."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from tgeval.stream.state import _Fingerprints

scalars = st.one_of(st.integers(-3, 3), st.floats(allow_nan=False, width=32), st.text(max_size=3), st.none(),
                    st.booleans())
leaves = st.one_of(
    scalars,
    st.tuples(st.integers(0, 5), st.integers(0, 5)),
    st.lists(st.integers(0, 9), max_size=4).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.floats(-2, 2, width=32), max_size=4).map(lambda v: torch.tensor(v, dtype=torch.float32)),
)
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.integers(0, 5), st.tuples(st.integers(0, 3), st.integers(0, 3))), inner, max_size=4),
    st.sets(st.integers(0, 9), max_size=4),
    st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from("abc"), inner, max_size=3).map(lambda d: SimpleNamespace(**d)),
), max_leaves=12)


def mutable_parts(value, out):
    """Every object inside ``value`` that can change in place, depth first."""
    if isinstance(value, (list, dict, set, torch.Tensor, SimpleNamespace)) or (
            isinstance(value, np.ndarray) and value.size):  # an empty array has nothing to change in place
        out.append(value)
    children = (value.values() if isinstance(value, dict) else vars(value).values()
                if isinstance(value, SimpleNamespace) else value if isinstance(value, (list, tuple)) else ())
    for child in children:
        mutable_parts(child, out)
    return out


def mutate(part):
    """One in-place change that alters the content of ``part``."""
    if isinstance(part, list):
        part.append(object())
    elif isinstance(part, dict):
        part["new key"] = 0
    elif isinstance(part, set):
        part.add(-1)
    elif isinstance(part, SimpleNamespace):
        part.added = 0
    elif isinstance(part, np.ndarray):
        part.flat[0] += 1
    elif part.numel():
        part.add_(1.0)
    else:
        part.resize_(1)


def holder(value):
    model = nn.Module()
    model.inner = nn.Linear(1, 1)
    model.inner.value = value
    return model


def prints(model):
    return _Fingerprints().attributes(model)


@settings(max_examples=150, deadline=None)
@given(values, st.data())
def test_any_in_place_change_changes_the_fingerprints(value, draw):
    model = holder(value)
    before = prints(model)
    assert prints(model) == before  # and nothing unchanged does
    parts = mutable_parts(value, [])
    if not parts:
        return
    mutate(draw.draw(st.sampled_from(parts)))
    assert prints(model) != before


@settings(max_examples=60, deadline=None)
@given(values)
def test_replacing_a_value_by_an_equal_copy_changes_nothing_but_tensors(value):
    """Plain values compare by content; tensors by object and version (a new tensor is a write)."""
    model = holder(value)
    before = prints(model)
    model.inner.value = _copy(value)
    assert (prints(model) == before) == (not _has_tensor(value))


def _copy(value):
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, set):
        return set(value)
    if isinstance(value, SimpleNamespace):
        return SimpleNamespace(**{k: _copy(v) for k, v in vars(value).items()})
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return value.copy() if isinstance(value, np.ndarray) else value.clone()
    return value


def _has_tensor(value):
    return any(isinstance(part, torch.Tensor) for part in mutable_parts(value, []))


def test_deep_fingerprints_see_writes_that_bypass_version_counters():
    model = holder(torch.zeros(3))
    before, deep_before = prints(model), _Fingerprints(deep=True).attributes(model)
    model.inner.value.data[0] = 1.0  # no version bump
    assert prints(model) == before
    assert _Fingerprints(deep=True).attributes(model) != deep_before


def test_torch_bookkeeping_and_declared_scratch_are_left_out():
    model = holder(0)
    model.inner.scratch = [1]
    model.inner.state_scratch = ("scratch",)
    keys = set(prints(model))
    assert keys == {"inner.in_features", "inner.out_features", "inner.value", "inner.state_scratch"}
    model.inner.scratch.append(2)
    model.train(False)
    assert set(prints(model)) == keys


def test_deep_fingerprints_of_complex_and_sparse_tensors_see_a_changed_element():
    for value in (torch.zeros(3, dtype=torch.complex128), torch.eye(3).to_sparse()):
        model = holder(value)
        before = _Fingerprints(deep=True).attributes(model)
        model.inner.value = value.to_dense().clone() if value.is_sparse else value.clone()
        if value.is_sparse:
            model.inner.value[0, 1] = 2.0
            model.inner.value = model.inner.value.to_sparse()
        else:
            model.inner.value[1] = 1j
        assert _Fingerprints(deep=True).attributes(model) != before


def test_cycles_and_shared_objects_are_walked_once():
    nodes = [SimpleNamespace(v=i, prev=None, next=None) for i in range(200)]
    for a, b in zip(nodes, nodes[1:]):
        a.next, b.prev = b, a
    model = holder(nodes)
    before = prints(model)  # linear in the nodes (it was exponential in the chain's length)
    nodes[150].v = -1
    assert prints(model) != before


def test_default_guard_of_a_model_with_its_own_snapshot_and_a_plain_tensor():
    """The default guard (``deep=None``) of a model whose own snapshot makes it compare deeply fingerprints its
    plain tensors the same way before and after: pure scoring passes, an in-place change is named."""
    from tgeval.errors import LeakageError
    from tgeval.models.base import TemporalLinkModel
    from tgeval.stream.state import no_state_change

    class Own(TemporalLinkModel):
        def __init__(self):
            super().__init__(4)
            self.seen = torch.zeros(4)

        def score(self, src, dst, t):
            return self.seen[dst]

        def update(self, batch):
            self.seen[batch.dst] += 1

        def snapshot(self):
            return self.seen.clone()

        def restore(self, state):
            self.seen = state.clone()

    model, ids = Own(), torch.tensor([1, 2])
    with no_state_change(model):
        model.score(ids, ids, ids)
    with pytest.raises(LeakageError, match="seen"):
        with no_state_change(model):
            model.seen[0] = 1.0
