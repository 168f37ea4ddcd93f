"""A result and its per-event file are one pair: the JSON records the CSV's sha256, and readers
refuse a pair that does not match (interrupted writes: tests/integration/test_interrupted_writes.py)."""

import json

import pytest
import torch

from tgeval import evaluate
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.diagnostics.comparison import load_events
from tgeval.models.heuristics import EdgeBank
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tests.conftest import make_stream

def test_readers_refuse_a_broken_pair_or_a_path_outside_the_results_folder(tmp_path):
    data = make_stream(torch.arange(30) % 5, (torch.arange(30) * 2) % 9, torch.arange(30) // 3)
    catalog = Catalog("custom", torch.arange(10), None, 10)
    result = evaluate(EdgeBank(10), data, Segment("test", 15, 30, 5, 9), Protocol(num_negatives=2),
                      sampler=UniformSampler(catalog))
    out = tmp_path / "r.json"
    result.save(out, events=tmp_path / "e.csv")
    assert torch.equal(load_events(out)["event"], load_events(tmp_path / "e.csv")["event"])
    payload = json.loads(out.read_text())
    for events_file, message in (("/dev/zero", "not a regular file inside"), ("../e.csv", "not a regular file inside"),
                                 (".", "not a regular file inside")):
        payload["manifest"]["events_file"] = events_file
        out.write_text(json.dumps(payload))
        with pytest.raises(ValueError, match=message):
            load_events(out)
    payload["manifest"]["events_file"] = "e.csv"
    out.write_text(json.dumps(payload))
    with open(tmp_path / "e.csv", "a") as handle:  # the CSV changed after the pair was written
        handle.write("\n")
    with pytest.raises(ValueError, match="does not match this result"):
        load_events(out)
