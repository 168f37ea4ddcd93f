"""The evaluation protocol: every choice that changes a number, in one frozen value.

:func:`tgeval.evaluate` takes a :class:`Protocol` beside what it measures with (the sampler and
the catalog, objects that describe themselves in the manifest) and how it runs (memory
budget, the state guard, devices), which change no number. The manifest records the protocol
as it is, ``manifest["protocol"] = protocol.to_dict()``, and the command line builds one from
its options. This module imports no torch.

Example:
    >>> Protocol(replay="fixed", num_negatives=50).to_dict()["replay"]
    'fixed'
    >>> Protocol(ties="random")
    Traceback (most recent call last):
    ...
    tgeval.errors.ProtocolError: Protocol.ties must be one of ('average', 'pessimistic', 'optimistic'), got 'random'.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from numbers import Integral
from typing import Optional

from tgeval.core.choices import (HISTORY_MODES, REPLAY_MODES, TIE_POLICIES, UNCOVERED_RULES, HistoryMode, ReplayMode,
                            TiePolicy, UncoveredRule)
from tgeval.errors import ProtocolError

__all__ = ["Protocol", "DEFAULT_NEGATIVES", "DEFAULT_VAL_NEGATIVES", "metric_name"]

#: ``K`` of a sampler that has no width of its own (a fixed-negatives file's default ``K`` is its width)
DEFAULT_NEGATIVES = 20
#: ``K`` of the default validation protocol, shared by :func:`~tgeval.training.fitting.fit` and ``tgeval train``:
#: uniform negatives from the training catalog, one per positive (the protocol of validation AP in TGN's and
#: DyGLib's work)
DEFAULT_VAL_NEGATIVES = 1

#: how :func:`metric_name` writes each metric
_LABELS = {"ap": "AP", "auroc": "AUROC", "mrr": "MRR", "mean_rank": "mean rank"}


@dataclass(frozen=True)
class Protocol:
    """How a segment is measured (docs/protocol.md §4–§7).

    Attributes:
        replay: ``"online"`` (the model observes each batch after it was scored) or
            ``"fixed"`` (its state stays as at the segment start).
        history: online only: ``"exact"`` (every event scored from the events strictly before
            its timestamp, inside a merged batch too; models with ``exact_history``: the
            heuristics, and GraphMixer with ``time_gap="query"``), ``"batch"`` (from the state
            at the batch start: memory models, and numbers comparable with TGB and DyGLib) or
            ``"neighbors"`` (the batch-start memory, neighbour lists that also hold the batch's
            earlier events: TGN with ``time_gap="query"``, as DyGLib's TGN). ``None``: ``"exact"``
            where the model allows it, else ``"batch"`` (the manifest's ``history`` records the
            mode used).
        num_negatives: ``K`` sampled negatives per positive (with a sampler); a fixed-negatives
            sampler serves one ``K``, its file's width unless fewer were chosen, and refuses another.
        ties: how negatives scoring like the positive count: ``"average"``,
            ``"pessimistic"`` or ``"optimistic"``.
        hits: the ``k`` of Hits@k.
        uncovered: positives outside the catalog: ``"rank"`` them against the catalog
            anyway, ``"exclude"`` them from all-entity metrics, or raise (``"error"``);
            always counted.
        directed: pairs are ordered; undirected, an event ``(a, b, t)`` also makes ``a`` a
            positive of source ``b`` (strata, simultaneous positives).
        batch_size: target events per timestamp batch (groups are never split).
        seed: seed of the negative sampler's generator.
        warm: reset the model and replay the events before the segment through ``update``
            first; ``False`` measures from the model's current state.
        prefilter: ``None`` (exact all-entity ranking, the default) or ``L``: an **approximate**
            all-entity pass that scores, per step, only the ``L`` catalog items with the highest
            :meth:`~tgeval.models.base.TemporalLinkModel.candidate_prior` and counts the others
            as below every positive, so a rank can only come out too good (never worse than
            exact). For catalogs too large to score whole; measure its error against the
            exact pass before trusting it. The metrics say so (``all_entity.approximate``).
    """

    replay: ReplayMode = "online"
    history: Optional[HistoryMode] = None
    num_negatives: int = DEFAULT_NEGATIVES
    ties: TiePolicy = "average"
    hits: tuple[int, ...] = (1, 3, 10)
    uncovered: UncoveredRule = "rank"
    directed: bool = True
    batch_size: int = 200
    seed: int = 0
    warm: bool = True
    prefilter: Optional[int] = None

    def __post_init__(self) -> None:
        for name, kind in _FIELD_TYPES.items():
            value = getattr(self, name)
            if not (value is None and name == "prefilter") and not _is(value, kind):
                raise ProtocolError(f"Protocol.{name} must be {'None (exact ranking) or ' * (name == 'prefilter')}"
                                    f"{_WORDS[kind]}, got {value!r} "
                                    f"({type(value).__name__}){_as_int(value) if kind is int else ''}.")
            if kind is int and value is not None:
                object.__setattr__(self, name, int(value))  # a numpy integer as a Python int (JSON, hashing)
        if isinstance(self.hits, (str, bytes)) or not isinstance(self.hits, Iterable) \
                or not all(_is(k, int) for k in self.hits):
            raise ProtocolError(f"Protocol.hits must be a sequence of integers k (Hits@k), e.g. (1, 3, 10) or (10,), "
                                f"got {self.hits!r}.")
        for name, allowed in (("replay", REPLAY_MODES), ("ties", TIE_POLICIES), ("uncovered", UNCOVERED_RULES),
                              ("history", (*HISTORY_MODES, None))):
            if getattr(self, name) not in allowed:
                raise ProtocolError(f"Protocol.{name} must be one of {allowed}, got {getattr(self, name)!r}.")
        if self.replay == "fixed" and self.history is not None:
            raise ProtocolError(f"Protocol.history={self.history!r} applies to online replay; under replay='fixed' "
                                f"every event is scored from the state at the segment start. Leave history unset "
                                f"(None).")
        object.__setattr__(self, "hits", tuple(int(k) for k in self.hits))
        if any(k < 1 for k in self.hits):
            raise ProtocolError(f"Protocol.hits must hold k >= 1, got {self.hits}.")
        if self.prefilter is not None and self.prefilter < 1:
            raise ProtocolError(f"Protocol.prefilter must be None (exact ranking) or a number of items L >= 1, got "
                                f"{self.prefilter!r}.")
        if self.num_negatives < 0 or self.batch_size < 1:
            raise ProtocolError(f"Protocol.num_negatives must be >= 0 and batch_size >= 1, got {self.num_negatives} "
                                f"and {self.batch_size}.")

    def to_dict(self) -> dict:
        """The fields as JSON values (``hits`` a list): what the manifest records."""
        return {**asdict(self), "hits": list(self.hits)}


#: the fields of :class:`Protocol` whose values are numbers or switches, by type (``prefilter`` may be ``None``)
_FIELD_TYPES = {"num_negatives": int, "batch_size": int, "seed": int, "prefilter": int, "directed": bool,
                "warm": bool}
_WORDS = {int: "an integer", bool: "True or False"}


def _is(value: object, kind: type) -> bool:
    """``value`` is a ``kind``: an integer (Python's or numpy's, never a bool) or a bool."""
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(value, Integral) and not isinstance(value, bool)


def _as_int(value: object) -> str:
    """The fix of a number given for an integer: the integer itself, when it is one."""
    if isinstance(value, bool):
        return ": a count, not a switch"
    if isinstance(value, float) and value.is_integer():
        return f": pass {int(value)}"
    return ""


def metric_name(part: str, metric: str, *, num_negatives: int = 0, sampler: Optional[dict] = None,
                catalog: Optional[dict] = None) -> str:
    """A metric's name with the protocol it was measured under: the one way tgeval prints and saves it.

    Args:
        part: ``"sampled"`` (against ``K`` sampled negatives per positive) or ``"all_entity"``
            (against a catalog), as in ``Result.metrics``.
        metric: ``"ap"``, ``"auroc"``, ``"mrr"``, ``"mean_rank"`` or ``"hits@k"``.
        num_negatives: ``K`` (sampled metrics).
        sampler: the sampler's ``describe()`` (sampled metrics); a fixed-negatives sampler that
            serves fewer columns than it stores is named with both.
        catalog: the catalog's ``describe()`` (all-entity metrics).

    Example:
        >>> metric_name("sampled", "ap", num_negatives=1, sampler={"name": "uniform"})
        'AP (K=1, uniform)'
        >>> metric_name("all_entity", "mrr", catalog={"kind": "train", "size": 1459})
        'all-entity MRR (catalog train, 1,459 items)'
    """
    label = _LABELS.get(metric, metric.replace("hits@", "Hits@"))
    if part == "all_entity":
        if catalog is None:
            raise ProtocolError(f"the all-entity {label} is measured against a catalog: pass catalog (its describe()).")
        return f"all-entity {label} (catalog {catalog['kind']}, {catalog['size']:,} items)"
    if part != "sampled" or sampler is None:
        raise ProtocolError(f"metric_name takes part 'sampled' (with sampler, its describe()) or 'all_entity' (with "
                            f"catalog), got part={part!r} and sampler={sampler!r}.")
    stored = sampler.get("stored_num_negatives")
    width = f" of {stored} stored" if stored is not None and stored != num_negatives else ""
    return f"{label} (K={num_negatives}{width}, {sampler['name']})"
