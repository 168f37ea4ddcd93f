"""Pair-membership factorial, its exhaustive cells and beta* (docs/protocol.md §6, §7)."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.diagnostics.membership import beta_star, fit_membership_beta, membership_factorial
from tgeval.models.heuristics import EdgeBank, PreferentialAttachment
from tgeval.samplers.membership import SeenSampler, UnseenSampler


def _stream(src, dst, t) -> TemporalData:
    return TemporalData(src=torch.tensor(src), dst=torch.tensor(dst), t=torch.tensor(t))


def _segment(data: TemporalData, start: int) -> Segment:
    end = data.num_events
    return Segment("test", start, end, data.t[start].item(), data.t[end - 1].item())


def test_edgebank_cells_on_hand_made_stream():
    # history: 0->1, 0->2; test: 0->1 (repeated), 0->3 (new), 5->1 (new, source without history)
    data = _stream([0, 0, 0, 0, 5], [1, 2, 1, 3, 1], [1, 2, 3, 4, 5])
    catalog = Catalog("custom", torch.tensor([1, 2, 3, 4, 5]), None, 6)
    table = membership_factorial(EdgeBank(6), data, _segment(data, 2), catalog, num_negatives=2, seed=3)
    rs, ru = table.cell("repeated", "seen"), table.cell("repeated", "unseen")
    ns, nu = table.cell("new", "seen"), table.cell("new", "unseen")
    # same positives across a row (and event ids are input indices)
    assert rs.events.tolist() == ru.events.tolist() == [2]
    assert ns.events.tolist() == nu.events.tolist() == [3]
    # repeated vs seen {2}: a tie (average rank 1.5); repeated vs unseen: rank 1
    assert rs.mrr == pytest.approx(2 / 3) and rs.exhaustive_mrr == pytest.approx(2 / 3)
    assert rs.num_short == 1  # seen pool {2} < K
    assert ru.mrr == 1.0 and ru.exhaustive_mrr == 1.0
    # new vs seen {1, 2}: last (rank 3); new vs unseen {4, 5}: ties, rank 2
    assert ns.mrr == pytest.approx(1 / 3) and ns.exhaustive_mrr == pytest.approx(1 / 3)
    assert nu.mrr == pytest.approx(1 / 2) and nu.exhaustive_mrr == pytest.approx(1 / 2)
    # the event of source 5 has no seen pool: counted, excluded from both cells of its row
    assert ns.excluded_empty_seen == nu.excluded_empty_seen == 1
    assert rs.excluded_empty_seen == 0 and ns.count == nu.count == 1
    assert table.records["seen_size"].tolist() == [1, 2, 0]
    assert table.records["unseen_size"].tolist() == [3, 2, 3]
    d = table.to_dict()
    assert d["diagonal"] == {"repeated_vs_all_seen": pytest.approx(2 / 3), "new_vs_all_unseen": pytest.approx(0.5)}


def _random_stream(seed: int, num_events: int = 160) -> TemporalData:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, 6, (num_events,), generator=g)
    dst = torch.randint(6, 16, (num_events,), generator=g)
    t = torch.sort(torch.randint(0, num_events // 2, (num_events,), generator=g)).values
    return TemporalData(src=src, dst=dst, t=t, position=torch.arange(num_events))


@pytest.mark.parametrize("model_cls", [EdgeBank, PreferentialAttachment])
def test_exhaustive_cells_equal_brute_force(model_cls):
    data = _random_stream(1)
    start = int(torch.searchsorted(data.t, data.t[100]))
    catalog = Catalog("custom", torch.arange(3, 14), None, 16)  # partial catalog, holds some sources
    table = membership_factorial(model_cls(16), data, _segment(data, start), catalog, num_negatives=3,
                                 batch_size=1, ties="average")
    rec = table.records
    ref = model_cls(16)
    order = torch.argsort(rec["event"])
    assert rec["event"][order].tolist() == list(range(start, data.num_events))
    for i in range(rec["event"].numel()):
        u, v, t = int(rec["src"][i]), int(rec["dst"][i]), int(rec["t"][i])
        prefix = data[: int(torch.searchsorted(data.t, torch.tensor(t)))]  # batches are single groups
        ref.reset_state()
        if prefix.num_events:
            ref.update(prefix)
        seen_all = {int(b) for a, b in zip(prefix.src, prefix.dst) if int(a) == u}
        simultaneous = {int(b) for a, b, s in zip(data.src, data.dst, data.t) if int(a) == u and int(s) == t}
        seen = seen_all - simultaneous - {u}
        unseen = set(catalog.items.tolist()) - seen_all - simultaneous - {u}
        assert bool(rec["repeated"][i]) == (v in seen_all)
        pos = float(ref.score(torch.tensor([u]), torch.tensor([v]), torch.tensor([t]))[0])
        for name, cand in (("seen", seen), ("unseen", unseen)):
            s = ref.score(torch.full((len(cand),), u), torch.tensor(sorted(cand), dtype=torch.long),
                          torch.full((len(cand),), t)).tolist() if cand else []
            assert int(rec[f"{name}_all_above"][i]) == sum(x > pos for x in s)
            assert int(rec[f"{name}_all_equal"][i]) == sum(x == pos for x in s)
            assert int(rec[f"{name}_size"][i]) == len(cand)
    assert torch.equal(rec["unseen_all_size"], rec["unseen_size"])
    # same positives across each row
    for positive in ("repeated", "new"):
        assert torch.equal(table.cell(positive, "seen").events, table.cell(positive, "unseen").events)


def test_samplers_respect_pools():
    data = _random_stream(2)
    catalog = Catalog("custom", torch.arange(6, 16), None, 16)
    seen, unseen = SeenSampler(16), UnseenSampler(catalog, 16)
    history, batch = data[:80], data[80:120]
    seen.observe(history)
    unseen.observe(history)
    gen = torch.Generator().manual_seed(0)
    s, u = seen.draw(batch, 4, gen), unseen.draw(batch, 4, gen)
    hist = {(int(a), int(b)) for a, b in zip(history.src, history.dst)}
    for i in range(batch.num_events):
        a, b, t = int(batch.src[i]), int(batch.dst[i]), int(batch.t[i])
        sim = {int(y) for x, y, z in zip(batch.src, batch.dst, batch.t) if int(x) == a and int(z) == t}
        drawn_s = s.negatives.dst[i][s.negatives.mask[i]].tolist()
        drawn_u = u.negatives.dst[i][u.negatives.mask[i]].tolist()
        assert len(set(drawn_s)) == len(drawn_s) == min(4, int(s.size[i]))
        assert len(set(drawn_u)) == len(drawn_u) == min(4, int(u.size[i]))
        assert all((a, x) in hist and x not in sim and x != b for x in drawn_s)
        assert all((a, x) not in hist and x not in sim and x in range(6, 16) for x in drawn_u)
    with pytest.raises(ValueError, match="fixed catalog"):
        UnseenSampler(Catalog("custom", torch.arange(3), torch.tensor([0, 1, 2]), 16), 16)


def test_beta_star_closed_form_equals_logistic_on_simulated_membership():
    g = torch.Generator().manual_seed(0)
    p1, q1, n = 0.35, 0.06, 400_000
    m_pos = torch.rand(n, generator=g) < p1
    m_neg = torch.rand(n, generator=g) < q1
    analytic = math.log(p1 / (1 - p1)) - math.log(q1 / (1 - q1))
    closed = fit_membership_beta(m_pos, m_neg)
    logistic = fit_membership_beta(m_pos, m_neg, method="logistic")
    assert closed == pytest.approx(logistic, abs=1e-4)
    assert closed == pytest.approx(analytic, abs=0.03)  # SE ~ 0.01


def _q1_reference(data: TemporalData, start: int, catalog: list[int]) -> float:
    values = []
    for i in range(start, data.num_events):
        u, t = int(data.src[i]), int(data.t[i])
        before = {int(b) for a, b, s in zip(data.src, data.dst, data.t) if int(a) == u and int(s) < t}
        sim = {int(b) for a, b, s in zip(data.src, data.dst, data.t) if int(a) == u and int(s) == t}
        cand = set(catalog) - sim - {u}
        values.append(len(cand & before) / len(cand))
    return sum(values) / len(values)


def test_uniform_beta_star_analytic_q1_and_fit_agree():
    data = _random_stream(3, num_events=120)
    start = int(torch.searchsorted(data.t, data.t[60]))
    items = list(range(4, 16))
    catalog = Catalog("custom", torch.tensor(items), None, 16)
    small = beta_star(data, _segment(data, start), catalog, num_negatives=5, fit=False)
    assert small.q1 == pytest.approx(_q1_reference(data, start, items), abs=1e-12)
    p1_ref = sum((int(data.src[i]), int(data.dst[i])) in {(int(a), int(b)) for a, b, s in
                 zip(data.src, data.dst, data.t) if int(s) < int(data.t[i])} for i in range(start, 120))
    assert small.p1 == pytest.approx(p1_ref / (120 - start))

    g = torch.Generator().manual_seed(4)  # large stream: analytic beta* vs fitted on actual uniform draws
    e = 20_000
    big = TemporalData(src=torch.randint(0, 40, (e,), generator=g), dst=torch.randint(40, 240, (e,), generator=g),
                       t=torch.arange(e))
    cat = Catalog("custom", torch.arange(40, 240), None, 240)
    out = beta_star(big, _segment(big, 10_000), cat, num_negatives=20, batch_size=1000, seed=1)
    assert out.method == "analytic-uniform" and out.num_negatives == 200_000
    assert out.q1_draws == pytest.approx(out.q1, rel=0.02)
    assert out.beta_fitted == pytest.approx(out.beta, abs=0.05)
