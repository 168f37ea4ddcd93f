"""The order-statistics tools of the heuristics' counted all-entity ranks against plain-Python brute force."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.data.catalog import Catalog
from tgeval.models.counting import SourceOrder, bisect_counts, prefix_weight_above, table_counts


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(0, 9), max_size=40), data=st.data())
def test_prefix_weight_above_equals_a_loop(values, data):
    size = len(values)
    weights = data.draw(st.lists(st.integers(-2, 2), min_size=size, max_size=size))
    queries = data.draw(st.lists(st.tuples(st.integers(0, size), st.integers(-1, 10), st.integers(-1, 10)),
                                 min_size=1, max_size=8))
    prefix, above, least = (torch.tensor(column) for column in zip(*queries))
    got = prefix_weight_above(torch.tensor(values, dtype=torch.long), torch.tensor(weights, dtype=torch.long),
                              prefix, above, least)
    for i, (k, a, b) in enumerate(queries):
        assert int(got[0][i]) == sum(w for v, w in zip(values[:k], weights[:k]) if v > a)
        assert int(got[1][i]) == sum(w for v, w in zip(values[:k], weights[:k]) if v >= b)


@settings(max_examples=200, deadline=None)
@given(tables=st.lists(st.lists(st.sampled_from([-math.inf, -1.0, 0.0, 0.5, 2.0]), min_size=6, max_size=6),
                       min_size=1, max_size=4),
       items=st.sets(st.integers(0, 5), min_size=1), data=st.data())
def test_table_counts_equal_a_loop(tables, items, data):
    rows = data.draw(st.lists(st.tuples(st.integers(0, len(tables) - 1), st.sampled_from([-math.inf, -1.0, 0.0, 1.0,
                                                                                            2.0])), min_size=1))
    catalog = Catalog("custom", torch.tensor(sorted(items)), None, 6)
    table, positive = (torch.tensor(column) for column in zip(*rows))
    above, equal = table_counts(torch.tensor(tables, dtype=torch.float64), catalog, table, positive.double())
    for i, (j, p) in enumerate(rows):
        scores = [tables[j][c] for c in sorted(items)]
        assert (int(above[i]), int(equal[i])) == (sum(s > p for s in scores), sum(s == p for s in scores))


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.sampled_from([-math.inf, -2.0, 0.0, 0.25, 3.0]), min_size=1, max_size=12),
       rows=st.lists(st.tuples(st.sampled_from([0.0, 0.5, 3.0]), st.sampled_from([-math.inf, -3.0, -0.5, 0.0, 2.5])),
                     min_size=1, max_size=6))
def test_bisect_counts_equal_a_loop(keys, rows):
    """A score non-decreasing in the key (the key minus a per-query shift), counted with its own arithmetic."""
    ordered = torch.tensor(sorted(keys), dtype=torch.float64)
    shift, positive = (torch.tensor(column, dtype=torch.float64) for column in zip(*rows))
    above, equal = bisect_counts(ordered, lambda key: key - shift, positive)
    for i, (d, p) in enumerate(rows):
        scores = [k - d for k in keys]
        assert (int(above[i]), int(equal[i])) == (sum(s > p for s in scores), sum(s == p for s in scores))


@settings(max_examples=200, deadline=None)
@given(pairs=st.dictionaries(st.tuples(st.integers(0, 4), st.integers(0, 4)), st.integers(0, 6), max_size=20),
       queries=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 7), st.integers(0, 3)), min_size=1, max_size=6),
       bound=st.sampled_from([None, 7]))
def test_source_order_counts_and_lists_a_sources_pairs_in_a_range(pairs, queries, bound):
    n = 5
    keys = torch.tensor([u * n + v for u, v in pairs] + [2**63 - 1], dtype=torch.long)  # padding last
    values = torch.tensor(list(pairs.values()) + [0], dtype=torch.long)
    order = SourceOrder(keys, values, keys != 2**63 - 1, n, bound=bound)
    queries = [(u, a, a + width) for u, a, width in queries]  # a range [lower, upper), possibly empty
    src, lower, upper = (torch.tensor(column) for column in zip(*queries))
    first, end = order.range(src, lower, upper)
    rows, items = order.pairs(first, end)
    for i, (u, a, b) in enumerate(queries):
        expected = sorted(v for (s, v), value in pairs.items() if s == u and a <= value < b)
        assert int(end[i] - first[i]) == len(expected)
        assert sorted(items[rows == i].tolist()) == expected
