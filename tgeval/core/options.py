"""Options given as text (``NAME:key=value`` sampler specs, ``--option key=value`` reader
options), parsed and checked against the annotations of the function they configure."""

from __future__ import annotations

import collections.abc
import inspect
import typing
from typing import Any, Callable, Union

__all__ = ["parse_value", "typed_options"]

_KIND_NAMES = {bool: "true / false", int: "an integer", float: "a number", str: "text"}


def parse_value(text: str) -> Any:
    """``true``/``yes`` and ``false``/``no`` are booleans, ``none`` is ``None``, numbers are
    ``int`` or ``float``; anything else is the text without surrounding blanks."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low == "none":
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


def _typed(value: Any, raw: Any, allowed: tuple) -> Any:
    """``value`` as one of the simple types in ``allowed``, or raise ``TypeError``."""
    kinds = tuple(kind for kind in allowed if kind in _KIND_NAMES)
    if not kinds or (value is None and type(None) in allowed):
        return value
    if isinstance(value, bool):
        if bool in kinds:
            return value
    elif isinstance(value, int) and (int in kinds or float in kinds):
        return value if int in kinds else float(value)
    elif isinstance(value, float) and float in kinds:
        return value
    elif isinstance(value, str) and str in kinds:
        return raw if isinstance(raw, str) else value  # text keeps its blanks (a space delimiter)
    if str in kinds and bool not in kinds:
        return raw if isinstance(raw, str) else str(value)  # a numeric-looking name or path
    raise TypeError


def typed_options(function: Callable[..., Any], options: dict, what: str, context: str = "") -> dict:
    """``options`` checked against ``function``'s annotations (``bool``, ``int``, ``float``,
    ``str``, optional or not, and sequences of them, given as comma-separated text).

    Values may be parsed already (sampler specs) or raw text (reader options, parsed here with
    :func:`parse_value`). A value of another type is a ``ValueError`` naming the option, what it
    takes and what was given, before ``function`` runs: ``replace=maybe`` is not ``True``, and
    ``has_header=false`` is not the truthy text ``"false"``. Integers are accepted where a float
    is expected; unannotated options pass as parsed.
    """
    try:
        hints = typing.get_type_hints(function.__init__ if inspect.isclass(function) else function)
    except Exception:  # unresolvable annotations: the function checks its own arguments
        return options
    out = {}
    for key, raw in options.items():
        hint = hints.get(key)
        allowed = typing.get_args(hint) if typing.get_origin(hint) is Union else (hint,)
        sequence = next((typing.get_args(kind) for kind in allowed
                         if typing.get_origin(kind) in (collections.abc.Sequence, list, tuple)), None)
        items = allowed
        try:
            if sequence is not None and isinstance(raw, str):
                items = typing.get_args(sequence[0]) if typing.get_origin(sequence[0]) is Union else sequence
                out[key] = [_typed(parse_value(part), part.strip(), items) for part in raw.split(",")]
            else:
                out[key] = _typed(parse_value(raw) if isinstance(raw, str) else raw, raw, allowed)
        except TypeError:
            expected = " or ".join(_KIND_NAMES[kind] for kind in items if kind in _KIND_NAMES)
            expected = f"a comma-separated list of {expected}" if items is not allowed else expected
            expected += " or none" if type(None) in allowed else ""
            where = f" in {context!r}" if context else ""
            raise ValueError(f"{what} {key}={raw!r}{where}: {key} takes {expected}.") from None
    return out
