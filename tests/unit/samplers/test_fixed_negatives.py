"""Fixed negatives files (docs/protocol.md §5 ``fixed``, §11, §12): round trip, refusal of corrupt or
foreign files, TGB files with ragged rows, and (if py-tgb is installed) TGB interop."""

import hashlib
import io
import pickle
from dataclasses import replace

import numpy as np
import pytest
import torch

from tgeval import DataMismatchError, NegativesFileError, SamplerError, chronological_split, evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.models.heuristics import EdgeBank
from tgeval.samplers import UniformSampler
from tgeval.samplers.fixed import _MAGIC  # noqa: I001 (file layout, for the edit tests)
from tgeval.data.io.tgb_negatives import write_tgb_negatives
from tgeval.samplers.fixed import FixedNegativeSampler, load_negatives, read_tgb_negatives, save_negatives
from tgeval.eval.protocol import Protocol
from tests.conftest import make_stream
from tests.helpers import TableModel

N = 30
K = 6


def random_stream(seed=0, num_events=400, num_nodes=N):
    g = torch.Generator().manual_seed(seed)
    t = torch.sort(torch.randint(0, 120, (num_events,), generator=g)).values  # many shared timestamps
    src = torch.randint(0, num_nodes, (num_events,), generator=g)  # file order inside groups is arbitrary
    dst = torch.randint(0, num_nodes, (num_events,), generator=g)
    return make_stream(src, dst, t)


@pytest.fixture
def setup(tmp_path):
    data = random_stream()
    split = chronological_split(data)
    catalog = Catalog("custom", torch.arange(N), None, N)
    path = tmp_path / "negs.pt"
    stored = save_negatives(path, UniformSampler(catalog), data, split.test, K, seed=3)
    return data, split, catalog, path, stored


def test_round_trip_is_bit_exact_and_evaluates_identically(setup):
    data, split, catalog, path, stored = setup
    loaded = load_negatives(path, data)
    for name, value in stored.arrays().items():
        assert torch.equal(getattr(loaded, name), value) and getattr(loaded, name).dtype == value.dtype
    assert loaded.header == stored.header

    original = evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=K, seed=3),
                        sampler=UniformSampler(catalog))
    fixed = FixedNegativeSampler.from_file(path, data=data)
    replayed = evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=K, seed=12345), sampler=fixed)
    assert torch.equal(original.records["neg"], replayed.records["neg"])
    assert torch.equal(original.records["event"], replayed.records["event"])
    assert original.metrics == replayed.metrics
    # the file's checksum is the manifest's negatives checksum of the original run
    assert original.manifest["negatives_checksum"] == replayed.manifest["negatives_checksum"] == stored.header["checksum"]
    desc = replayed.manifest["sampler"]
    assert desc["name"] == "fixed" and desc["checksum"] == stored.header["checksum"]
    assert desc["sampler"]["name"] == "uniform" and desc["seed"] == 3


def test_a_file_is_never_cut(setup):
    """The file's width is its K: another K is refused, fewer columns are an explicit choice, recorded."""
    data, split, catalog, path, stored = setup
    fixed = FixedNegativeSampler.from_file(path)
    assert fixed.num_negatives == fixed.stored_num_negatives == K
    for k in (2, K + 1):
        with pytest.raises(SamplerError, match=f"serve K={K} per positive \\(all {K} stored\\), but K={k}"):
            evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=k), sampler=fixed)
    for small in (fixed.first(2), FixedNegativeSampler.from_file(path, num_negatives=2)):
        result = evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=2), sampler=small)
        assert torch.equal(result.records["neg"], stored.neg[:, :2])
        described = result.manifest["sampler"]
        assert (described["num_negatives"], described["stored_num_negatives"]) == (2, K)
        assert described["rule"].startswith(f"the first 2 of the {K} stored columns, chosen explicitly")
        assert result.metric_name("sampled", "mrr") == f"MRR (K=2 of {K} stored, fixed)"
    assert fixed.num_negatives == K  # first() leaves the sampler it was called on as it is
    for bad in (0, K + 1, True):
        with pytest.raises(SamplerError, match=f"num_negatives must lie in \\[1, {K}\\]"):
            fixed.first(bad)


def test_positive_without_negatives_is_named(setup):
    data, split, catalog, path, stored = setup
    with pytest.raises(NegativesFileError, match="no stored negatives .first: event"):
        evaluate(EdgeBank(N), data, split.val, Protocol(num_negatives=K), sampler=FixedNegativeSampler.from_file(path))


