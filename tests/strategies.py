"""Hypothesis strategies: small random event streams with many shared timestamps."""

import torch
from hypothesis import strategies as st
from torch_geometric.data import TemporalData


@st.composite
def streams(draw, min_events=2, max_events=40, max_nodes=8, max_time=12):
    n = draw(st.integers(min_events, max_events))
    nodes = draw(st.integers(2, max_nodes))
    src = draw(st.lists(st.integers(0, nodes - 1), min_size=n, max_size=n))
    dst = draw(st.lists(st.integers(0, nodes - 1), min_size=n, max_size=n))
    t = sorted(draw(st.lists(st.integers(0, max_time), min_size=n, max_size=n)))
    return TemporalData(src=torch.tensor(src, dtype=torch.long), dst=torch.tensor(dst, dtype=torch.long),
                        t=torch.tensor(t, dtype=torch.long))
