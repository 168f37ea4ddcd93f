"""TGB negatives files with short rows, read as TGB's preset reads them: every event is ranked against
its own row with TGB's tie rule, checked against a plain loop over each row (padding never counted)."""

import pytest
import torch

from tgeval.eval.tuning import Tuning
from tgeval import chronological_split, evaluate
from tgeval.eval.presets import TGB
from tgeval.data.io.tgb_negatives import write_tgb_negatives
from tests.conftest import make_stream
from tests.helpers import TableModel

N = 30


def tgb_rank(table, u, v, row):
    """TGB's evaluator: 1 + #negatives above the positive + 0.5 x #negatives equal to it."""
    p = float(table[u, v])
    return 1 + sum(float(table[u, c]) > p for c in row) + 0.5 * sum(float(table[u, c]) == p for c in row)


@pytest.mark.parametrize("seed", range(4))
def test_each_event_is_ranked_against_its_own_row(tmp_path, seed):
    g = torch.Generator().manual_seed(seed)
    num_events, k = 80, 7
    src = torch.randint(0, 8, (num_events,), generator=g)
    dst = torch.randint(8, N, (num_events,), generator=g)
    t = torch.sort(torch.randint(0, 25, (num_events,), generator=g)).values  # shared timestamps, repeated events
    data = make_stream(src, dst, t)
    split = chronological_split(data, (0.5, 0.0, 0.5))
    test = split.test.select(data)
    keys = sorted(set(zip(test.src.tolist(), test.dst.tolist(), test.t.tolist())))
    rows = {}
    for u, v, s in keys:  # as TGB's generator: every destination but the source's positives at s, K at most
        positives = {b for a, b, w in keys if a == u and w == s}
        pool = torch.tensor([c for c in range(8, N) if c not in positives])
        rows[(u, v, s)] = pool[torch.randperm(pool.numel(), generator=g)[:k - len(positives) + 1]].tolist()
    rows[keys[0]] = rows[keys[0]][:2]  # one much shorter row
    write_tgb_negatives(tmp_path / "ns.pkl", *zip(*rows), list(rows.values()))
    sampler = TGB.tgb_negatives(tmp_path / "ns.pkl", test, num_nodes=N)
    table = torch.randint(0, 3, (N, N), generator=g).double()  # three levels: many ties
    result = evaluate(TableModel(table), data, split.test, TGB.protocol(num_negatives=sampler.num_negatives),
                      sampler=sampler, tuning=Tuning(records="events"))
    events = result.event_table()
    expected = [tgb_rank(table, u, v, rows[(u, v, s)])
                for u, v, s in zip(events["src"].tolist(), events["dst"].tolist(), events["t"].tolist())]
    assert events["sampled_rank"].tolist() == expected
    assert result.metrics["sampled"]["mrr"]["micro"] == pytest.approx(sum(1 / r for r in expected) / len(expected),
                                                                     abs=1e-12)
    lengths = torch.tensor([len(row) for row in rows.values()])
    effective = sampler.describe()["effective_num_negatives"]
    assert sampler.num_negatives == int(lengths.max())
    assert effective == {"min": int(lengths.min()), "median": float(lengths.double().quantile(0.5)),
                         "mean": float(lengths.double().mean()), "max": int(lengths.max()), "num_rows": len(rows),
                         "num_short_rows": int((lengths < lengths.max()).sum()), "num_rows_without": 0}
