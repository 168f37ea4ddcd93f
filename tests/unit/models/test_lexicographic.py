"""Lexicographic combinations: their counted all-entity ranks equal scoring every catalog item, for every pair of
keys, on dense streams (many repeated pairs, ties of the first key, sources with many destinations), from exact
and from batch-start history; refusals of bad keys and of codes a float64 score cannot hold."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tgeval.eval.tuning import Tuning
from tgeval import evaluate
from tgeval.data.catalog import Catalog, build_catalog
from tgeval.errors import ModelCapabilityError, ModelConfigError
from tgeval.models import lexicographic
from tgeval.models.lexicographic import KEYS, Lexicographic
from tgeval.eval.protocol import Protocol
from tests.conftest import make_stream
from tests.helpers import refusing_catalog_scoring
from tests.strategies import segment_from, streams

N = 6
PAIRS = [(a, b) for a in KEYS for b in KEYS if a != b]


@settings(max_examples=200, deadline=None)
@given(data=streams(min_events=8, max_events=60, max_nodes=N, max_time=10), keys=st.sampled_from(PAIRS),
       start=st.integers(1, 50), batch_size=st.integers(1, 25), history=st.sampled_from(["exact", "batch"]),
       kind=st.sampled_from(["all", "range", "custom"]))
def test_counted_ranks_equal_scored_ranks(data, keys, start, batch_size, history, kind):
    segment = segment_from(data, min(start, data.num_events - 1))
    catalog = (Catalog("custom", torch.tensor([0, 2, 3, 5]), None, N) if kind == "custom"
               else build_catalog(data, kind, num_nodes=N))
    protocol = Protocol(num_negatives=0, batch_size=batch_size, history=history)
    counted = evaluate(refusing_catalog_scoring(Lexicographic(N, keys)), data, segment, protocol, catalog=catalog)
    scored = evaluate(Lexicographic(N, keys), data, segment, protocol, catalog=catalog,
                      tuning=Tuning(use_shortcut=False))
    for key in ("score", "above", "equal", "candidates"):
        assert torch.equal(counted.records[key], scored.records[key]), (keys, key)


@pytest.mark.parametrize("keys", [("recency-local",), ("recency-local", "recency-local"),
                                  ("recency-local", "degree")])
def test_keys_are_two_distinct_known_names(keys):
    with pytest.raises(ModelConfigError, match="two distinct names"):
        Lexicographic(4, keys)


def test_codes_beyond_what_float64_holds_are_refused(monkeypatch):
    """Past the bounds the score would round: refused, never rounded (bounds lowered to reach them)."""
    monkeypatch.setattr(lexicographic, "SECOND_BOUND", 4)
    model = Lexicographic(3, ("recency-local", "popularity-global"))
    model.update(make_stream([0, 1, 2], [1, 1, 1], [1, 2, 3]))
    with pytest.raises(ModelCapabilityError, match="popularity-global reached code 4"):
        model.update(make_stream([0], [1], [4]))
