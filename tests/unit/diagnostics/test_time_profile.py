"""Time profile of ranks (tgeval.diagnostics.time_profile) against a plain-Python reference."""

import csv
import math

import pytest
import torch

from tgeval.diagnostics.time_bins import (
    negative_ranks,
    plot_time_profile,
    time_profile,
    time_profile_rows,
    write_time_profile_csv,
)


def _random_records(seed, E=300, K=6, mask=True, all_entity=True):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, 40, (E,), generator=g).double() * 2.5 + 10.0
    score = torch.randint(0, 5, (E,), generator=g).double()        # coarse: many ties
    neg_score = torch.randint(0, 5, (E, K), generator=g).double()
    neg_mask = torch.rand(E, K, generator=g) > 0.2 if mask else torch.ones(E, K, dtype=torch.bool)
    sampled_above = ((neg_score > score[:, None]) & neg_mask).sum(1)
    sampled_equal = ((neg_score == score[:, None]) & neg_mask).sum(1)
    rec = {"event": torch.randperm(E, generator=g), "t": t, "score": score, "neg_score": neg_score,
           "neg_mask": neg_mask, "sampled_above": sampled_above, "sampled_equal": sampled_equal}
    if all_entity:
        rec["above"] = torch.randint(0, 50, (E,), generator=g)
        rec["equal"] = torch.randint(0, 3, (E,), generator=g)
    return rec


def _tie(m, ties):
    return {"average": m / 2, "pessimistic": m, "optimistic": 0}[ties]


def _reference(rec, bins, ties, lo=None, hi=None):
    """Plain-Python loop: bin of each event by edge comparisons, means by lists."""
    t = rec["t"].tolist()
    lo = min(t) if lo is None else lo
    hi = max(t) if hi is None else hi
    edges = torch.linspace(lo, hi, bins + 1, dtype=torch.float64).tolist()
    pos = [[] for _ in range(bins)]
    neg = [[] for _ in range(bins)]
    for e, te in enumerate(t):
        if te < lo or te > hi:
            continue
        b = next(i for i in range(bins) if edges[i] <= te < edges[i + 1]) if te < edges[-1] else bins - 1
        if "above" in rec:
            pos[b].append(1 + int(rec["above"][e]) + _tie(int(rec["equal"][e]), ties))
        else:
            pos[b].append(1 + int(rec["sampled_above"][e]) + _tie(int(rec["sampled_equal"][e]), ties))
        row = [float(rec["score"][e])] + [float(s) for s, m in zip(rec["neg_score"][e], rec["neg_mask"][e]) if m]
        for j in range(1, len(row)):
            above = sum(1 for c in range(len(row)) if c != j and row[c] > row[j])
            equal = sum(1 for c in range(len(row)) if c != j and row[c] == row[j])
            neg[b].append(1 + above + _tie(equal, ties))
    mean = [sum(v) / len(v) if v else math.nan for v in pos]
    nmean = [sum(v) / len(v) if v else math.nan for v in neg]
    return edges, [len(v) for v in pos], mean, nmean, [len(v) for v in neg]


def _close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("ties", ["average", "pessimistic", "optimistic"])
@pytest.mark.parametrize("seed,bins", [(0, 7), (1, 50), (2, 1), (3, 13)])
def test_bins_and_means_equal_plain_loop(seed, bins, ties):
    rec = _random_records(seed)
    prof = time_profile({"uniform": rec}, bins=bins, ties=ties)
    edges, count, mean, nmean, ncount = _reference(rec, bins, ties)
    assert prof.pos_rank_kind == "all_entity"
    assert prof.count.tolist() == count and sum(count) == rec["t"].numel()
    _close(prof.t_start.tolist(), edges[:-1])
    _close(prof.t_end.tolist(), edges[1:])
    _close(prof.pos_rank.tolist(), mean)
    _close(prof.neg_rank["uniform"].tolist(), nmean)
    assert prof.neg_count["uniform"].tolist() == ncount


