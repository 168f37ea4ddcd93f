"""TEMPORARY: tgeval.static imports the counter-based RNG from here; it lives in :mod:`tgeval.rng`.
Delete this module once tgeval/static/* and tests/reference/static/test_static_heart.py import tgeval.rng."""

from tgeval.rng import as_int64, counter_uniform, splitmix64

__all__ = ["counter_uniform", "splitmix64", "as_int64"]
