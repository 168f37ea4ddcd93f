"""Hyper-parameter choices made on validation data, recorded with the result (docs/protocol.md §6, §11)."""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence, Union

from torch_geometric.data import TemporalData

from tgeval.core.choices import TiePolicy
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.errors import ProtocolError, SplitError
from tgeval.eval.engine import evaluate
from tgeval.eval.tuning import Tuning
from tgeval.models.base import TemporalLinkModel
from tgeval.eval.protocol import Protocol
from tgeval.stream.state import restore_detached
from tgeval.stream.walk import Walk, eval_mode

__all__ = ["segment_duration", "default_windows", "select_window"]


def segment_duration(segment: Segment) -> Union[int, float]:
    """``t_last - t_first`` of a segment: the "test-duration" EdgeBank window of the literature; an
    exact Python int for integer times (at every magnitude: no float rounding of int64 times), a
    float for float times."""
    if segment.t_first is None or segment.t_last is None:
        raise SplitError(f"the {segment.name!r} segment is empty and has no duration.")
    return segment.t_last - segment.t_first


def default_windows(reference: Segment) -> list[Optional[float]]:
    """Candidate windows: ``2^k x`` the reference segment's duration for ``k = -8..2``, and unlimited
    (``None``). The duration is exact (:func:`segment_duration`), so the candidates depend on the
    segment's time differences only, never on where its times lie; a candidate at or beyond 2^63
    is unlimited (:func:`~tgeval.models.heuristics.edgebank_window`)."""
    span = segment_duration(reference)
    if not span > 0:
        raise SplitError(f"the {reference.name!r} segment spans no time; pass explicit windows.")
    return [span * 2.0**k for k in range(-8, 3)] + [None]


def select_window(make_model: Callable[[Optional[float]], TemporalLinkModel], data: TemporalData,
                  validation: Segment, catalog: Catalog, *, windows: Optional[Sequence[Optional[float]]] = None,
                  ties: TiePolicy = "average", batch_size: int = 200) -> tuple[Optional[float], dict]:
    """Choose a memory window by exact all-entity MRR (micro) on the validation segment.

    Each candidate ``w`` builds ``make_model(w)`` and replays ``validation`` online; the
    largest MRR wins (ties: the first candidate; NaN never wins). The state before the
    segment does not depend on ``w`` (windows only filter what is read), so the history is
    replayed once and every candidate starts from that snapshot. Online replay of the
    validation segment uses no test event, so the choice does not leak test data.

    Returns:
        ``(window, record)``: the chosen window (``None`` = unlimited) and a record for the
        manifest with every candidate's MRR and the selection rule.
    """
    windows = list(default_windows(validation) if windows is None else windows)
    if not windows:
        raise ProtocolError("select_window needs at least one candidate window.")
    warmed = make_model(windows[0])
    with eval_mode(warmed):  # as evaluate's warm-up
        Walk(data, validation, batch_size=batch_size).warm_up(warmed)
    start_state = warmed.snapshot()
    scores = []
    for window in windows:
        model = make_model(window)
        restore_detached(model, start_state)
        result = evaluate(model, data, validation, Protocol(ties=ties, batch_size=batch_size, warm=False),
                          catalog=catalog, tuning=Tuning(check_state=False))
        scores.append(result.metrics["all_entity"]["mrr"]["micro"])
    best = max(range(len(windows)), key=lambda i: -math.inf if math.isnan(scores[i]) else scores[i])
    record = {"rule": "max all-entity MRR (micro, online) on the validation segment",
              "segment": validation.to_dict(), "catalog": catalog.describe(), "ties": ties,
              "candidates": [{"window": w, "mrr": s} for w, s in zip(windows, scores)], "chosen": windows[best]}
    return windows[best], record