def test_sampled_positive_rank_without_all_entity_pass_and_t_range():
    rec = _random_records(5, all_entity=False)
    prof = time_profile(rec, bins=9, ties="average", t_range=(20.0, 80.0))
    edges, count, mean, nmean, _ = _reference(rec, 9, "average", lo=20.0, hi=80.0)
    assert prof.pos_rank_kind == "sampled"
    assert prof.count.tolist() == count and sum(count) < rec["t"].numel()  # outside events ignored
    _close(prof.pos_rank.tolist(), mean)
    _close(prof.neg_rank["sampler"].tolist(), nmean)
    _close(prof.pos_sampled_rank["sampler"].tolist(), mean)


def test_equal_width_bins_last_closed_and_empty_bins_nan():
    t = torch.tensor([0.0, 0.0, 2.5, 9.99, 10.0], dtype=torch.float64)  # nothing in [5, 7.5)
    E = t.numel()
    rec = {"event": torch.arange(E), "t": t, "score": torch.ones(E, dtype=torch.float64),
           "above": torch.tensor([0, 2, 4, 6, 8]), "equal": torch.zeros(E, dtype=torch.long)}
    prof = time_profile(rec, bins=4, ties="average")
    assert prof.t_start.tolist() == [0.0, 2.5, 5.0, 7.5]
    assert prof.t_end.tolist() == [2.5, 5.0, 7.5, 10.0]
    widths = prof.t_end - prof.t_start
    assert torch.allclose(widths, widths[0].expand_as(widths))
    assert prof.count.tolist() == [2, 1, 0, 2]  # 2.5 opens bin 1; t_max = 10 is in the last bin
    assert prof.pos_rank[0] == 2.0 and prof.pos_rank[1] == 5.0 and prof.pos_rank[3] == 8.0
    assert math.isnan(float(prof.pos_rank[2]))
    assert prof.neg_rank == {}  # no sampled negatives in these records
    # degenerate span: every event in bin 0
    same = dict(rec, t=torch.full((E,), 3.0, dtype=torch.float64))
    assert time_profile(same, bins=3, ties="average").count.tolist() == [E, 0, 0]


def test_negative_rank_definition_small_example():
    r = negative_ranks(torch.tensor([0.5]), torch.tensor([[0.9, 0.1, 0.5, 7.0]]),
                       torch.tensor([[True, True, True, False]]), ties="average")
    # list {0.5 (positive), 0.9, 0.1, 0.5}: 0.9 -> 1; 0.1 -> 4; 0.5 ties the positive -> 2 + 1/2
    assert r[0, :3].tolist() == [1.0, 4.0, 2.5] and math.isnan(float(r[0, 3]))
    r = negative_ranks(torch.tensor([1.0]), torch.tensor([[-math.inf, 0.0]]), torch.tensor([[True, False]]),
                       ties="pessimistic")
    assert r[0, 0] == 2.0  # the padded slot never ties with a real -inf score


def test_several_samplers_keyed_and_event_sets_checked():
    a, b = _random_records(7), _random_records(8)
    b["event"], b["t"] = a["event"].flip(0), a["t"].flip(0)  # same events, other order
    prof = time_profile({"uniform": a, "historical": b}, bins=5, ties="average")
    assert set(prof.neg_rank) == {"uniform", "historical"}
    _close(prof.neg_rank["historical"].tolist(), _reference(b, 5, "average")[3])
    bad = dict(b, event=b["event"] + 1000)
    with pytest.raises(ValueError, match="historical"):
        time_profile({"uniform": a, "historical": bad}, bins=5)
    with pytest.raises(ValueError, match="bins"):
        time_profile(a, bins=0)


def test_table_and_plot(tmp_path):
    rec = _random_records(9)
    prof = time_profile({"uniform": rec, "other": rec}, bins=10, ties="average")
    rows = time_profile_rows(prof)
    assert len(rows) == 10 and rows[0]["bin"] == 0
    assert {"neg_rank:uniform", "neg_count:other", "pos_sampled_rank:uniform"} <= set(rows[0])
    write_time_profile_csv(tmp_path / "profile.csv", prof)
    with open(tmp_path / "profile.csv", newline="") as handle:
        back = list(csv.DictReader(handle))
    assert [int(r["count"]) for r in back] == prof.count.tolist()
    plot_time_profile(tmp_path / "profile.png", prof, title="test")
    data = (tmp_path / "profile.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
