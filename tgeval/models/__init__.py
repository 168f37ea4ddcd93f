"""Models with the common interface (SPEC §6, §8)."""

from tgeval.models.base import CandidateScorer, TemporalLinkModel
from tgeval.models.dyrep import DyRep
from tgeval.models.graphmixer import GraphMixer
from tgeval.models.heuristics import EdgeBank, NodeMemory, PairMembership, Popularity, PreferentialAttachment
from tgeval.models.neural import NeuralLinkModel, message_dim
from tgeval.models.tgn import TGN

__all__ = ["CandidateScorer", "TemporalLinkModel", "EdgeBank", "NodeMemory", "PairMembership", "Popularity",
           "PreferentialAttachment", "NeuralLinkModel", "message_dim", "TGN", "DyRep", "GraphMixer"]
