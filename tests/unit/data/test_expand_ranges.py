"""expand_ranges (flattened index ranges, shared by ranking, samplers, heuristics) against brute force."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.data.sorted_keys import expand_ranges


@settings(max_examples=200, deadline=None)
@given(ranges=st.lists(st.tuples(st.integers(0, 2**31 - 40), st.sampled_from([0, 0, 1, 2, 7])), max_size=12),
       dtype=st.sampled_from([torch.int32, torch.int64]), known_total=st.booleans())
def test_expand_ranges_like_brute_force(ranges, dtype, known_total):
    lo = torch.tensor([a for a, _ in ranges], dtype=dtype)
    lengths = torch.tensor([n for _, n in ranges], dtype=torch.long)
    total = sum(n for _, n in ranges) if known_total else None
    owner, index = expand_ranges(lo, lengths, total=total)
    assert owner.tolist() == [r for r, (_, n) in enumerate(ranges) for _ in range(n)]
    assert index.tolist() == [a + k for a, n in ranges for k in range(n)]  # empty ranges anywhere, large int32 lo
    assert owner.dtype == index.dtype == dtype
