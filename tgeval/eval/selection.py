"""Hyper-parameter choices made on validation data, recorded with the result (SPEC §6, §11)."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from torch_geometric.data import TemporalData

from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment
from tgeval.eval.replay import evaluate
from tgeval.models.base import TemporalLinkModel

__all__ = ["segment_duration", "default_windows", "select_window"]


def segment_duration(segment: Segment) -> float:
    """``t_last - t_first`` of a segment: the "test-duration" EdgeBank window of the literature."""
    if segment.t_first is None or segment.t_last is None:
        raise ValueError(f"the {segment.name!r} segment is empty and has no duration.")
    return float(segment.t_last) - float(segment.t_first)


def default_windows(reference: Segment) -> list[Optional[float]]:
    """Candidate windows: ``2^k x`` the reference segment's duration for ``k = -8..2``, and unlimited."""
    span = max(segment_duration(reference), 1.0)
    return [span * 2.0**k for k in range(-8, 3)] + [None]


def select_window(make_model: Callable[[Optional[float]], TemporalLinkModel], data: TemporalData,
                  validation: Segment, catalog: Catalog, *, windows: Optional[Sequence[Optional[float]]] = None,
                  ties: str = "average", batch_size: int = 200) -> tuple[Optional[float], dict]:
    """Choose a memory window by exact all-entity MRR (micro) on the validation segment.

    Each candidate ``w`` builds ``make_model(w)`` and replays ``validation`` online; the
    largest MRR wins (ties: the first candidate). Online replay of the validation segment
    only uses events before the test segment, so the choice does not leak test data.

    Returns:
        ``(window, record)``: the chosen window (``None`` = unlimited) and a record for the
        manifest with every candidate's MRR and the selection rule.
    """
    windows = list(default_windows(validation) if windows is None else windows)
    scores = []
    for window in windows:
        result = evaluate(make_model(window), data, validation, catalog=catalog, ties=ties, batch_size=batch_size,
                          check_state=False)
        scores.append(result.metrics["all_entity"]["mrr"]["micro"])
    best = max(range(len(windows)), key=lambda i: scores[i])
    record = {"rule": "max all-entity MRR (micro, online) on the validation segment",
              "segment": validation.to_dict(), "catalog": catalog.describe(), "ties": ties,
              "candidates": [{"window": w, "mrr": s} for w, s in zip(windows, scores)], "chosen": windows[best]}
    return windows[best], record
