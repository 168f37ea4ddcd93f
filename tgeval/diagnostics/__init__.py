"""Diagnostics that explain a number: lifetimes and surprise, novelty, Birth–Death plots (SPEC §3, §4)."""

from tgeval.diagnostics.lifetimes import (SURPRISE_RATIOS, ClassCounts, class_counts, lifetime_summary,
                                          surprise_index, surprise_table)
from tgeval.diagnostics.novelty import NoveltySeries, novelty_series, novelty_summary, segment_strata_shares

__all__ = ["SURPRISE_RATIOS", "ClassCounts", "class_counts", "lifetime_summary", "surprise_index", "surprise_table",
           "NoveltySeries", "novelty_series", "novelty_summary", "segment_strata_shares"]
