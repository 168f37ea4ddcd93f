""":func:`read_events`: an event file read by the reader its format registers (:mod:`tgeval.data.formats`),
its duplicate events kept or dropped, its arrays cached (:mod:`tgeval.data.cache`)."""

from __future__ import annotations

import os
import warnings
from dataclasses import fields, replace
from typing import Any, Optional

import numpy as np
import torch
from torch_geometric.data import TemporalData

from tgeval.core.atomic import file_sha256, sha256_of
from tgeval.core.choices import DUPLICATE_RULES
from tgeval.data import cache, formats
from tgeval.data.io._duplicates import first_occurrences
from tgeval.data.io._text import PathLike, check_event_file, pinned
from tgeval.data.io.info import ReadInfo
from tgeval.data.validation import validate
from tgeval.errors import CacheWarning

#: ReadInfo fields kept as arrays in a cache entry; the others go to its JSON record but ``path`` (the file read now),
#: ``cache`` and ``parser`` (no parser runs on a hit)
_INFO_ARRAYS = ("node_ids", "node_names")


def _to_cache(data: TemporalData, info: ReadInfo) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and the JSON record of a cache entry."""
    arrays = {key: value.numpy() for key, value in data.to_dict().items()}
    if info.node_ids is not None:
        arrays["node_ids"] = info.node_ids.numpy()
    if info.node_names is not None:
        arrays["node_names"] = np.array(info.node_names, dtype=str)
    left_out = (*_INFO_ARRAYS, "path", "cache", "parser")
    record = {f.name: getattr(info, f.name) for f in fields(ReadInfo) if f.name not in left_out}
    return arrays, record


def _from_cache(path: PathLike, arrays: dict[str, np.ndarray],
                record: dict[str, Any]) -> tuple[TemporalData, ReadInfo]:
    """``(data, info)`` of a cache entry, checked by :func:`validate` and against its record (``ValueError``,
    ``TypeError`` or ``KeyError`` when they disagree: the cache then rebuilds the entry)."""
    node_ids, node_names = arrays.pop("node_ids", None), arrays.pop("node_names", None)
    data = validate(TemporalData(**{key: torch.from_numpy(value) for key, value in arrays.items()}))
    if data.num_events != record["num_events"]:
        raise ValueError(f"{data.num_events} events, but the record says {record['num_events']}")
    tuples = {key: tuple(record[key]) for key in ("header", "msg_columns", "ignored_columns")
              if record[key] is not None}
    info = ReadInfo(**{**record, **tuples}, path=os.fspath(path), cache="hit",
                    node_ids=None if node_ids is None else torch.from_numpy(node_ids),
                    node_names=None if node_names is None else tuple(node_names.tolist()))
    return data, info


def read_events(
    path: PathLike,
    format: str,
    *,
    remap: Optional[bool] = None,
    bipartite: Optional[bool] = None,
    sort: bool = False,
    directed: bool = True,
    duplicates: str = "keep",
    cache_dir: Optional[PathLike] = None,
    **options: Any,
) -> tuple[TemporalData, ReadInfo]:
    """Read an event file in a registered format (:mod:`tgeval.data.formats`).

    Dispatches to the format's reader: :func:`read_dgb`, :func:`read_snap`,
    :func:`read_sociopatterns`, :func:`read_jodie`, :func:`read_tgb`, :func:`read_csv_events`
    or one registered by you; see those for each layout. ``options`` are that reader's own
    keywords (``time_format`` for ``"tgb"``; ``src_col``, ``dst_col``, ``t_col``, ... for
    ``"csv"``); an option the reader does not take raises :class:`TypeError`.

    Args:
        path: the file (plain or gzip).
        format: a registered format: ``"dgb"``, ``"snap"``, ``"sociopatterns"``, ``"jodie"``,
            ``"tgb"``, ``"csv"``, ...
        remap: renumber ids to ``0..n-1`` by first appearance in time order (default:
            only when ``bipartite``).
        bipartite: sources and destinations in disjoint id ranges (default: the reader's,
            ``True`` for ``"jodie"``, else ``False``).
        sort: stable-sort unsorted events instead of raising.
        directed: recorded in ``info.directed`` for pair statistics.
        duplicates: ``"keep"`` (default) or ``"drop"`` the events equal in every field read
            to an earlier one (the first is kept); counted in ``info.num_duplicates`` either way.
        cache_dir: folder caching the parsed arrays, keyed by the file's sha256 and the options
            (:mod:`tgeval.data.cache`); default ``$TGEVAL_CACHE_DIR`` when set, else no cache.
            ``info.cache`` says whether it was used. On a miss the file is read once, and its bytes, held in
            memory while they are parsed, are both hashed and parsed.

    Returns:
        tuple: ``(data, info)``: a validated ``TemporalData`` and a :class:`ReadInfo`.

    Raises:
        InputPathError: ``path`` does not exist or is a folder (the message says where a relative path was
            looked for).
        ValueError: an unknown ``format`` or ``duplicates`` rule.
        DataFormatError: a malformed line (file, line number, found, expected), or ids too
            sparse to keep without ``remap`` (:mod:`tgeval.data.io`).
        TemporalDataError: unsorted events with ``sort=False``.
    """
    registered = formats.entry(format)
    if duplicates not in DUPLICATE_RULES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_RULES}, got {duplicates!r}.")
    check_event_file(path)  # before the cache hashes it or the format's reader (yours too) opens it
    if bipartite is not None:  # else the reader's default
        options["bipartite"] = bipartite
    folder = cache.cache_folder(cache_dir)
    if folder is None:
        return _parse(registered, path, remap=remap, sort=sort, directed=directed, duplicates=duplicates, **options)
    target = registered.target if isinstance(registered.target, str) else repr(registered.target)
    chosen = {"format": format, "reader": target, "remap": remap, "sort": sort, "directed": directed,
              "duplicates": duplicates, **options}
    hit = cache.load_entry(folder, cache.entry_key(file_sha256(path), chosen),
                           lambda arrays, record: _from_cache(path, arrays, record))
    if hit is not None:
        return hit
    with open(path, "rb") as handle:  # one read: the bytes hashed are the bytes parsed
        raw = handle.read()
    digest = sha256_of(raw)
    with pinned(path, raw) as served:
        data, info = _parse(registered, path, remap=remap, sort=sort, directed=directed, duplicates=duplicates,
                            **options)
    if served or file_sha256(path) == digest:  # a reader of one's own read the file itself: unchanged since?
        cache.store_entry(folder, cache.entry_key(digest, chosen), *_to_cache(data, info))
    else:
        warnings.warn(f"{os.fspath(path)!r} changed while it was read: its arrays were not cached. Read it again "
                      f"once it is complete.", CacheWarning, stacklevel=2)
    return data, replace(info, cache="miss")


def _parse(registered: formats.FormatEntry, path: PathLike, *, remap: Optional[bool], sort: bool, directed: bool,
           duplicates: str, **options: Any) -> tuple[TemporalData, ReadInfo]:
    """``(data, info)`` of the file by the format's reader, its duplicate events kept or dropped."""
    data, info = registered.load()(path, remap=remap, sort=sort, directed=directed, **options)
    if duplicates == "drop" and info.num_duplicates:
        first = first_occurrences(data)
        data = TemporalData(**{key: value[first] for key, value in data.to_dict().items()})
    return data, replace(info, duplicates=duplicates, num_events=data.num_events)
