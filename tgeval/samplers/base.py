"""The negative-sampler interface (SPEC §5).

A sampler gets a timestamp batch of positive events and returns ``K`` negative
destinations per positive, on the batch's device, from a seeded ``torch.Generator``,
using only history it is allowed to know. History grows in :meth:`observe`, which the
replay engine calls only after the batch was scored.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import TemporalData

from tgeval.state import State

__all__ = ["NegativeSampler"]


class NegativeSampler:
    """Base class. Stateless samplers inherit the no-op state methods."""

    name = "sampler"
    #: ``True`` for evaluation protocols defined with knowledge of the whole stream (e.g. the
    #: DGB inductive sampler); their draws for a batch may depend on later events.
    uses_whole_stream = False

    def sample(self, batch: TemporalData, num_negatives: int,
               generator: Optional[torch.Generator] = None) -> Tensor:
        """Negative destinations: int64 ``[B, K]`` for a batch of ``B`` positives.

        A negative is never the true destination, the source, or a simultaneous
        positive (another destination of the same source at the same timestamp).
        """
        raise NotImplementedError

    def observe(self, batch: TemporalData) -> None:
        """Add a scored batch of positives to the sampler's history."""

    def reset_state(self) -> None:
        """Forget all history."""

    def snapshot(self) -> State:
        return {}

    def restore(self, state: State) -> None:
        """Return to a snapshot."""

    def describe(self) -> dict:
        """Name and options, recorded in result manifests."""
        return {"name": self.name}
