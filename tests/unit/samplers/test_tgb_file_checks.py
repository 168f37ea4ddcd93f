"""TGB negatives files checked against the data (issue 29 part 4): short or empty rows are refused
unless allowed, and then never ranked first; ids outside the node range are refused; the collision
mask is exact for ids near 2**62."""

import pytest
import torch

from tgeval import NegativesFileError, SamplerError, chronological_split, evaluate
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.eval.metrics import count_above_equal
from tgeval.eval.protocol import Protocol
from tgeval.eval.display import protocol_line
from tgeval.samplers import UniformSampler, from_spec
from tgeval.data.io.tgb_negatives import write_tgb_negatives
from tgeval.samplers.fixed import FixedNegativeSampler, read_tgb_negatives, save_negatives
from tests.conftest import make_stream
from tests.helpers import TableModel

N = 40


def half_empty_case(tmp_path, num_events=60, k=5, seed=0):
    """A stream whose last ``num_events`` events form the test segment; every other row of the file is empty.
    Events join nodes below ``N / 2``, negatives lie above: no collision."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N // 2, (2 * num_events,), generator=g)
    dst = torch.randint(0, N // 2, (2 * num_events,), generator=g)
    data = make_stream(src, dst, torch.arange(2 * num_events))  # one event per timestamp: no duplicate keys
    split = chronological_split(data, (0.35, 0.15, 0.5))
    test = split.test.select(data)
    assert test.num_events == num_events
    neg = torch.randint(N // 2, N, (num_events, k), generator=g)
    rows = [row.tolist() if i % 2 == 0 else [] for i, row in enumerate(neg)]
    path = tmp_path / "half_empty_ns.pkl"
    write_tgb_negatives(path, test.src, test.dst, test.t, rows)
    return data, test, rows, path, split


def test_short_and_empty_rows_are_refused_unless_allowed(tmp_path):
    data, test, rows, path, _ = half_empty_case(tmp_path)
    with pytest.raises(NegativesFileError, match=r"30 of 60 rows shorter than its 5 negatives per positive \(first: "
                                                 r"key \(src, dst, t\) = \(\d+, \d+, 61\), 0 negatives; 30 rows are "
                                                 r"empty\).*short='allow'"):
        read_tgb_negatives(path, test, num_nodes=N)
    allowed = read_tgb_negatives(path, test, num_nodes=N, short="allow").describe()
    assert allowed["short"] == "allow" and allowed["num_padded_rows"] == 30
    assert allowed["effective_num_negatives"]["num_rows_without"] == 30
    assert (allowed["effective_num_negatives"]["min"], allowed["effective_num_negatives"]["max"]) == (0, 5)


def test_the_cli_spec_takes_short_allow(tmp_path):
    data, test, rows, path, split = half_empty_case(tmp_path)
    catalog = build_catalog(data, "all", num_nodes=N)
    with pytest.raises(NegativesFileError, match="short='allow'"):
        from_spec(f"tgb:path={path}", data=data, split=split, catalog=catalog, segment="test")
    sampler = from_spec(f"tgb:path={path},short=allow", data=data, split=split, catalog=catalog, segment="test")
    assert sampler.describe()["short"] == "allow"


def test_empty_rows_are_excluded_never_ranked_first_brute_force(tmp_path):
    data, test, rows, path, split = half_empty_case(tmp_path)
    table = torch.rand(N, N, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    sampler = read_tgb_negatives(path, test, num_nodes=N, short="allow")
    result = evaluate(TableModel(table), data, split.test, Protocol(num_negatives=5), sampler=sampler)
    # brute force: the mean reciprocal rank over the events that have negatives, rank = 1 + #negatives above
    rr = [1.0 / (1 + sum(float(table[s, v]) > float(table[s, d]) for v in row))
          for s, d, row in zip(test.src.tolist(), test.dst.tolist(), rows) if row]
    sampled = result.metrics["sampled"]
    assert sampled["num_events"] == 30 and sampled["events_without_negatives"] == 30
    assert sampled["mrr"]["micro"] == pytest.approx(sum(rr) / len(rr), abs=1e-12)
    assert sum(entry["sampled"]["num_events"] for entry in result.metrics["strata"].values()) == 30
    assert sampled["negatives"] == {"total": 150, "masked": 150}
    ranks = result.event_table()["sampled_rank"]  # per event, in replay order (= file order here)
    assert torch.isnan(ranks[1::2]).all() and not torch.isnan(ranks[::2]).any()
    # an all-masked row counts nothing above or equal: ranked first if it were kept, hence left out
    above, equal = count_above_equal(torch.zeros(1), torch.ones(1, 5), torch.zeros(1, 5, dtype=torch.bool))
    assert int(above[0]) == int(equal[0]) == 0
    line = protocol_line(result)
    assert ("effective K per row: min 0 / median 2.5 / mean 2.5 / max 5; 30 of 60 rows below K, each event ranked "
            "against its own row" in line and "30 events without negatives" in line)


def test_ids_outside_the_node_range_are_refused(tmp_path):
    data = make_stream([0, 1], [2, 3], [1, 2])
    path = tmp_path / "ns.pkl"
    write_tgb_negatives(path, [0, 1], [2, 3], [1, 2], [[4, 5], [6, 99]])
    with pytest.raises(NegativesFileError, match=r"outside the given node range \[0, 10\) in 1 rows \(first: key "
                                                 r"\(src, dst, t\) = \(1, 3, 2\), id 99\)"):
        read_tgb_negatives(path, data, num_nodes=10)
    with pytest.raises(NegativesFileError, match=r"outside the data's node range \[0, 4\) in 2 rows \(first: key "
                                                 r"\(src, dst, t\) = \(0, 2, 1\), id 4\).*pass num_nodes="):
        read_tgb_negatives(path, data)
    write_tgb_negatives(path, [0, 1], [2, 3], [1, 2], [[4, 5], [-1, 6]])
    with pytest.raises(NegativesFileError, match=r"\(1, 3, 2\), id -1\)"):
        read_tgb_negatives(path, data, num_nodes=10)
    write_tgb_negatives(path, [0, 1], [2, 3], [1, 2], [[4, 5], [6, 9]])
    assert read_tgb_negatives(path, data, num_nodes=10).describe()["num_rows"] == 2


def test_tgeval_file_ids_outside_the_node_range_are_refused(tmp_path):
    """A file drawn from a catalog of more ids than the data holds: refused unless num_nodes covers them."""
    g = torch.Generator().manual_seed(3)
    data = make_stream(torch.randint(0, 10, (80,), generator=g), torch.randint(0, 10, (80,), generator=g),
                       torch.arange(80))
    split = chronological_split(data)
    path = tmp_path / "negs.pt"
    sampler = UniformSampler(Catalog("custom", torch.arange(N), None, N))
    with pytest.raises(SamplerError, match=r"UniformSampler.sample returned node id \d+ .*outside the node range "
                                           r"\[0, 10\)"):  # the data's, unless the drawing says otherwise
        save_negatives(path, sampler, data, split.test, 8)
    stored = save_negatives(path, sampler, data, split.test, 8, num_nodes=N)
    first = int(torch.nonzero((stored.neg >= 10).any(1))[0, 0])
    with pytest.raises(NegativesFileError, match=rf"outside the data's node range \[0, 10\) in \d+ rows \(first: "
                                                 rf"event {int(stored.event[first])} .*pass num_nodes="):
        FixedNegativeSampler.from_file(path, data=data)
    with pytest.raises(NegativesFileError, match=r"outside the given node range \[0, 12\)"):
        FixedNegativeSampler.from_file(path, num_nodes=12)
    catalog = build_catalog(data, "all", num_nodes=10)
    with pytest.raises(NegativesFileError, match=r"outside the given node range \[0, 10\)"):
        from_spec(f"fixed:path={path}", data=data, split=split, catalog=catalog, segment="test")
    assert FixedNegativeSampler.from_file(path, data=data, num_nodes=N).num_negatives == 8


@pytest.mark.parametrize("dense", [True, False], ids=["compared", "looked-up"])
@pytest.mark.parametrize("big", [7, 2**62, 2**63 - 1])
def test_collision_mask_is_exact_for_huge_ids_brute_force(tmp_path, big, dense, monkeypatch):
    """Small ids with one node renamed ``big``: keys ``group * (max id + 1) + item`` wrapped around int64.
    Both ways of finding the forbidden slots: comparing with each forbidden id of the row, and
    looking the negatives up in sorted keys (as for rows with many simultaneous positives)."""
    if not dense:
        monkeypatch.setattr("tgeval.samplers.base.DENSE_FORBIDDEN", 0)
    g = torch.Generator().manual_seed(1)

    def ids(shape):
        drawn = torch.randint(0, 8, shape, generator=g)
        return torch.where(drawn == 7, big, drawn)

    src, dst = ids((50,)), ids((50,))
    t = torch.sort(torch.randint(0, 6, (50,), generator=g)).values  # simultaneous events
    data = make_stream(src, dst, t)
    keys = sorted(set(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist())))
    neg = ids((len(keys), 6)).tolist()
    path = tmp_path / "ns.pkl"
    write_tgb_negatives(path, [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], neg)
    sampler = read_tgb_negatives(path, data)
    expected = 0
    for (s, d, ts), row in zip(keys, neg):
        forbidden = {s} | {b for a, b, c in keys if a == s and c == ts}
        expected += sum(v in forbidden for v in row)
    assert 0 < expected < len(keys) * 6
    assert sampler.describe()["num_masked_collisions"] == expected
    served = sampler.sample(data, 6)
    for i, (s, d, ts) in enumerate(zip(data.src.tolist(), data.dst.tolist(), data.t.tolist())):
        row = neg[keys.index((s, d, ts))]
        forbidden = {s} | {b for a, b, c in keys if a == s and c == ts}
        assert served.dst[i].tolist() == row
        assert served.mask[i].tolist() == [v not in forbidden for v in row]
