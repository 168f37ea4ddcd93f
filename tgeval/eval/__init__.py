"""Evaluation: replay engine, all-entity ranking, metrics, results (SPEC §2, §7, §11)."""

from tgeval.eval.expected import expected_hits_at_k, expected_reciprocal_rank, k_sweep, nested_draw_ranks
from tgeval.eval.ranking import RankCounts, all_entity_counts
from tgeval.eval.engine import evaluate, warm_up
from tgeval.eval.result import STRATA, Result, summarize
from tgeval.eval.selection import default_windows, segment_duration, select_window
from tgeval.eval.stats import DifferenceInterval, block_bootstrap_difference, kendall_tau, seed_paired_t_interval

__all__ = ["RankCounts", "all_entity_counts", "evaluate", "warm_up", "STRATA", "Result", "summarize",
           "default_windows", "segment_duration", "select_window", "expected_reciprocal_rank", "expected_hits_at_k",
           "k_sweep", "nested_draw_ranks", "kendall_tau", "seed_paired_t_interval", "block_bootstrap_difference",
           "DifferenceInterval"]
