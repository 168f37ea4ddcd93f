"""Values a negatives file or a sampler spec cannot mean: TGB rows that are not integer ids (text, booleans,
fractions, NaN, numbers beyond int64, Python objects) and mixture weights that are not finite non-negative
numbers are refused naming the value and what is expected."""

import pickle
import re

import numpy as np
import pytest
import torch

from tgeval.data.catalog import build_catalog
from tgeval.data.split import chronological_split
from tgeval.errors import NegativesFileError
from tgeval.samplers import from_spec
from tgeval.samplers.fixed import read_tgb_negatives
from tgeval.samplers.mixture import MixtureSampler
from tgeval.samplers.uniform import UniformSampler
from tests.conftest import make_stream

DATA = make_stream(torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0]), torch.tensor([1, 2, 3]))
KEYS = list(zip(DATA.src.tolist(), DATA.dst.tolist(), DATA.t.tolist()))


def tgb_file(tmp_path, second_row):
    """A TGB file whose rows are ``[1, 2]`` except the second event's, ``second_row``."""
    table = {key: np.array([1, 2]) for key in KEYS}
    table[KEYS[1]] = second_row
    path = tmp_path / "ns.pkl"
    path.write_bytes(pickle.dumps(table))
    return path


@pytest.mark.parametrize("row, found", [
    (np.array(["1", "2"]), "'1' (dtype <U1)"),
    (np.array([b"1", b"2"]), "b'1' (dtype |S1)"),
    (np.array([True, False]), "True (dtype bool)"),
    (np.array([1.0, 2.5]), "2.5 (dtype float64)"),
    (np.array([np.nan, 1.0]), "nan (dtype float64)"),
    (np.array([1.0, 2.0**63]), "9.223372036854776e+18 (dtype float64)"),
    ([1, None], "None (dtype object)"),
    ([1, 2**70], f"{2**70} (dtype object)"),
])
def test_rows_that_are_not_integer_ids_are_refused_naming_the_value(tmp_path, row, found):
    with pytest.raises(NegativesFileError, match=rf"the negatives of key \(src, dst, t\) = \(1, 2, 2\) hold "
                                                 rf"{re.escape(found)}, not integer node ids\. Write "
                                                 r"each row as integer ids"):
        read_tgb_negatives(tgb_file(tmp_path, row), DATA, num_nodes=3)


@pytest.mark.parametrize("row", [np.array([2.0, 0.0]), [2, 0], np.array([2, 0], dtype=np.uint8)])
def test_whole_numbers_of_any_type_are_ids(tmp_path, row):
    sampler = read_tgb_negatives(tgb_file(tmp_path, row), DATA, num_nodes=3, collisions="keep")
    int64 = read_tgb_negatives(tgb_file(tmp_path, np.array([2, 0])), DATA, num_nodes=3, collisions="keep")
    assert sampler.describe()["checksum"] == int64.describe()["checksum"]  # the same negatives


@pytest.mark.parametrize("weight", ["abc", "none", "true"])
def test_a_mixture_weight_that_is_no_number_names_the_syntax(weight):
    split = chronological_split(DATA, (0.34, 0.33, 0.33))
    catalog = build_catalog(DATA, "all")
    with pytest.raises(ValueError, match=rf"mixture weight uniform=\w+ in 'mixture:uniform={weight}' is not a "
                                         r"number: a mixture spec is mixture:NAME=WEIGHT"):
        from_spec(f"mixture:uniform={weight}", data=DATA, split=split, catalog=catalog)


@pytest.mark.parametrize("weights", [[float("inf"), 1.0], [float("nan"), 1.0], [-1.0, 1.0], [0.0, 0.0]])
def test_mixture_proportions_are_finite_non_negative_and_not_all_zero(weights):
    uniform = UniformSampler(build_catalog(DATA, "all"))
    with pytest.raises(ValueError, match="proportions must be finite, non-negative and not all zero"):
        MixtureSampler([uniform, uniform], weights)
