"""Models with the common interface (SPEC §6, §8)."""

from tgeval.models.base import CandidateScorer, TemporalLinkModel
from tgeval.models.heuristics import EdgeBank, NodeMemory, PairMembership, Popularity, PreferentialAttachment

__all__ = ["CandidateScorer", "TemporalLinkModel", "EdgeBank", "NodeMemory", "PairMembership", "Popularity",
           "PreferentialAttachment"]
