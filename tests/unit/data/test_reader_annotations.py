"""Every registered reader's annotations resolve: the command line types ``--option`` values from them
(``has_header=false`` is ``False``, not the truthy text), and an unresolvable one would pass them as text."""

import typing

import pytest

from tgeval.data import formats


@pytest.mark.parametrize("name", formats.names())
def test_reader_annotations_resolve(name):
    hints = typing.get_type_hints(formats.entry(name).reader())
    assert "path" in hints
