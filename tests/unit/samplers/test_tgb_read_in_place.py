"""read_tgb_negatives pads ragged rows in place in the unpickled buffer (rows in event order) or in a
copy (any other order): the same matrix, mask and checksum as a plain construction, whatever the chunks."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

import tgeval.data.io.tgb_negatives as tgb_negatives
import tgeval.samplers.fixed as fixed
from tests.conftest import make_stream
from tgeval.samplers import read_tgb_negatives, write_tgb_negatives
from tgeval.samplers.base import negatives_checksum

LENGTHS = [4, 4, 2, 4, 4, 4, 0, 4, 3, 4, 4, 4, 4, 1, 4]  # short rows early, in the middle and late
EVENTS = make_stream(list(range(15)), [20 + i for i in range(15)], list(range(15)))


def expected(rows):
    """Plain padding: each row's values, then its first value (or its destination when empty)."""
    width = max(map(len, rows))
    neg = torch.tensor([row + [row[0] if row else 20 + i] * (width - len(row)) for i, row in enumerate(rows)])
    mask = torch.tensor([[j < len(row) for j in range(width)] for row in rows])
    return neg, mask


@pytest.mark.parametrize("chunk", [4, 8, 2**20])  # scores per chunk: 1 or 2 rows of width 4, or all rows
@pytest.mark.parametrize("order", ["events", "reversed"])
def test_padding_equals_a_plain_construction(tmp_path, monkeypatch, chunk, order):
    monkeypatch.setattr(tgb_negatives, "CHUNK_SCORES", chunk)  # the padding
    monkeypatch.setattr(fixed, "CHUNK_SCORES", chunk)  # the checksum
    rows = [[30 + (3 * i + j) % 40 for j in range(n)] for i, n in enumerate(LENGTHS)]
    path = tmp_path / "neg.pkl"
    index = list(range(15)) if order == "events" else list(reversed(range(15)))
    write_tgb_negatives(path, EVENTS.src[index], EVENTS.dst[index], EVENTS.t[index], [rows[i] for i in index])
    sampler = read_tgb_negatives(path, EVENTS, short="allow", collisions="keep", num_nodes=100)
    neg, mask = expected(rows)
    stored = sampler.negatives
    assert torch.equal(stored.neg, neg) and torch.equal(stored.neg_mask, mask)
    assert sampler.describe()["checksum"] == negatives_checksum(EVENTS.src, EVENTS.dst, EVENTS.t, neg, None, mask)
    assert sampler.describe()["num_padded_slots"] == sum(4 - n for n in LENGTHS)


def test_rows_of_another_integer_dtype_are_read_as_int64(tmp_path):
    path = tmp_path / "neg.pkl"
    table = {(int(s), int(d), int(t)): np.array([40, 41, 42], dtype=np.int32)
             for s, d, t in zip(EVENTS.src, EVENTS.dst, EVENTS.t)}
    path.write_bytes(pickle.dumps(table, protocol=5))
    stored = read_tgb_negatives(path, EVENTS, collisions="keep", num_nodes=100).negatives
    assert stored.neg.dtype == torch.long and torch.equal(stored.neg, torch.tensor([[40, 41, 42]] * 15))
