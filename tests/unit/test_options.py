"""typed_options: text options checked against the annotations of the function they configure."""

from typing import Optional, Sequence, Union

import pytest

from tgeval.core.options import parse_value, typed_options


def configure(*, flag: bool = False, count: int = 1, rate: float = 0.5, name: str = "x",
              column: Union[str, int] = 0, columns: Sequence[Union[str, int]] = (), limit: Optional[float] = None,
              sizes: Sequence[int] = (), anything=None):
    return locals()


def test_text_values_become_their_annotated_types():
    got = typed_options(configure, {"flag": "no", "count": "3", "rate": "2", "name": " a b ", "column": "2",
                                    "columns": "f0, 3", "limit": "none", "anything": "7"}, "option")
    assert got == {"flag": False, "count": 3, "rate": 2.0, "name": " a b ", "column": 2, "columns": ["f0", 3],
                   "limit": None, "anything": 7}
    assert typed_options(configure, {"name": "12", "column": "Source"}, "option") == {"name": "12", "column": "Source"}
    assert typed_options(configure, {"flag": True, "rate": 1}, "option") == {"flag": True, "rate": 1.0}  # parsed


@pytest.mark.parametrize("key, value, message", [
    ("flag", "maybe", "flag takes true / false"), ("flag", "1", "flag takes true / false"),
    ("count", "2.5", "count takes an integer"), ("count", "true", "count takes an integer"),
    ("rate", "fast", "rate takes a number"), ("limit", "abc", "limit takes a number or none"),
    ("sizes", "1,x", "sizes takes a comma-separated list of an integer"),
])
def test_a_value_of_another_type_is_named(key, value, message):
    with pytest.raises(ValueError, match=f"option {key}='{value}' in 'spec': {message}"):
        typed_options(configure, {key: value}, "option", "spec")


def test_parse_value():
    assert [parse_value(v) for v in ("Yes", "FALSE", "None", "-3", "1e3", " text ")] == [True, False, None, -3, 1000.0,
                                                                                         "text"]
