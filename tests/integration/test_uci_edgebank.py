"""EdgeBank on UCI (online protocol): every test event's ranks equal a plain set-based reference,
from exact per-timestamp history (the default) and from the history at each batch's start."""

from collections import defaultdict

import pytest

from tgeval import build_catalog, chronological_split, evaluate
from tgeval.data.datasets import load_dataset
from tgeval.eval.metrics import rank_from_counts
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler

from tests.conftest import require_dataset

pytestmark = pytest.mark.datasets


@pytest.fixture(scope="module")
def uci():
    require_dataset("uci")
    data, info = load_dataset("uci")
    return data, info.num_nodes


def _batches(t, start, end, batch_size):
    """Plain-Python greedy merge of whole timestamp groups into batches of <= batch_size events."""
    groups, i = [], start
    while i < end:
        j = i
        while j < end and t[j] == t[i]:
            j += 1
        groups.append((i, j))
        i = j
    batches = []
    for a, b in groups:
        if batches and b - batches[-1][0] <= batch_size:
            batches[-1] = (batches[-1][0], b)
        else:
            batches.append((a, b))
    return batches


@pytest.mark.parametrize("batch_size", [37, 200])
@pytest.mark.parametrize("history", ["exact", "batch"])
def test_edgebank_ranks_equal_set_reference(uci, batch_size, history):
    data, num_nodes = uci
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    result = evaluate(EdgeBank(num_nodes), data, split.test,
                      Protocol(num_negatives=20, ties="average", batch_size=batch_size,
                               history=None if history == "exact" else "batch"),
                      sampler=UniformSampler(catalog), catalog=catalog)
    rec = result.records
    assert result.manifest["history"]["mode"] == history

    src, dst, t = data.src.tolist(), data.dst.tolist(), data.t.tolist()
    seen = defaultdict(set)  # source -> destinations seen so far
    for u, v in zip(src[: split.test.start], dst[: split.test.start]):
        seen[u].add(v)
    catalog_set = set(catalog.items.tolist())
    order = rec["event"].tolist()  # canonical replay order -> file index
    pos_of = {e: i for i, e in enumerate(order)}
    neg = rec["neg"].tolist()
    sampled_rank, full_rank = [], []
    # exact: an event sees every event before its timestamp (one timestamp group at a time);
    # batch: the history at its batch's start (score the whole batch, then add it)
    steps = _batches(t, split.test.start, split.test.end, 1 if history == "exact" else batch_size)
    for i, j in steps:
        batch = range(i, j)
        for e in batch:
            u, v = src[e], dst[e]
            p = v in seen[u]
            negs = neg[pos_of[e]]
            above = sum((q in seen[u]) > p for q in negs)
            equal = sum((q in seen[u]) == p for q in negs)
            sampled_rank.append(1 + above + equal / 2)
            excluded = {u} | {dst[f] for f in batch if src[f] == u and t[f] == t[e]}
            candidates = catalog_set - excluded
            n_seen = len(candidates & seen[u])
            above = n_seen if not p else 0
            equal = n_seen if p else len(candidates) - n_seen
            full_rank.append(1 + above + equal / 2)
        for e in batch:
            seen[src[e]].add(dst[e])

    index = [e - split.test.start for e in order]
    got_sampled = rank_from_counts(rec["sampled_above"], rec["sampled_equal"], ties="average").tolist()
    got_full = rank_from_counts(rec["above"], rec["equal"], ties="average").tolist()
    assert [sampled_rank[k] for k in index] == got_sampled
    assert [full_rank[k] for k in index] == got_full
    assert len(got_full) == split.test.num_events == 8976


def test_historical_negatives_are_hard_for_edgebank(uci):
    """Would fail if the historical sampler silently fell back to uniform draws."""
    from tgeval.samplers import HistoricalSampler

    data, num_nodes = uci
    split = chronological_split(data)
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    uniform = evaluate(EdgeBank(num_nodes), data, split.test, Protocol(num_negatives=5),
                       sampler=UniformSampler(catalog))
    historical = HistoricalSampler(num_nodes, catalog=catalog, replace=True)
    hard = evaluate(EdgeBank(num_nodes), data, split.test, Protocol(num_negatives=5), sampler=historical)
    fallback = hard.manifest["sampler"]["num_fallback_events"]
    assert fallback < 0.5 * split.test.num_events  # most events really drew from their history
    assert hard.metrics["sampled"]["mrr"]["micro"] < 0.6 * uniform.metrics["sampled"]["mrr"]["micro"]


@pytest.mark.slow
def test_every_registered_sampler_runs_with_its_defaults_on_uci(uci):
    """K = 20 on UCI's test segment: short history pools are filled (counted), not fatal, and a hard
    sampler still separates from uniform (EdgeBank's memorisation is worth much less against it)."""
    from tgeval import samplers

    data, num_nodes = uci
    split = chronological_split(data, (0.70, 0.15, 0.15))
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)
    specs = [name for name in samplers.names() if name not in ("fixed", "tgb", "mixture")]
    specs.append("mixture:historical=0.5,uniform=0.5")
    mrr, described = {}, {}
    for spec in specs:
        sampler = samplers.from_spec(spec, data=data, split=split, catalog=catalog, segment="test")
        result = evaluate(EdgeBank(num_nodes), data, split.test, Protocol(num_negatives=20), sampler=sampler)
        mrr[spec] = result.metrics["sampled"]["mrr"]["micro"]
        described[spec] = result.manifest["sampler"]
    history = described["historical"]
    assert history["short"] == "fill" and history["num_short_events"] > 0
    assert history["num_filled_slots"] >= history["num_short_events"]
    assert mrr["historical"] < 0.5 * mrr["uniform"], mrr
