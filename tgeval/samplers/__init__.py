"""Negative samplers: one interface, swappable by name (SPEC §5)."""

from tgeval.samplers.base import NegativeSampler
from tgeval.samplers.uniform import UniformSampler

__all__ = ["NegativeSampler", "UniformSampler"]
