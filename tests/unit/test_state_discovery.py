"""State discovery (:mod:`tgeval.stream.state`): a model's state found without state code of its own,
adapters for classes tgeval does not own, and the checksums the deep guard compares."""

import pytest
import torch
from torch import nn

from tgeval import LeakageError, no_state_change
from tgeval.models.base import TemporalLinkModel
from tgeval.stream.state import (checksum, first_difference, load_parameters, parameters_of, register_state_adapter,
                          state_adapter, state_parts, state_buffer_names)
from tgeval.stream.state import _ADAPTERS
from tests.conftest import make_stream
from tests.helpers import registered_adapter


class Tally:
    """A plain Python object holding history (no tensors, no module): needs an adapter."""

    def __init__(self):
        self.seen = []


@pytest.fixture
def tally_adapter():
    with registered_adapter(Tally, view=lambda o: {"seen": o.seen},
                            load=lambda o, s: setattr(o, "seen", list(s["seen"])), reset=lambda o: o.seen.clear()):
        yield


class Counting(TemporalLinkModel):
    """Buffers that grow, a nested module with a buffer, and an adapted plain attribute."""

    def __init__(self, num_nodes):
        super().__init__(num_nodes)
        self.lin = nn.Linear(1, 1)
        self.inner = nn.Module()
        self.inner.register_buffer("degree", torch.zeros(num_nodes))
        self.register_buffer("times", torch.zeros(0, dtype=torch.long))
        self.tally = Tally()

    def score(self, src, dst, t):
        return self.inner.degree[dst] + self.lin.weight[0, 0] * len(self.tally.seen)

    def update(self, batch):
        self.inner.degree.index_add_(0, batch.dst, torch.ones(batch.num_events))
        self.times = torch.cat([self.times, batch.t])
        self.tally.seen.extend(batch.src.tolist())


def test_discovery_snapshot_restore_and_reset(tally_adapter):
    model = Counting(4)
    assert [(p.path, p.kind) for p in state_parts(model)] == [("", "buffers"), ("inner", "buffers"),
                                                                ("tally", "adapter")]
    assert state_buffer_names(model) == {"times", "inner.degree"}
    initial = model.snapshot()
    model.update(make_stream([0, 1], [2, 2], [1, 1]))
    saved = model.snapshot()
    model.update(make_stream([3], [1], [2]))
    assert first_difference(model.snapshot(), saved) == "state..times"  # the model's own buffers: path ""
    model.restore(saved)
    assert first_difference(model.snapshot(), saved) is None and model.times.tolist() == [1, 1]
    assert model.tally.seen == [0, 1] and model.inner.degree.tolist() == [0, 0, 2, 0]
    model.reset_state()
    assert first_difference(model.snapshot(), initial) is None and model.tally.seen == []


def test_the_guard_watches_discovered_parts(tally_adapter):
    model = Counting(4)
    src, dst, t = torch.tensor([0]), torch.tensor([1]), torch.tensor([1])
    with no_state_change(model):
        model.score(src, dst, t)
    leaks = {"inner.degree": lambda: model.inner.degree.add_(1),          # in place: version counter
             "times": lambda: setattr(model, "times", torch.zeros(3, dtype=torch.long)),  # replaced buffer
             "state of tally": lambda: model.tally.seen.append(7)}        # an adapter's Python state
    for where, leak in leaks.items():
        with pytest.raises(LeakageError, match=f"changed `{where}` while scoring"):
            with no_state_change(model):
                leak()


def test_adapters_are_registered_once_and_found_by_subclass(tally_adapter):
    class Sub(Tally):
        pass

    assert state_adapter(Sub()) is _ADAPTERS[Tally] and state_adapter(object()) is None
    with pytest.raises(ValueError, match="overwrite=True"):
        register_state_adapter(Tally, _ADAPTERS[Tally])


def test_parameters_leave_the_state_out_and_load_into_any_state_size():
    model = Counting(4)
    model.update(make_stream([0, 1, 2], [1, 2, 3], [1, 2, 3]))  # `times` has grown to 3
    params = parameters_of(model)
    assert set(params) == {"lin.weight", "lin.bias"}
    fresh = Counting(4)
    load_parameters(fresh, model.state_dict())  # a full state_dict: its state entries are ignored
    assert torch.equal(fresh.lin.weight, model.lin.weight) and fresh.times.numel() == 0
    with pytest.raises(RuntimeError, match="missing \\['lin.bias'\\]"):
        load_parameters(fresh, {"lin.weight": params["lin.weight"]})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool,
                                   torch.float16])
def test_checksum_changes_with_any_single_element(dtype):
    g = torch.Generator().manual_seed(0)
    base = (torch.rand(257, generator=g) * 100).to(dtype)
    reference = checksum(base)
    assert reference.dtype == torch.int64 and reference.dim() == 0
    for i in (0, 1, 128, 256):
        changed = base.clone()
        changed[i] = ~changed[i] if dtype == torch.bool else changed[i] + 1
        assert checksum(changed) != reference
    swapped = base.clone()
    swapped[[3, 4]] = base[[4, 3]]
    assert bool(base[3] == base[4]) or checksum(swapped) != reference  # positions count
