"""Synthetic event streams (tgeval.data.synthetic)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch_geometric.data import TemporalData

from tgeval.data.synthetic import generate_events
from tgeval.data.validation import validate

E, N = 20_000, 2_000


@pytest.fixture(scope="module")
def stream() -> TemporalData:
    return generate_events(E, N, seed=3)


def repeated_share(data: TemporalData) -> float:
    """Share of events whose (src, dst) pair occurred at an earlier event index."""
    key = data.src.numpy() * (int(data.dst.max()) + 1) + data.dst.numpy()
    return 1.0 - np.unique(key).size / key.size


def test_same_seed_same_stream() -> None:
    a = generate_events(3_000, 300, feature_dim=4, seed=7)
    b = generate_events(3_000, 300, feature_dim=4, seed=7)
    for key in ("src", "dst", "t", "msg"):
        assert torch.equal(a[key], b[key])


def test_different_seeds_differ() -> None:
    a = generate_events(3_000, 300, seed=1)
    b = generate_events(3_000, 300, seed=2)
    assert not torch.equal(a.dst, b.dst)


def test_output_is_valid_and_canonical(stream: TemporalData) -> None:
    assert stream.num_events == E
    assert stream.src.dtype == stream.dst.dtype == stream.t.dtype == torch.int64
    assert bool((stream.t[1:] >= stream.t[:-1]).all())
    assert int(stream.src.min()) >= 0 and max(int(stream.src.max()), int(stream.dst.max())) < N
    validate(stream, num_nodes=N)
    assert getattr(stream, "msg", None) is None


def test_features() -> None:
    data = generate_events(500, 50, feature_dim=3, seed=0)
    assert data.msg.dtype == torch.float32 and data.msg.shape == (500, 3)


def test_bipartite_ranges_are_disjoint() -> None:
    data = generate_events(E, N, bipartite=True, num_sources=1_500, seed=0)
    assert int(data.src.max()) < 1_500 <= int(data.dst.min())
    assert int(data.dst.max()) < N
    default = generate_events(2_000, 100, bipartite=True, seed=0)
    assert int(default.src.max()) < 50 <= int(default.dst.min())


def test_repeated_pairs_are_common_and_follow_repeat_prob(stream: TemporalData) -> None:
    assert repeated_share(stream) > 0.4
    never = generate_events(E, N, repeat_prob=0.0, seed=3)
    often = generate_events(E, N, repeat_prob=0.9, seed=3)
    assert repeated_share(never) < repeated_share(stream) < repeated_share(often)


def test_many_events_share_timestamps(stream: TemporalData) -> None:
    distinct = np.unique(stream.t.numpy()).size
    # default: resolution 4 with mean gap 1 -> about 4 events per timestamp
    assert distinct < 0.5 * E
    assert bool((stream.t % 4 == 0).all())
    sparse = generate_events(E, N, mean_gap=50.0, time_resolution=1, seed=3)
    assert np.unique(sparse.t.numpy()).size > 0.95 * E


def test_nodes_are_born_during_the_stream(stream: TemporalData) -> None:
    cut = int(0.85 * E)
    seen = set(stream.src[:cut].tolist()) | set(stream.dst[:cut].tolist())
    late = stream.src[cut:].tolist() + stream.dst[cut:].tolist()
    new_share = sum(node not in seen for node in late) / len(late)
    assert new_share > 0.0
    late_nodes = set(late) - seen
    assert len(late_nodes) > 0.05 * N


def test_nodes_die() -> None:
    def survivors(data: TemporalData) -> float:
        first = set(data.src[: E // 10].tolist())
        last = set(data.src[-E // 2 :].tolist())
        return len(first & last) / len(first)

    mortal = generate_events(E, N, mean_lifetime=0.05, seed=3)
    immortal = generate_events(E, N, mean_lifetime=None, seed=3)
    assert survivors(mortal) < 0.2 < survivors(immortal)


def test_degree_is_skewed(stream: TemporalData) -> None:
    degree = torch.bincount(torch.cat([stream.src, stream.dst]), minlength=N).double()
    top = torch.sort(degree, descending=True).values
    assert float(top[: N // 100].sum() / degree.sum()) > 0.1  # top 1% of nodes
    flat = generate_events(E, N, pa_exponent=0.0, activity_sigma=0.0, repeat_prob=0.0, seed=3)
    flat_degree = torch.bincount(flat.dst, minlength=N).double()
    skewed_degree = torch.bincount(stream.dst, minlength=N).double()
    assert float(skewed_degree.max()) > 3 * float(flat_degree.max())


def test_tiny_streams() -> None:
    assert generate_events(1, 2, seed=0).num_events == 1
    assert generate_events(10, 2, bipartite=True, mean_lifetime=0.01, seed=0).num_events == 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_events": 0}, "`num_events` must be >= 1, got 0."),
        ({"repeat_prob": 1.5}, "`repeat_prob` must be in [0, 1], got 1.5."),
        ({"recency": 0.0}, "`recency` must be in (0, 1], got 0.0."),
        ({"mean_lifetime": 0.0}, "`mean_lifetime` must be > 0 or None, got 0.0."),
        ({"num_sources": 5}, "`num_sources`=5 only applies with bipartite=True"),
        ({"bipartite": True, "num_sources": 10}, "`num_sources` must be in [1, num_nodes) = [1, 10)"),
    ],
)
def test_parameter_errors(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"num_events": 10, "num_nodes": 10, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        generate_events(**arguments)  # type: ignore[arg-type]


def test_time_resolution_must_be_int() -> None:
    with pytest.raises(TypeError, match="`time_resolution` must be an int, got float."):
        generate_events(10, 10, time_resolution=2.0)  # type: ignore[arg-type]
