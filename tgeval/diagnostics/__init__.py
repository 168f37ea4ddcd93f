"""Diagnostics that explain a number (SPEC §3–§7): lifetimes and surprise, novelty, the
pair-membership factorial and beta*, the membership intervention, calibration under prior shift, time profiles and model
comparison. Plots live in :mod:`tgeval.diagnostics.plots` (matplotlib is optional)."""

from tgeval.diagnostics.calibration import PRIOR_SHIFT_WARNING, PriorShiftCorrection, prior_shift_correction
from tgeval.diagnostics.comparison import compare, load_events
from tgeval.diagnostics.lifetimes import (SURPRISE_RATIOS, ClassCounts, class_counts, lifetime_summary,
                                          surprise_index, surprise_table)
from tgeval.diagnostics.intervention import InterventionResult, membership_intervention, project_out
from tgeval.diagnostics.membership import (BetaStar, MembershipFactorial, beta_star, fit_membership_beta,
                                           membership_factorial)
from tgeval.diagnostics.novelty import NoveltySeries, novelty_series, novelty_summary, segment_strata_shares
from tgeval.diagnostics.time_bins import TimeProfile, time_profile

__all__ = ["SURPRISE_RATIOS", "ClassCounts", "class_counts", "lifetime_summary", "surprise_index", "surprise_table",
           "NoveltySeries", "novelty_series", "novelty_summary", "segment_strata_shares", "BetaStar",
           "MembershipFactorial", "beta_star", "fit_membership_beta", "membership_factorial", "PRIOR_SHIFT_WARNING",
           "PriorShiftCorrection", "prior_shift_correction", "TimeProfile", "time_profile", "compare", "load_events",
           "InterventionResult", "membership_intervention", "project_out"]
