r"""PopTrack (Daniluk and Dąbrowski, TGB's strongest parameter-free baselines): the destination's popularity,
counted in batches of 200 events and decayed by 0.36 per batch, as TGM's ``PopTrackPredictor`` on tgbl-wiki.

It is :class:`~tgeval.models.heuristics.Popularity` with an event clock
(:class:`~tgeval.models.clock.EventClock`, 200 events per tick, the training events one tick) and the half-life
:math:`h = 1 / \log_2(1 / 0.36)` ticks, so that each tick multiplies a past event's weight by
:math:`2^{-1/h} = 0.36`. TGM scores in float32; these scores are float64 log-counts (same order where float32
does not underflow).
"""

from __future__ import annotations

import math

from tgeval.models.clock import Clock, EventClock
from tgeval.models.heuristics import Popularity

__all__ = ["PopTrack", "POPTRACK_DECAY", "POPTRACK_TICK"]

#: TGM's decay per batch on tgbl-wiki, and its batch (TGB's) in events
POPTRACK_DECAY = 0.36
POPTRACK_TICK = 200


class PopTrack(Popularity):
    """PopTrack with TGM's tgbl-wiki settings (module docstring); ``clock``: its event clock. The default ticks
    every 200 events from the stream's start; the training events count as one tick only with the evaluated
    segments' starts as origins, ``EventClock(200, (split.val.start, split.test.start))``, as the command line
    gives it."""

    def __init__(self, num_nodes: int, clock: Clock = EventClock(POPTRACK_TICK)) -> None:
        super().__init__(num_nodes, half_life=1 / math.log2(1 / POPTRACK_DECAY), clock=clock)

    def describe(self) -> dict:
        return {**super().describe(), "name": "poptrack", "decay": POPTRACK_DECAY}
