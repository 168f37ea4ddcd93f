"""Hypothesis strategies: small random event streams with many shared timestamps."""

import torch
from hypothesis import assume
from hypothesis import strategies as st
from torch_geometric.data import TemporalData

from tgeval.data.split import Segment
from tgeval.data.validation import permute_events


@st.composite
def streams(draw, min_events=2, max_events=40, max_nodes=8, max_time=12):
    n = draw(st.integers(min_events, max_events))
    nodes = draw(st.integers(2, max_nodes))
    src = draw(st.lists(st.integers(0, nodes - 1), min_size=n, max_size=n))
    dst = draw(st.lists(st.integers(0, nodes - 1), min_size=n, max_size=n))
    t = sorted(draw(st.lists(st.integers(0, max_time), min_size=n, max_size=n)))
    return TemporalData(src=torch.tensor(src, dtype=torch.long), dst=torch.tensor(dst, dtype=torch.long),
                        t=torch.tensor(t, dtype=torch.long), position=torch.arange(n))  # as the loader attaches it


def segment_from(data, start):
    """Segment from the first group boundary at or after ``start`` to the end (rejects the
    example when none is left)."""
    t = data.t.tolist()
    while 0 < start < len(t) and t[start - 1] == t[start]:
        start += 1
    assume(start < len(t))
    return Segment("test", start, len(t), t[start], t[-1])


def shuffle_within_groups(data, seed):
    """``data`` with the events of every timestamp group in a random (seeded) order."""
    gen = torch.Generator().manual_seed(seed)
    keys = data.t.double() + torch.rand(data.num_events, generator=gen, dtype=torch.float64) * 0.5
    return permute_events(data, torch.argsort(keys))
