"""Evaluation: replay engine, all-entity ranking, metrics, results (SPEC §2, §7, §11)."""

from tgeval.eval.ranking import RankCounts, all_entity_counts
from tgeval.eval.replay import PROTOCOLS, evaluate, warm_up
from tgeval.eval.result import STRATA, Result, summarize
from tgeval.eval.selection import default_windows, segment_duration, select_window

__all__ = ["RankCounts", "all_entity_counts", "PROTOCOLS", "evaluate", "warm_up", "STRATA", "Result", "summarize",
           "default_windows", "segment_duration", "select_window"]
