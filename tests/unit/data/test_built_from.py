"""Catalogs, segments and samplers carry the events they were built from (issue 13, part 2):
``evaluate`` and ``train_epoch`` refuse them on a stream that does not start with those events,
and accept them on every stream that does (a prefix or an extension of their own)."""

import pytest
import torch

from tgeval import Catalog, CatalogError, DataMismatchError, build_catalog, chronological_split, evaluate
from tgeval.data.hashing import BuiltFrom, check_built_for, fingerprint
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol
from tgeval.samplers import InductiveSampler, MixtureSampler, UniformSampler
from tgeval.training.train import Recipe, train_epoch
from tests.conftest import make_stream
from tests.helpers import small_neural_model

N = 12


def stream(seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (240,), generator=g)
    dst = (src + torch.randint(1, N, (240,), generator=g)) % N
    return make_stream(src, dst, torch.arange(240) // 2)


@pytest.fixture
def two_streams():
    data, other = stream(0), stream(1)
    return data, other, chronological_split(data)


def test_a_catalog_of_other_data_is_refused(two_streams):
    data, other, split = two_streams
    catalog = build_catalog(other, "train", train_end=split.train.end, num_nodes=N)
    theirs, here = BuiltFrom.of(other, split.train.end).fingerprint, BuiltFrom.of(data, split.train.end).fingerprint
    with pytest.raises(DataMismatchError, match=f"catalog was built from other data: its first {split.train.end} "
                                                f"events have fingerprint {theirs}, .* have {here}"):
        evaluate(EdgeBank(N), data, split.test, catalog=catalog)


def test_a_segment_of_other_data_is_refused(two_streams):
    data, other, split = two_streams
    with pytest.raises(DataMismatchError, match="segment was built from other data"):
        evaluate(EdgeBank(N), other, split.test, catalog=build_catalog(other, "all"))
    model = small_neural_model("tgn", N)
    with pytest.raises(DataMismatchError, match="segment was built from other data"):
        train_epoch(model, other, split.train, recipe=Recipe(UniformSampler(build_catalog(other, "all")), "bce"),
                    optimizer=torch.optim.Adam(model.parameters()))


def test_prefix_objects_fit_every_stream_sharing_the_prefix(two_streams):
    """A training catalog and the validation segment depend on the events before the
    validation's end only: evaluating the stream cut there gives the full stream's result."""
    data, _, split = two_streams
    catalog = build_catalog(data, "train", train_end=split.train.end)
    shorter = data[: split.val.end]
    full = evaluate(EdgeBank(N), data, split.val, catalog=catalog).metrics
    assert evaluate(EdgeBank(N), shorter, split.val, catalog=catalog).metrics == full
    changed_future = data.clone()
    changed_future.dst[split.val.end:] = (changed_future.dst[split.val.end:] + 1) % N
    assert evaluate(EdgeBank(N), changed_future, split.val, catalog=catalog).metrics == full


def test_a_whole_stream_object_refuses_a_prefix(two_streams):
    data, _, split = two_streams
    catalog = build_catalog(data, "time-available")
    with pytest.raises(DataMismatchError, match=f"built from a stream of at least {data.num_events} events; this "
                                                f"one has {split.val.end}"):
        evaluate(EdgeBank(N), data[: split.val.end], split.val, catalog=catalog)


def test_samplers_are_checked_nested_ones_included(two_streams):
    data, other, split = two_streams
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=N)
    inductive = InductiveSampler(other, train_end=split.train.end, num_nodes=N, catalog=catalog)
    with pytest.raises(DataMismatchError, match="sampler was built from other data"):
        evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=2), sampler=inductive, catalog=catalog)
    mixture = MixtureSampler([UniformSampler(catalog), UniformSampler(build_catalog(other, "all"))], [0.5, 0.5])
    with pytest.raises(DataMismatchError, match="sampler was built from other data"):
        evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=2), sampler=mixture)
    own = MixtureSampler([UniformSampler(catalog), InductiveSampler(data, train_end=split.train.end, catalog=catalog)], [0.5, 0.5])
    result = evaluate(EdgeBank(N), data, split.test, Protocol(num_negatives=2), sampler=own)
    assert result.manifest["sampler"]["components"][1]["built_from"] == BuiltFrom.of(data).to_dict()


def test_a_catalog_for_fewer_nodes_is_refused(two_streams):
    data, _, split = two_streams
    small = Catalog("custom", torch.arange(N - 2), None, N - 2)  # a hand-made catalog of a smaller graph
    with pytest.raises(CatalogError, match=f"built for ids < {N - 2}, but this stream holds id {N - 1}"):
        evaluate(EdgeBank(N), data, split.test, catalog=small)


def test_fingerprints_do_not_depend_on_id_and_time_dtypes(two_streams):
    data = two_streams[0]
    narrow = data.clone()
    narrow.src, narrow.dst, narrow.t = data.src.int(), data.dst.int(), data.t.int()
    assert fingerprint(narrow) == fingerprint(data)
    floats = data.clone()
    floats.t = data.t.float()
    assert fingerprint(floats) != fingerprint(data)  # integer and float time are different streams
    check_built_for(narrow, segment=BuiltFrom.of(data, 100), nothing=None)
