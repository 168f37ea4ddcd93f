"""The docstring examples of tgeval.static run (STYLE §3)."""

import doctest

import pytest
import torch

import tgeval.static.degree_bias
import tgeval.static.heuristics
import tgeval.static.negatives
import tgeval.static.ppr
import tgeval.static.recommend
import tgeval.static.shift


@pytest.mark.parametrize("module", [tgeval.static.degree_bias, tgeval.static.heuristics, tgeval.static.negatives,
                                    tgeval.static.ppr, tgeval.static.recommend, tgeval.static.shift])
def test_docstring_examples(module):
    result = doctest.testmod(module, extraglobs={"torch": torch})
    assert result.attempted > 0 and result.failed == 0
