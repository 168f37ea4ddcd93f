"""Diagnostics that explain a number: the leak audit of a model, lifetimes and surprise, novelty, the
pair-membership factorial and beta*, the membership intervention, calibration under prior shift, time
profiles and the comparison of two results. Plots live in :mod:`tgeval.diagnostics.plots` (matplotlib is optional).

The names below are imported on first use (PEP 562), so ``import tgeval.diagnostics`` loads no torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("AuditReport", "CheckResult", "audit"), "tgeval.diagnostics.leak_audit"),
    **dict.fromkeys(("PRIOR_SHIFT_WARNING", "PriorShiftCorrection", "prior_shift_correction"),
                    "tgeval.diagnostics.calibration"),
    **dict.fromkeys(("compare", "load_events"), "tgeval.diagnostics.comparison"),
    **dict.fromkeys(("InterventionResult", "membership_intervention", "project_out"),
                    "tgeval.diagnostics.intervention"),
    **dict.fromkeys(("SURPRISE_RATIOS", "ClassCounts", "class_counts", "lifetime_summary", "surprise_index",
                     "surprise_table"), "tgeval.diagnostics.lifetimes"),
    **dict.fromkeys(("BetaStar", "MembershipFactorial", "beta_star", "fit_membership_beta", "membership_factorial"),
                    "tgeval.diagnostics.membership"),
    **dict.fromkeys(("NoveltySeries", "novelty_series", "novelty_summary", "segment_strata_shares"),
                    "tgeval.diagnostics.novelty"),
    **dict.fromkeys(("TimeProfile", "time_profile"), "tgeval.diagnostics.time_bins"),
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
