"""evaluate on a stream already in canonical order (t, src, dst) uses its tensors as they are (no permuted
copy); the numbers equal those of the permuted path, on that stream and on one whose simultaneous events
are shuffled."""

from __future__ import annotations

import pytest
import torch

from tgeval.eval.tuning import Tuning
from tgeval import Protocol, build_catalog, chronological_split, evaluate
from tgeval.data.groups import canonical_order, is_canonical
from tgeval.data.synthetic import generate_events
from tgeval.data.validation import permute_events
from tgeval.stream import walk
from tgeval.eval import engine
from tgeval.stream.loader import same_batch_history, timestamp_batch_boundaries
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import HistoricalSampler, UniformSampler


def streams(dtype: torch.dtype):
    """(canonical stream, the same events with each timestamp group shuffled, that shuffle ``p``: S = C[p])."""
    data = generate_events(num_events=1_500, num_nodes=40, seed=3)
    data.t = (data.t - data.t.min()).div(40, rounding_mode="floor").to(dtype)  # groups of several events
    canonical = permute_events(data, canonical_order(data.src, data.dst, data.t))
    key = torch.rand(canonical.num_events, generator=torch.Generator().manual_seed(1))
    p = torch.sort(canonical.t.double() + 0.5 * key, stable=True).indices  # moves events inside their group only
    assert torch.equal(canonical.t[p], canonical.t) and not torch.equal(p, torch.arange(p.numel()))
    return canonical, permute_events(canonical, p), p


def run(data, sampler_name, monkeypatch, force_permuted=False):
    """evaluate EdgeBank (sampled + all-entity, every record); and how many times events were permuted."""
    calls = []
    monkeypatch.setattr(walk, "permute_events", lambda d, perm: calls.append(1) or permute_events(d, perm))
    monkeypatch.setattr(walk, "is_canonical", (lambda *args: False) if force_permuted else is_canonical)
    split = chronological_split(data)
    n = int(torch.maximum(data.src.max(), data.dst.max())) + 1
    catalog = build_catalog(data, "train", train_end=split.train.end)
    sampler = UniformSampler(catalog) if sampler_name == "uniform" else HistoricalSampler(n, catalog=catalog)
    result = evaluate(EdgeBank(n), data, split.test, Protocol(num_negatives=3, batch_size=7), sampler=sampler,
                      catalog=catalog, tuning=Tuning(records="all"))
    return result, len(calls)


def assert_same_records(a: dict, b: dict, skip=()):
    assert set(a) == set(b)
    for key in set(a) - set(skip):
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.long, torch.float64])
@pytest.mark.parametrize("sampler_name", ["uniform", "historical"])
def test_fast_path_equals_permuted_path(dtype, sampler_name, monkeypatch):
    canonical, shuffled, p = streams(dtype)
    assert is_canonical(canonical.src, canonical.dst, canonical.t)
    assert not is_canonical(shuffled.src, shuffled.dst, shuffled.t)
    fast, fast_copies = run(canonical, sampler_name, monkeypatch)
    forced, forced_copies = run(canonical, sampler_name, monkeypatch, force_permuted=True)
    permuted, permuted_copies = run(shuffled, sampler_name, monkeypatch)
    assert (fast_copies, forced_copies, permuted_copies) == (0, 1, 1)
    assert fast.metrics == forced.metrics == permuted.metrics
    assert_same_records(fast.records, forced.records)
    assert fast.manifest["data"] == forced.manifest["data"]
    assert fast.manifest["negatives_checksum"] == forced.manifest["negatives_checksum"] \
        == permuted.manifest["negatives_checksum"]
    assert permuted.manifest["data"]["canonical_fingerprint"] == fast.manifest["data"]["fingerprint"]
    assert_same_records(fast.records, permuted.records, skip=("event",))
    # each row, the same event (up to events equal in (t, src, dst), whose relative order is the file's)
    mapped, event = p[permuted.records["event"]], fast.records["event"]
    assert torch.equal(mapped.sort().values, event.sort().values)
    for key in ("src", "dst", "t"):
        assert torch.equal(canonical[key][mapped], canonical[key][event])


def test_is_canonical_and_chunked_order_match_a_whole_sort():
    g = torch.Generator().manual_seed(0)
    for n in (0, 1, 2, 9, 500):
        t = torch.randint(0, max(n // 10, 1), (n,), generator=g).sort().values
        src, dst = torch.randint(0, 4, (n,), generator=g), torch.randint(0, 4, (n,), generator=g)
        whole = canonical_order(src, dst, t, chunk=n + 1)
        for chunk in (1, 2, 5, 64):
            assert torch.equal(canonical_order(src, dst, t, chunk=chunk), whole)
            assert is_canonical(src, dst, t, chunk=chunk) == torch.equal(whole, torch.arange(n))
            assert is_canonical(src[whole], dst[whole], t[whole], chunk=chunk)
        unsorted = torch.randperm(n, generator=g)  # an unsorted t is sorted whole
        order = canonical_order(src[unsorted], dst[unsorted], t[unsorted], chunk=3)
        key = (t[unsorted] * 16 + src[unsorted] * 4 + dst[unsorted])[order]
        assert bool((key[1:] >= key[:-1]).all())


def test_history_record_counted_in_runs_of_batches_equals_one_call(monkeypatch):
    canonical, _, _ = streams(torch.long)
    split = chronological_split(canonical)
    events = canonical[split.test.start:split.test.end]
    bounds = timestamp_batch_boundaries(events.t, 60)  # several groups per batch
    whole = int(same_batch_history(events.src, events.dst, events.t, bounds).sum())
    assert whole > 0
    for chunk in (1, 10, 50, 10**6):
        monkeypatch.setattr(engine, "HISTORY_CHUNK_EVENTS", chunk)
        record = engine._history_record("batch", events.src, events.dst, events.t, bounds)
        assert record["same_batch_events"] == record["stale_events"] == whole
