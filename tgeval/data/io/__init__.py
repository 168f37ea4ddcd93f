"""Readers that turn event files into validated :class:`~torch_geometric.data.TemporalData`.

Every reader returns ``(data, info)``:

* ``data`` passes :func:`tgeval.data.validation.validate`: ``src``, ``dst`` int64 ``[E]``
  with ids ``>= 0``; ``t`` int64 ``[E]`` when every timestamp is a whole number, else
  float64 ``[E]``; non-decreasing ``t``; optional ``msg`` float32 ``[E, d]`` (event
  features) and ``y`` int64 ``[E]`` (event labels).
* ``info`` is a :class:`ReadInfo` that records what the reader did: lines read, header
  skipped, comment and blank lines, columns used and ignored, whether events were sorted,
  and the id mapping when ids were remapped.

Rules shared by all readers (docs/protocol.md §1, §12):

* A path that does not exist or is a folder raises :class:`~tgeval.errors.InputPathError` naming it,
  where a relative path was looked for, and the fix.
* UTF-8 with or without a byte-order mark; LF, CRLF or CR line ends; gzip-compressed
  files (detected by their magic bytes, whatever the file name) are decompressed.
* Blank lines are skipped and counted; comment lines only where the format has them.
* A malformed line raises :class:`~tgeval.errors.DataFormatError` naming the file, the
  1-based line number, what was found and what was expected. No row is ever dropped.
* Events must be time-sorted in the file, else :class:`~tgeval.errors.TemporalDataError`
  is raised unless ``sort=True`` (a stable sort: events that share a timestamp keep
  their file order, which carries no meaning, docs/protocol.md §2).
* ``remap=True`` renumbers ids to ``0..n-1`` by first appearance in time order (event
  ``i`` contributes ``src[i]`` then ``dst[i]``), and stores the original id of each new
  id in ``info.node_ids`` (int64 ``[n]``), or ``info.node_names`` for textual ids.
* Ids kept as written must be dense: models and catalogs hold ``largest id + 1`` node slots,
  so ids above :data:`SPARSE_ID_SLACK` (2^20) with fewer than one distinct id in
  :data:`SPARSE_ID_FACTOR` (16) slots raise :class:`~tgeval.errors.DataFormatError` at once,
  suggesting ``remap=True`` (ids near 2^40 would otherwise make a model allocate terabytes).
* ``bipartite=True`` keeps sources and destinations in disjoint id ranges: with
  ``remap`` (the default when bipartite) sources get ``[0, n_src)`` and destinations
  ``[n_src, n_src + n_dst)``, each side numbered by first appearance; without remap the
  file's ids must already satisfy ``max(src) < min(dst)``. In both cases
  ``max(src) < info.dst_offset <= min(dst)``: ``n_src`` with remap, ``max(src) + 1``
  without.
* ``directed`` is recorded in ``info`` for pair statistics (docs/protocol.md §3); the reader never
  reorders the endpoints of an event.

Parsing needs only numpy, on two paths that give the same arrays, ``info`` and errors
(:mod:`tgeval.data.io._fast`, :mod:`tgeval.data.io._exact`); ``info.parser`` says which parser ran:

* the fast path streams the file in blocks of whole lines (1 MiB) and parses each in C straight into the final
  dtypes (int64 ids, times and labels, float32 features); peak memory is about twice the final arrays. Delimited
  blocks go through pandas' C reader (:func:`pandas.read_csv`) where pandas is installed (an optional accelerator,
  ``pip install tgeval[fast]``; its float parser is correctly rounded, as Python's ``float``), the others (and all
  blocks without pandas) through numpy's (:func:`numpy.loadtxt`), which reads whitespace-separated files as fast.
  It takes well-formed numeric files (printable ASCII data, no quotes, whole-line comments, numbers that the C
  parsers and Python read alike) and gives up at the first doubt: an error that names a line, text ids,
  ``time_format``, whitespace-only lines in delimited files, fractional times longer than 15 characters (exact
  decimals are then needed to count merged times), ... In numpy's blocks (every block without pandas, and
  those pandas turns down), plain decimals (at most 15 digits, no exponent) are read as integers and divided
  by their power of ten, exactly as Python's ``float``; other fractions go through numpy's slower correctly
  rounded parser (``benchmarks/bench_read.py`` compares the readers with pandas' own);
* the exact path then reads the file as text, field by field, accepts what Python's ``int`` and
  ``float`` accept and names the file, line and fix of every error.

:func:`read_events` with ``cache_dir`` (or ``$TGEVAL_CACHE_DIR``) caches the validated arrays
(:mod:`tgeval.data.cache`).

TGB's negatives files (pickled dicts keyed by ``(src, dst, t)``) are read without running code from them
(:func:`load_tgb_pickle`, :func:`read_tgb_rows`; :mod:`tgeval.data.io.tgb_negatives`) and written by
:func:`write_tgb_negatives`; :func:`tgeval.samplers.read_tgb_negatives` serves them as a sampler.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    "ReadInfo": "tgeval.data.io.info",
    "read_events": "tgeval.data.io.dispatch",
    "read_dgb": "tgeval.data.io.dgb",
    "read_snap": "tgeval.data.io.snap",
    "read_sociopatterns": "tgeval.data.io.sociopatterns",
    "read_jodie": "tgeval.data.io.jodie",
    "read_tgb": "tgeval.data.io.tgb",
    "read_csv_events": "tgeval.data.io.delimited",
    **dict.fromkeys(("TGB_PICKLE_GLOBALS", "TGBRows", "load_tgb_pickle", "read_tgb_rows", "write_tgb_negatives"),
                    "tgeval.data.io.tgb_negatives"),
    **dict.fromkeys(("SPARSE_ID_FACTOR", "SPARSE_ID_SLACK"), "tgeval.data.io._events"),
    "PathLike": "tgeval.core.atomic",
    "Column": "tgeval.data.io._columns",
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
