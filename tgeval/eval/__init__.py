"""Evaluation: the leak-free replay engine (``evaluate`` and its ``Tuning``, ``replay``, ``warm_up``), all-entity
ranking, the rank metrics and their expectations under random tie-breaking, results and their
summaries, the choice of a time window, and the statistics that compare runs.

The names below are imported on first use (PEP 562), so ``import tgeval.eval`` loads no torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("evaluate", "replay", "warm_up"), "tgeval.eval.engine"),
    **dict.fromkeys(("expected_hits_at_k", "expected_reciprocal_rank", "k_sweep", "nested_draw_ranks"),
                    "tgeval.eval.expected"),
    **dict.fromkeys(("auroc", "average_precision", "hits_at_k", "reciprocal_rank"),
                    "tgeval.eval.metrics"),
    **dict.fromkeys(("RankCounts", "all_entity_counts"), "tgeval.eval.ranking"),
    **dict.fromkeys(("STRATA", "Result", "summarize"), "tgeval.eval.result"),
    **dict.fromkeys(("default_windows", "segment_duration", "select_window"), "tgeval.eval.selection"),
    "Tuning": "tgeval.eval.tuning",
    **dict.fromkeys(("DifferenceInterval", "block_bootstrap_difference", "kendall_tau", "seed_paired_t_interval"),
                    "tgeval.eval.stats"),
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
