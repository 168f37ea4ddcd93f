r"""The clock that ages events for a decayed heuristic's half-life: time, or a count of events.

:class:`EventClock` ticks once every ``tick`` events of the stream, so that a half-life counts
batches of events (PopTrack's "decay once per batch of 200", the training set being one batch)
instead of time. An event's tick depends only on its position in the stream, never on how the
engine batches it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor

from tgeval.errors import ModelConfigError

__all__ = ["EventClock", "Clock", "event_clock", "describe_clock"]


@dataclass(frozen=True)
class EventClock:
    r"""A clock that ticks once every ``tick`` events, restarting its slices at each origin.

    With origins :math:`o_0 < o_1 < \dots` (stream positions, from 0), the event at position
    :math:`i` has tick 0 when :math:`i < o_0`, else, with :math:`o_m` the last origin at or before
    :math:`i`,

    .. math:: c(i) = c(o_m - 1) + \lfloor (i - o_m) / \tau \rfloor + 1

    (:math:`c(-1) = 0`): the events before the first origin are one tick (the training set counted
    as one batch), then each stretch between origins is cut into slices of :math:`\tau` events
    from its start, a shorter last slice included (TGB's batches of 200, per segment). A decayed
    heuristic scores a query of tick :math:`k` from the events of the ticks before :math:`k`, each
    weighted :math:`2^{-(k - c)/h}`: a query never sees the events of its own slice.

    Args:
        tick: events per tick, ``>= 1``.
        origins: stream positions where slicing starts, non-decreasing, ``>= 0``.

    Example:
        >>> EventClock(2, (3,)).ticks(torch.arange(8)).tolist()
        [0, 0, 0, 1, 1, 2, 2, 3]
    """

    tick: int
    origins: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        if isinstance(self.tick, bool) or not isinstance(self.tick, numbers.Integral) or self.tick < 1:
            raise ModelConfigError(f"an event clock's tick is a number of events >= 1, got {self.tick!r}.")
        origins = tuple(self.origins)
        if not origins or any(isinstance(o, bool) or not isinstance(o, numbers.Integral) or o < 0 for o in origins) \
                or list(origins) != sorted(origins):
            raise ModelConfigError(f"an event clock's origins are non-decreasing stream positions >= 0 (at least "
                                   f"one), got {self.origins!r}; e.g. (len(training events),).")
        object.__setattr__(self, "tick", int(self.tick))
        object.__setattr__(self, "origins", tuple(int(o) for o in origins))
        # the tick of the last event before each origin (int, host): c(o_m - 1)
        bases, base = [], 0
        for m, origin in enumerate(self.origins):
            if m:
                base += -(-(origin - self.origins[m - 1]) // self.tick)  # the slices between the two origins
            bases.append(base)
        object.__setattr__(self, "_bases", tuple(bases))

    def tick_of(self, position: int) -> int:
        """The tick of the event at stream ``position`` (host arithmetic)."""
        m = sum(o <= position for o in self.origins) - 1
        return 0 if m < 0 else self._bases[m] + (position - self.origins[m]) // self.tick + 1

    def start_of(self, tick: int) -> int:
        """The stream position of the first event of ``tick`` (``tick >= 1``; 0 for tick 0)."""
        if tick <= 0:
            return 0
        m = max(m for m, base in enumerate(self._bases) if base < tick)
        return self.origins[m] + (tick - self._bases[m] - 1) * self.tick

    def ticks(self, positions: Tensor) -> Tensor:
        """The ticks of the events at ``positions`` (int64, any shape), int64 on their device."""
        origins = torch.tensor(self.origins, dtype=torch.long, device=positions.device)
        bases = torch.tensor(self._bases, dtype=torch.long, device=positions.device)
        m = torch.searchsorted(origins, positions.contiguous(), right=True) - 1
        at = m.clamp(min=0)
        tick = bases[at] + torch.div(positions - origins[at], self.tick, rounding_mode="floor") + 1
        return torch.where(m < 0, torch.zeros_like(tick), tick)

    def describe(self) -> dict:
        return {"kind": "events", "tick": self.tick, "origins": list(self.origins)}


Clock = Union[str, EventClock]


def event_clock(clock: Clock) -> Union[EventClock, None]:
    """``None`` for ``"time"``, the clock itself for an :class:`EventClock`.

    Raises:
        ModelConfigError: any other value.
    """
    if isinstance(clock, EventClock):
        return clock
    if clock == "time":
        return None
    raise ModelConfigError(f"clock must be 'time' or an EventClock(tick, origins), got {clock!r}; e.g. "
                           f"EventClock(200, (num_training_events,)) for PopTrack's batches of 200.")


def describe_clock(clock: Union[EventClock, None]) -> Union[str, dict]:
    """How ``describe()`` records a clock: ``"time"``, or the event clock's fields."""
    return "time" if clock is None else clock.describe()
