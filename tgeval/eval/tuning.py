"""How :func:`~tgeval.eval.engine.evaluate` runs, apart from what it measures: the settings that change its speed,
its memory and what it keeps, never a number (those are the :class:`~tgeval.eval.protocol.Protocol`'s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from tgeval.errors import ProtocolError
from tgeval.eval.ranking import check_candidate_budget

__all__ = ["Tuning", "RECORDS"]

#: what ``Tuning.records`` may keep, most first
RECORDS = ("all", "events", "none")


@dataclass(frozen=True)
class Tuning:
    """How :func:`~tgeval.eval.engine.evaluate` runs: its memory, its speed and the records it keeps. No setting
    changes a metric; the manifest records ``candidate_budget`` and ``check_state`` (as ``state_guard``).

    Attributes:
        candidate_budget: most (event, candidate) scores held at once in all-entity ranking (an integer ``>= 1``;
            smaller only lowers the memory used).
        use_shortcut: let models count catalog ranks exactly without scoring every item
            (:meth:`~tgeval.models.base.TemporalLinkModel.catalog_counts`); ``False``: score every candidate.
        records: the per-event records the result keeps: ``"all"`` (every record, the negative ids and scores
            ``[E, K]`` included), ``"events"`` (the columns of the per-event CSV,
            :meth:`~tgeval.eval.result.Result.save_events`, ``[E]`` each) or ``"none"``. Under ``"events"`` and
            ``"none"`` the negative ids are never held: each window's go into the negatives checksum as they are
            drawn (the same value); the negative scores are kept for the metrics only.
        check_state: guard every scoring step with :func:`~tgeval.stream.state.no_state_change` (``True``); ``"deep"``
            also compares full snapshots (or checksums) for models whose state is registered buffers, plain
            tensors by checksum and arrays by their bytes; ``False``: no guard. The checks of ``update`` and
            ``reset_state`` (:func:`~tgeval.stream.state.checked_update`) run either way.

    Raises:
        ProtocolError: at construction: a ``candidate_budget`` that is not an integer ``>= 1``, a ``records`` not in
            :data:`RECORDS`, a ``use_shortcut`` that is not a bool, a ``check_state`` other than ``True``,
            ``False`` or ``"deep"``.
    """

    candidate_budget: int = 2**22
    use_shortcut: bool = True
    records: Literal["all", "events", "none"] = "all"
    check_state: Union[bool, Literal["deep"]] = True

    def __post_init__(self) -> None:
        check_candidate_budget(self.candidate_budget)
        if not isinstance(self.use_shortcut, bool):
            raise ProtocolError(f"Tuning.use_shortcut must be True or False, got {self.use_shortcut!r}.")
        if self.records not in RECORDS:
            raise ProtocolError(f"Tuning.records must be one of {RECORDS}, got {self.records!r}.")
        if not (isinstance(self.check_state, bool) or self.check_state == "deep"):
            raise ProtocolError(f"Tuning.check_state must be True, False or 'deep', got {self.check_state!r}.")
