"""tgeval.core.device: the explicit host read, compaction to a known size, deterministic kernels."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from tgeval import build_catalog, deterministic, evaluate
from tgeval.data.split import chronological_split
from tgeval.data.synthetic import generate_events
from tgeval.core.device import HOST_READ, host_ints, positions
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.helpers import small_neural_model


def test_host_ints_reads_every_value_in_one_annotated_copy():
    values = (torch.tensor(3), torch.tensor([7]), torch.zeros((), dtype=torch.long))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        assert host_ints(*values) == [3, 7, 0]
    assert [e.name for e in prof.events()].count(HOST_READ) == 1
    assert host_ints() == []


@pytest.mark.parametrize("size", [0, 1, 17])
def test_positions_equals_nonzero(size, device):
    gen = torch.Generator().manual_seed(size)
    mask = (torch.rand(size, generator=gen) > 0.5).to(device)
    got = positions(mask, int(mask.sum()))
    assert torch.equal(got.cpu(), torch.nonzero(mask.cpu()).view(-1)) and got.device.type == device.type


@pytest.mark.parametrize("name", ["tgn", "dyrep", "graphmixer"])
def test_deterministic_restores_the_setting_and_changes_no_cpu_result(name, one_thread):
    """Inside the block PyTorch's deterministic kernels are on (and no operation on the path warns
    that it has none: warnings are errors in the test suite); after it the previous setting is
    back. CPU results are bit-identical either way."""
    data = generate_events(300, 20, seed=1)
    split = chronological_split(data, (0.6, 0.2, 0.2))
    catalog = build_catalog(data, "train", train_end=split.train.end)

    def run():
        torch.manual_seed(0)
        return evaluate(small_neural_model(name, 20), data, split.test, Protocol(num_negatives=3, batch_size=30),
                        sampler=UniformSampler(catalog), catalog=catalog)

    before = torch.are_deterministic_algorithms_enabled()
    plain = run()
    with deterministic():
        assert torch.are_deterministic_algorithms_enabled()
        strict = run()
    assert torch.are_deterministic_algorithms_enabled() == before
    assert strict.metrics == plain.metrics
    for key in plain.records:
        assert torch.equal(strict.records[key], plain.records[key]), key
