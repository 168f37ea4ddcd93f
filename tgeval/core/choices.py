"""The names tgeval offers as options, defined once and without torch.

The modules that implement them import them from here, and the command line builds its
parsers from here alone, so ``tgeval --help`` and usage errors answer without importing torch
or PyG (which take seconds).
"""

from __future__ import annotations

from typing import Literal, Optional, get_args

__all__ = ["DUPLICATE_RULES", "CATALOG_KINDS", "TiePolicy", "TIE_POLICIES", "ReplayMode", "REPLAY_MODES",
           "HistoryMode", "HISTORY_MODES", "UncoveredRule", "UNCOVERED_RULES", "VAL_METRICS", "ValState", "VAL_STATES",
           "DEFAULT_SWEEP", "StaticHeuristic", "STATIC_HEURISTICS", "GNN_MODELS", "Weighting", "WEIGHTINGS",
           "HeartHeuristic", "HEART_HEURISTICS", "ShiftHeuristic", "SHIFT_HEURISTICS", "AuditCheck", "AUDIT_CHECKS",
           "DEFAULT_BLOCK", "flag"]

#: what :func:`~tgeval.data.io.read_events` does with duplicate events (``ReadInfo.num_duplicates``)
DUPLICATE_RULES = ("keep", "drop")
#: the catalogs :func:`~tgeval.data.catalog.build_catalog` builds from a stream
CATALOG_KINDS = ("train", "time-available", "all", "range")

TiePolicy = Literal["average", "pessimistic", "optimistic"]
"""How negatives that score exactly like the positive are counted (docs/protocol.md §7)."""
TIE_POLICIES: tuple[str, ...] = get_args(TiePolicy)
"""The valid values of every ``ties`` argument."""

ReplayMode = Literal["online", "fixed"]
"""Whether the state follows the evaluated segment (online: each batch is observed after it was
scored) or stays as at its start (fixed)."""
REPLAY_MODES: tuple[str, ...] = get_args(ReplayMode)
HistoryMode = Literal["exact", "batch", "neighbors"]
"""What an event of a merged batch is scored from under online replay (``tgeval.eval.engine``)."""
HISTORY_MODES: tuple[str, ...] = get_args(HistoryMode)
UncoveredRule = Literal["rank", "exclude", "error"]
"""What all-entity ranking does with positives outside the catalog."""
UNCOVERED_RULES: tuple[str, ...] = get_args(UncoveredRule)

#: Validation metrics of :func:`~tgeval.training.fitting.fit` (all: higher is better) -> their place in
#: ``Result.metrics``.
VAL_METRICS: dict[str, tuple[str, str, str]] = {
    "ap": ("sampled", "ap", "global"),
    "auroc": ("sampled", "auroc", "global"),
    "mrr": ("sampled", "mrr", "micro"),
    "all_entity_mrr": ("all_entity", "mrr", "micro"),
}
ValState = Literal["rebuilt", "training"]
"""The state :func:`~tgeval.training.fitting.fit` validates from: rebuilt with the epoch's final
weights, or the one its training left."""
VAL_STATES: tuple[str, ...] = get_args(ValState)

DEFAULT_SWEEP: tuple[Optional[int], ...] = (1, 5, 20, 50, 100, None)
"""Default sample sizes of :func:`~tgeval.eval.expected.k_sweep`; ``None`` is the full catalog."""

# -- static link prediction (tgeval.static) --------------------------------------------------------
StaticHeuristic = Literal["cn", "jaccard", "aa", "ra", "pa"]
#: the pair heuristics of :mod:`tgeval.static.heuristics`
STATIC_HEURISTICS: tuple[StaticHeuristic, ...] = get_args(StaticHeuristic)
#: method names of the static GNN baselines (encoder names)
GNN_MODELS = ("gcn", "sage")
Weighting = Literal["uniform", "degree"]
#: endpoint weightings of :class:`tgeval.static.negatives.PairSampler` (uniform, degree-corrected)
WEIGHTINGS: tuple[Weighting, ...] = get_args(Weighting)
HeartHeuristic = Literal["cn", "ra", "ppr"]
#: heuristics that choose HeaRT hard negatives
HEART_HEURISTICS: tuple[HeartHeuristic, ...] = get_args(HeartHeuristic)
ShiftHeuristic = Literal["cn", "sp", "pa"]
#: link scores of structural-shift splits
SHIFT_HEURISTICS: tuple[ShiftHeuristic, ...] = get_args(ShiftHeuristic)

#: events per time block of the paired bootstrap intervals (``tgeval compare --block``)
DEFAULT_BLOCK = 128

# -- the leak audit (tgeval.diagnostics.leak_audit) ----------------------------------------------
AuditCheck = Literal["no_future", "candidate_independence", "order_invariance", "state", "batch_size"]
#: the checks of :func:`tgeval.diagnostics.leak_audit.audit`, in the order they run and print
AUDIT_CHECKS: tuple[AuditCheck, ...] = get_args(AuditCheck)


def flag(key: str) -> str:
    """The command-line flag of an option name: ``memory_dim`` -> ``--memory-dim``."""
    return "--" + key.replace("_", "-")
