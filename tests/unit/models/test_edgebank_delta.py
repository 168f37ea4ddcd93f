"""EdgeBank's two sorted arrays (main + delta) against a plain dict of last-seen times.

Small capacities force every path: updates straight into the main array while it is no larger
than the delta, new pairs merged into the delta, the delta merged into the main array, regrowth,
bulk updates, dtype promotion to float64, and snapshots / restores / resets in between.
"""

import hypothesis.strategies as st
import torch
from hypothesis import given, settings
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.sorted_keys import PAD
from tgeval.models.heuristics import EdgeBank

N = 9
ALL_KEYS = torch.arange(N * N)
CATALOG = Catalog("custom", torch.tensor([1, 2, 4, 6]), None, N)


class SmallBank(EdgeBank):
    min_capacity, bulk_events = 4, 24


pair = st.tuples(st.integers(0, N - 1), st.integers(0, N - 1))
pairs = st.one_of(st.lists(pair, max_size=5), st.lists(pair, min_size=25, max_size=40))  # small (delta) or bulk
steps = st.lists(st.one_of(st.tuples(st.just("update"), pairs, st.integers(0, 3), st.booleans()),
                           st.tuples(st.just("snapshot")), st.tuples(st.just("restore")), st.tuples(st.just("reset"))),
                 max_size=60)


def _check(model: EdgeBank, expected: dict) -> None:
    found, last = model._lookup(ALL_KEYS)
    assert found.tolist() == [k in expected for k in ALL_KEYS.tolist()]
    assert [v for v, f in zip(last.tolist(), found.tolist()) if f] == [expected[k] for k in sorted(expected)]
    state = model.snapshot()  # the union of both arrays, sorted, no key twice
    assert state["keys"].tolist() == sorted(expected)
    assert state["last_seen"].tolist() == [expected[k] for k in sorted(expected)]
    src = torch.arange(N)
    above, equal = model.catalog_counts(src, torch.full((N,), 10**6), torch.full((N,), 0.5, dtype=torch.float64),
                                        CATALOG)
    seen = [sum(1 for k in expected if k // N == u and k % N in CATALOG.items.tolist()) for u in range(N)]
    assert above.tolist() == seen and equal.tolist() == [0] * N


@settings(max_examples=100, deadline=None)
@given(steps=steps)
def test_delta_lookups_equal_a_dict_of_last_seen_times(steps):
    model, expected, saved, clock = SmallBank(N), {}, ({}, None), 0
    for step in steps:
        if step[0] == "update":
            _, batch, spread, float_times = step
            t = torch.arange(len(batch)) // (spread + 1) + clock  # non-decreasing, ties within the batch
            clock += len(batch)
            t = t.double() / 2 if float_times else t  # float times turn the stored ones to float64
            src, dst = [u for u, _ in batch], [v for _, v in batch]
            model.update(TemporalData(src=torch.tensor(src, dtype=torch.long), dst=torch.tensor(dst, dtype=torch.long),
                                      t=t))
            expected.update({u * N + v: s for u, v, s in zip(src, dst, t.tolist())})  # the last one of a pair wins
        elif step[0] == "snapshot":
            saved = (dict(expected), model.snapshot())
        elif step[0] == "restore" and saved[1] is not None:
            expected = dict(saved[0])
            model.restore(saved[1])
        elif step[0] == "reset":
            expected = {}
            model.reset_state()
        _check(model, expected)


def test_many_small_updates_go_through_the_delta():
    """Past the delta's size the main array holds most pairs and the new ones wait in the delta."""
    model, expected, held = SmallBank(N), {}, []
    gen = torch.Generator().manual_seed(1)
    for step in range(60):
        src, dst = torch.randint(0, N, (3,), generator=gen), torch.randint(0, N, (3,), generator=gen)
        model.update(TemporalData(src=src, dst=dst, t=torch.full((3,), step)))
        expected.update({u * N + v: step for u, v in zip(src.tolist(), dst.tolist())})
        held.append(int((model.delta_keys != PAD).sum()))
        _check(model, expected)
    assert max(held) > 0 and 0 in held[held.index(max(held)):]  # new pairs waited in the delta, then were merged