@pytest.mark.parametrize("where", [0.0, 0.01, 0.1, 0.5, 0.9, 0.999])
def test_flipped_byte_is_refused(setup, where):
    *_, path, _ = setup
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * where)] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(NegativesFileError, match="save_negatives"):
        load_negatives(path)


def _rewrite(path, raw):
    """Re-save an edited payload with a matching file checksum (a deliberate edit, not noise)."""
    buffer = io.BytesIO()
    torch.save(raw, buffer)
    payload = buffer.getvalue()
    path.write_bytes(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def test_altered_array_or_header_is_refused(setup):
    *_, path, _ = setup
    blob = path.read_bytes()
    raw = torch.load(io.BytesIO(blob[len(_MAGIC) + 65 :]), weights_only=True)
    raw["arrays"]["neg"][0, 0] += 1
    _rewrite(path, raw)
    with pytest.raises(NegativesFileError, match="content checksum"):
        load_negatives(path)
    raw["arrays"]["neg"][0, 0] -= 1
    raw["header"]["seed"] = 4
    _rewrite(path, raw)
    with pytest.raises(NegativesFileError, match="content checksum"):
        load_negatives(path)
    raw["header"]["seed"] = 3
    _rewrite(path, raw)
    load_negatives(path)  # restored: accepted


def test_file_drawn_for_other_data_is_refused(setup):
    data, split, catalog, path, stored = setup
    other = make_stream(data.src, data.dst.clone(), data.t)
    i = split.test.start + 3
    other.dst[i] = (other.dst[i] + 1) % N
    with pytest.raises(NegativesFileError, match="drawn for other data .fingerprint sha256:.*this data sha256:"):
        load_negatives(path, other)
    # without the load-time check, evaluate refuses the segment and the sampler cut from the other stream
    sampler = FixedNegativeSampler.from_file(path)
    with pytest.raises(DataMismatchError, match="segment was built from other data"):
        evaluate(EdgeBank(N), other, split.test, Protocol(num_negatives=K), sampler=sampler)
    with pytest.raises(DataMismatchError, match="sampler was built from other data: its first 400 events have "
                                                "fingerprint sha256:.*this stream's first 400 have sha256:"):
        evaluate(EdgeBank(N), other, replace(split.test, built_from=None), Protocol(num_negatives=K), sampler=sampler)


# -- TGB files -----------------------------------------------------------------------------
def tgb_case(tmp_path):
    """History 0..3, test events 4..9 (one duplicate pair), ragged rows of 4 or 3 negatives."""
    src = [0, 1, 2, 3, 0, 1, 2, 0, 4, 0]
    dst = [5, 6, 7, 8, 5, 9, 7, 6, 8, 5]
    t = [1, 1, 2, 2, 5, 5, 6, 6, 7, 8]
    data = make_stream(src, dst, t)
    test = data[4:]
    rows = {(0, 5, 5): [10, 11, 12, 13], (1, 9, 5): [10, 11, 12], (2, 7, 6): [14, 15, 16, 17],
            (0, 6, 6): [18, 19, 10], (4, 8, 7): [11, 12, 13, 14], (0, 5, 8): [10, 12, 14, 16]}
    keys = list(rows)
    path = tmp_path / "tgb_test_ns.pkl"
    write_tgb_negatives(path, [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], list(rows.values()))
    return data, test, rows, path


def test_tgb_ragged_rows_are_padded_masked_and_counted(tmp_path):
    data, test, rows, path = tgb_case(tmp_path)
    with open(path, "rb") as handle:
        raw = pickle.load(handle)
    assert all(isinstance(k[0], np.integer) for k in raw)  # TGB writes numpy scalar keys
    sampler = read_tgb_negatives(path, test, short="allow", num_nodes=20)
    desc = sampler.describe()
    assert desc["num_padded_rows"] == 2 and desc["num_padded_slots"] == 2 and desc["stored_num_negatives"] == 4
    assert desc["file_sha256"].startswith("sha256:") and desc["num_masked_collisions"] == 0
    neg = sampler.sample(test, 4)
    for i, key in enumerate(zip(test.src.tolist(), test.dst.tolist(), test.t.tolist())):
        assert neg.dst[i][neg.mask[i]].tolist() == rows[key]
        assert neg.mask[i].sum() == len(rows[key])
    assert neg.dst[1, 3] == 10  # padded slot: a valid id (the row's first negative)


def test_evaluate_ignores_padded_slots(tmp_path):
    data, test, rows, path = tgb_case(tmp_path)
    table = torch.zeros(20, 20, dtype=torch.float64)
    table[1, 9] = 0.5   # positive of the padded row (1, 9, 5)
    table[1, 10] = 0.9  # its first negative, repeated in the padded slot: above the positive
    table[1, 12] = 0.5  # a tie
    segment = Segment("test", 4, 10, 5, 8)
    result = evaluate(TableModel(table), data, segment, Protocol(num_negatives=4),
                      sampler=read_tgb_negatives(path, test, short="allow", num_nodes=20))
    i = int(torch.nonzero(result.records["event"] == 5)[0, 0])
    # hand computation over the 3 real negatives 10, 11, 12: one above, one equal
    assert int(result.records["sampled_above"][i]) == 1 and int(result.records["sampled_equal"][i]) == 1
    assert result.metrics["sampled"]["negatives"] == {"total": 22, "masked": 2}


def test_tgb_checksum_is_the_manifests(tmp_path):
    """One value: the TGB file's negatives checksum is the manifest's when every stored column is
    scored (ragged rows and a duplicate event included), and another when fewer are."""
    data, test, rows, path = tgb_case(tmp_path)
    model = TableModel(torch.rand(20, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(0)))
    segment = Segment("test", 4, 10, 5, 8)
    sampler = read_tgb_negatives(path, test, short="allow", num_nodes=20)
    whole = evaluate(model, data, segment, Protocol(num_negatives=4), sampler=sampler).manifest
    assert whole["negatives_checksum"] == whole["sampler"]["checksum"] == sampler.describe()["checksum"]
    fewer = evaluate(model, data, segment, Protocol(num_negatives=3), sampler=sampler.first(3)).manifest
    assert fewer["negatives_checksum"] != whole["negatives_checksum"]


def test_tgb_collisions_masked_and_counted(tmp_path):
    data = make_stream([0, 0, 1], [5, 6, 7], [1, 1, 1])
    path = tmp_path / "ns.pkl"
    write_tgb_negatives(path, [0, 0, 1], [5, 6, 7], [1, 1, 1], [[6, 5, 0, 9], [8, 9, 10, 11], [8, 9, 10, 12]])
    masked = read_tgb_negatives(path, data, num_nodes=13)
    described = masked.describe()
    assert described["num_masked_collisions"] == 3  # simultaneous positive 6, true dst 5, source 0
    assert (described["num_masked_sources"], described["num_padded_slots"]) == (1, 0)  # counted apart
    assert masked.sample(data, 4).mask[0].tolist() == [False, False, False, True]
    kept = read_tgb_negatives(path, data, collisions="keep", num_nodes=13)
    assert kept.sample(data, 4).mask.all()


def test_tgb_missing_key_is_a_typed_error(tmp_path):
    data, test, rows, path = tgb_case(tmp_path)
    extra = make_stream(torch.cat([test.src, torch.tensor([3, 3])]), torch.cat([test.dst, torch.tensor([9, 9])]),
                        torch.cat([test.t, torch.tensor([9, 9])]))
    with pytest.raises(NegativesFileError, match=r"2 of 8 events have no negatives .* \(3, 9, 9\)"):
        read_tgb_negatives(path, extra)


def test_tgb_duplicate_events_share_their_entry(tmp_path):
    data = make_stream([0, 0, 1], [5, 5, 7], [1, 1, 1])
    path = tmp_path / "ns.pkl"
    write_tgb_negatives(path, [0, 1], [5, 7], [1, 1], [[8, 9], [10, 11]])
    sampler = read_tgb_negatives(path, data, num_nodes=12)
    assert sampler.describe()["num_rows"] == 2
    assert sampler.sample(data, 2).dst.tolist() == [[8, 9], [8, 9], [10, 11]]


class _Payload:
    """Pickles as a call of ``function(*args)``: what a crafted negatives file would run."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


@pytest.mark.parametrize("how", ["os.system", "eval", "inside an array", "as a key"])
def test_crafted_tgb_pickle_runs_nothing(tmp_path, how):
    import os

    marker = tmp_path / "pwned"
    command = _Payload(os.system, f"touch {marker}")
    evil = _Payload(eval, f"open({str(marker)!r}, 'w').close()")
    table = {"os.system": {(0, 5, 5): command}, "eval": {(0, 5, 5): evil},
             "inside an array": {(0, 5, 5): np.array([evil], dtype=object)},
             "as a key": {(0, 5, _Payload(os.system, f"touch {marker}")): np.array([1])}}[how]
    path = tmp_path / "crafted.pkl"
    path.write_bytes(pickle.dumps(table))
    with pytest.raises(NegativesFileError, match=r"refers to (posix|nt|os)\.system|refers to builtins\.eval"):
        read_tgb_negatives(path, make_stream([0], [5], [5]))
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_tgb_pickles_of_every_protocol_load(tmp_path, protocol):
    data, test, rows, written = tgb_case(tmp_path)
    table = {(np.int64(s), np.int64(d), np.int64(t)): np.asarray(row, dtype=np.int64) for (s, d, t), row in rows.items()}
    path = tmp_path / f"protocol{protocol}.pkl"
    path.write_bytes(pickle.dumps(table, protocol=protocol))
    ours, reference = (read_tgb_negatives(p, test, short="allow", num_nodes=20) for p in (path, written))
    assert torch.equal(ours.sample(test, 4).dst, reference.sample(test, 4).dst)


def test_a_file_written_by_tgbs_own_generator_loads(tmp_path):
    pytest.importorskip("tgb.linkproppred.negative_generator",
                        reason="py-tgb is not installed (optional: pip install --no-deps py-tgb)")
    from tgb.linkproppred.negative_generator import NegativeEdgeGenerator

    data = random_stream(seed=2, num_events=60)
    test = data[40:]
    generator = NegativeEdgeGenerator("tgbl-test", first_dst_id=0, last_dst_id=N - 1, num_neg_e=5, strategy="rnd",
                                      rnd_seed=1)
    path = tmp_path / "tgbl-test_rnd_test.pkl"
    generator.generate_negative_samples_rnd(test, "test", str(path))
    sampler = read_tgb_negatives(path, test, num_nodes=N)
    table = pickle.loads(path.read_bytes())  # the file we wrote ourselves, so a plain load is safe here
    negatives = sampler.sample(test, 5)
    for i, key in enumerate(zip(test.src.tolist(), test.dst.tolist(), test.t.tolist())):
        # TGB leaves out the source's positives at t but not the source itself, which tgeval masks
        assert negatives.dst[i][negatives.mask[i]].tolist() == [v for v in table[key].tolist() if v != key[0]]


# -- interop with py-tgb (optional) ------------------------------------------------------------
def _tgb():
    pytest.importorskip("tgb.linkproppred.negative_sampler",
                        reason="py-tgb is not installed (optional: pip install --no-deps py-tgb)")
    try:
        from tgb.linkproppred.evaluate import Evaluator
        from tgb.linkproppred.negative_sampler import NegativeEdgeSampler
    except ImportError as exc:  # py-tgb installed without its optional dependencies
        pytest.skip(f"py-tgb's evaluator needs a missing package: {exc}")
    return NegativeEdgeSampler, Evaluator


@pytest.mark.parametrize("integer_scores", [False, True])  # tie-free, then many ties (average convention)
def test_matches_tgb_query_batch_and_evaluator(tmp_path, integer_scores):
    NegativeEdgeSampler, Evaluator = _tgb()
    data, test, rows, path = tgb_case(tmp_path)
    tgb_sampler = NegativeEdgeSampler(dataset_name="tgbl-wiki")
    tgb_sampler.load_eval_set(str(path), split_mode="test")
    theirs = tgb_sampler.query_batch(test.src, test.dst, test.t, split_mode="test")
    ours = read_tgb_negatives(path, test, short="allow", num_nodes=20)
    neg = ours.sample(test, ours.num_negatives)
    assert [neg.dst[i][neg.mask[i]].tolist() for i in range(test.num_events)] == theirs

    g = torch.Generator().manual_seed(7)
    table = torch.randint(0, 3, (20, 20), generator=g).double() if integer_scores else torch.rand(20, 20, generator=g,
                                                                                                   dtype=torch.float64)
    segment = Segment("test", 4, 10, 5, 8)
    result = evaluate(TableModel(table), data, segment, Protocol(num_negatives=4, ties="average"), sampler=ours)
    evaluator = Evaluator(name="tgbl-wiki")
    per_event = [evaluator.eval({"y_pred_pos": table[s, d].numpy().reshape(1),
                                 "y_pred_neg": table[s, torch.tensor(negs)].numpy(), "eval_metric": ["mrr"]})["mrr"]
                 for s, d, negs in zip(test.src.tolist(), test.dst.tolist(), theirs)]
    assert result.metrics["sampled"]["mrr"]["micro"] == pytest.approx(float(np.mean(per_event)), abs=1e-6)


def test_evaluate_refuses_a_file_drawn_for_other_history_even_without_data(setup):
    data, split, catalog, path, stored = setup
    other = data.clone()
    other.dst[0] = (other.dst[0] + 1) % N  # a history event changes; the segment's events do not
    fixed = FixedNegativeSampler.from_file(path)  # no data given at load time
    with pytest.raises(DataMismatchError, match="sampler was built from other data"):
        evaluate(EdgeBank(N), other, replace(split.test, built_from=None), Protocol(num_negatives=K), sampler=fixed)
