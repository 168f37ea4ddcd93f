"""The readers' fast path (pandas' or numpy's C parser over blocks) against their exact path (field by field):
same arrays, same ReadInfo, same errors, on generated files of every format, with pandas installed and without."""

from __future__ import annotations

import gzip
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch
from torch_geometric.data import TemporalData
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgeval.data.io import _columns, _duplicates, _exact, _fast, _text
from tgeval.data.io import ReadInfo, read_events
from tgeval.errors import TGEvalError

#: the format, its header, the comment prefix it skips, the separators it accepts and read_events' options
LAYOUTS: dict[str, tuple[str | None, str | None, tuple[str, ...], dict[str, Any]]] = {
    "snap": (None, "#", (" ", "\t"), {}),
    "sociopatterns": (None, None, ("\t",), {}),
    "dgb": (",u,i,ts,label,idx", None, (",",), {}),
    "jodie": ("user_id,item_id,timestamp,state_label,comma_separated_list_of_features", None, (",",), {}),
    "tgb": ("ts,src,dst,w", None, (",",), {}),
    "csv": ("a,b,c,f,g", "#", (",",), {"src_col": "a", "dst_col": "b", "t_col": "c", "feature_cols": ["g", "f"],
                                       "comment": "#"}),
}


@contextmanager
def counting_exact_calls() -> Iterator[list[int]]:
    """Counts the reads that ran the exact path (a spy around the real function)."""
    calls: list[int] = []
    exact = _exact.exact_columns

    def spy(*args: Any) -> Any:
        calls.append(1)
        return exact(*args)

    _exact.exact_columns = spy
    try:
        yield calls
    finally:
        _exact.exact_columns = exact


@contextmanager
def exact_path_only() -> Iterator[None]:
    """The fast path doubts every file, so the readers use their exact path."""
    fast = _fast.fast_columns

    def doubt(*args: Any) -> Any:
        raise _columns._Doubt

    _fast.fast_columns = doubt
    try:
        yield
    finally:
        _fast.fast_columns = fast


@contextmanager
def pandas_available(available: bool) -> Iterator[None]:
    """pandas importable (as installed) or not (``import pandas`` raises ImportError, as where it is absent)."""
    if available:
        yield
        return
    saved = sys.modules.get("pandas")
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.modules.pop("pandas")
        if saved is not None:
            sys.modules["pandas"] = saved


def outcome(path: Path, fmt: str, options: dict[str, Any]) -> tuple[Any, ...]:
    """What reading gives: the arrays and every ReadInfo field, or the error's type and message."""
    try:
        data, info = read_events(path, fmt, **options)
    except (TGEvalError, ValueError) as exc:
        return ("error", type(exc), str(exc))
    arrays = {key: (value.dtype, value.tolist()) for key, value in data.to_dict().items()}
    described = {f.name: getattr(info, f.name) for f in fields(ReadInfo) if f.name != "parser"}  # how, not what
    if info.node_ids is not None:
        described["node_ids"] = info.node_ids.tolist()
    return ("ok", arrays, described)


times = st.one_of(
    st.integers(0, 10**6).map(str),
    st.integers(0, 10**6).map(lambda v: f"{v}.0"),
    st.floats(0, 1e6, allow_nan=False).map(repr),
    st.sampled_from(["1e1", "12.5", "36.00000000000000001", "9007199254740993", "nan", "x", "1_0"]),
)
ids = st.one_of(st.integers(0, 30).map(str), st.integers(-3, 2**62).map(str),
                st.sampled_from(["a", "1.0", "2.5", "99999999999999999999"]))
clean_features = st.one_of(st.integers(-9, 9).map(str), st.floats(-1e6, 1e6, allow_nan=False).map(repr))
features = st.one_of(st.floats(-1e6, 1e6, allow_nan=False, width=32).map(repr), st.integers(-9, 9).map(str),
                     st.sampled_from(["1e39", "inf", "", '"1"', "0.1"]))


@st.composite
def event_files(draw: st.DrawFn) -> tuple[str, str, dict[str, Any], bool]:
    """``(format, text, options, clean)``: a file of a format; ``clean`` when only well-formed numbers were drawn
    (and no whitespace-only lines in delimited files, which numpy's parser refuses: the exact path reads those)."""
    fmt = draw(st.sampled_from(sorted(LAYOUTS)))
    header, comment, separators, options = LAYOUTS[fmt]
    clean = draw(st.booleans())
    n = draw(st.integers(1, 12))
    t_values = sorted(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)))
    lines = []
    for k in range(n):
        sep = draw(st.sampled_from(separators))
        src, dst = (str(draw(st.integers(0, 30))) for _ in range(2)) if clean else (draw(ids), draw(ids))
        t = str(t_values[k]) if clean and draw(st.booleans()) else (
            f"{t_values[k]}.5" if clean else draw(times))
        f, g = (draw(clean_features) for _ in range(2)) if clean else (draw(features), draw(features))
        label = draw(st.sampled_from(["0", "1"])) if clean else draw(st.sampled_from(["0", "1", "1.0", "x"]))
        fields_of = {
            "snap": [src, dst, t] + ([] if clean else draw(st.lists(st.just("7"), max_size=1))),
            "sociopatterns": [t, src, dst, "1A", "2B"],
            "dgb": [str(k), src, dst, t, label, str(k + 1)],
            "jodie": [src, dst, t, label, f, g],
            "tgb": [t, src, dst, f],
            "csv": [src, dst, t, f, g],
        }[fmt]
        lines.append(sep.join(fields_of))
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "  "] if fmt == "snap" or not clean else [""])))
        if comment and draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from([f"{comment} note", f"  {comment}", "% other"])))
    if not clean and draw(st.booleans()):  # a misplaced line: unsorted, or a line with a field fewer
        k = draw(st.integers(0, len(lines) - 1))
        lines.insert(0, lines.pop(k)) if draw(st.booleans()) else lines.__setitem__(k, lines[k].rsplit(",", 1)[0])
    if header is not None:
        lines.insert(0, header)
    if comment and draw(st.booleans()):
        lines.insert(0, f"{comment} a comment line before everything")
    text = "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        options = {**options, "remap": True}
    return fmt, text, options, clean and "remap" not in options and fmt != "tgb"


@pytest.mark.parametrize("with_pandas", [True, False], ids=["pandas", "numpy"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_files(), st.booleans(), st.booleans())
def test_fast_path_reads_as_the_exact_path(with_pandas: bool, file: tuple[str, str, dict[str, Any], bool], gz: bool,
                                           bom: bool) -> None:
    fmt, text, options, clean = file
    raw = ("\ufeff" + text if bom else text).encode("utf-8")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("events.gz" if gz else "events.txt")
        path.write_bytes(gzip.compress(raw) if gz else raw)
        with counting_exact_calls() as exact_calls, pandas_available(with_pandas):
            fast = outcome(path, fmt, options)
        with exact_path_only():
            exact = outcome(path, fmt, options)
    assert fast == exact
    if clean and fast[0] == "ok":  # well-formed numeric files never need the exact path
        assert not exact_calls


def test_an_error_of_the_parsed_events_does_not_read_the_file_again(tmp_path: Path) -> None:
    """Ids too sparse to keep are refused from the fast path's arrays, which equal the exact path's: the same
    error, without parsing the file a second time; an error that names a line (unsorted events) reads it."""
    sparse, unsorted = tmp_path / "sparse.txt", tmp_path / "unsorted.txt"
    sparse.write_text("".join(f"{k * 2**40} {k + 1} {k}\n" for k in range(5)))
    unsorted.write_text("0 1 5\n1 2 3\n")
    for path, expect_exact in ((sparse, False), (unsorted, True)):
        with counting_exact_calls() as exact_calls:
            fast = outcome(path, "snap", {})
        with exact_path_only():
            assert outcome(path, "snap", {}) == fast
        assert fast[0] == "error" and bool(exact_calls) == expect_exact


def test_fast_path_reads_long_files_in_blocks(tmp_path: Path) -> None:
    """Blocks split lines at their ends: a CRLF file of several blocks, comments and a gzip copy."""
    lines = ["# SNAP", *(f"{k % 97} {k % 89}\t{k // 3}" for k in range(300_000))]
    text = "\r\n".join(lines) + "\r\n"
    plain, packed = tmp_path / "big.txt", tmp_path / "big.txt.gz"
    plain.write_bytes(text.encode())
    packed.write_bytes(gzip.compress(text.encode()))
    assert len(text) > 3 * _text.BLOCK_BYTES
    with counting_exact_calls() as exact_calls:
        first = outcome(plain, "snap", {})
        second = outcome(packed, "snap", {})
    assert not exact_calls
    with exact_path_only():
        assert outcome(plain, "snap", {}) == first
    assert first[1] == second[1] and first[2]["num_lines"] == 300_001 and first[2]["comment_lines"] == 1
    assert first[1]["t"] == (torch.int64, [k // 3 for k in range(300_000)])


def test_plain_decimals_read_as_pythons_float(tmp_path: Path) -> None:
    """Without pandas, decimals read as integers over a power of ten: signs of zero, bare points, and a block of
    longer numbers (16 digits, an exponent) that numpy's own float parser reads instead."""
    text = ("user_id,item_id,timestamp,state_label,f,g\n1,2,1.5,0,-0.000,.5\n1,3,2.,0,+1.25,5.\n"
            "2,3,2.25,1,0.1,-7\n")
    short, long = tmp_path / "short.csv", tmp_path / "long.csv"
    short.write_text(text)
    long.write_text(text + "2,4,3.5,0,1234567890.123456,1e-3\n")
    used: list[bool] = []
    decimals = _fast.decimals

    def spy(*args: Any) -> Any:
        result = decimals(*args)
        used.append(result is not None)
        return result

    _fast.decimals = spy
    try:
        with pandas_available(False):
            fast = [outcome(path, "jodie", {}) for path in (short, long)]
    finally:
        _fast.decimals = decimals
    assert used == [True, False]
    with exact_path_only():
        assert [outcome(path, "jodie", {}) for path in (short, long)] == fast
    msg = fast[0][1]["msg"][1]
    assert msg == [[-0.0, 0.5], [1.25, 5.0], [0.10000000149011612, -7.0]]
    data, _ = read_events(short, "jodie")
    assert torch.signbit(data.msg[0, 0]) and data.t.tolist() == [1.5, 2.0, 2.25]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**31 - 1), st.booleans(), st.sampled_from([3, 2**40]))
def test_first_occurrences_match_a_dictionary_of_events(n: int, seed: int, fractional: bool, nodes: int) -> None:
    """Duplicate events against a plain reference: the first of every (src, dst, t bits, msg bits, y) is kept.
    2^40 node ids overflow the packed key and take the row-wise grouping."""
    generator = torch.Generator().manual_seed(seed)
    t = torch.sort(torch.randint(0, 4, (n,), generator=generator)).values
    data = TemporalData(src=torch.randint(0, 3, (n,), generator=generator) * (nodes // 3),
                        dst=torch.randint(0, 3, (n,), generator=generator),
                        t=t.double() * torch.where(t == 0, -1.0, 0.5) if fractional else t,
                        msg=torch.randint(0, 2, (n, 2), generator=generator).float(),
                        y=torch.randint(0, 2, (n,), generator=generator))
    seen: set[tuple] = set()
    expected = []
    for k in range(n):
        event = (int(data.src[k]), int(data.dst[k]), data.t[k].numpy().tobytes(), data.msg[k].numpy().tobytes(),
                 int(data.y[k]))
        expected.append(event not in seen)
        seen.add(event)
    assert _duplicates.first_occurrences(data).tolist() == expected


#: features (columns f, g) of a three-event CSV file, and whether pandas' C reader takes it on the fast path
FEATURE_CASES: dict[str, tuple[list[tuple[str, str]], bool]] = {
    "exponents": ([("1e3", "2.5E-7"), ("-1e+2", "1E0"), ("6.02214076e23", "1e-5")], True),
    "17+ digits": ([("0.1000000000000000055511151231257827", "9007199254740993"),
                    ("1.0000000596046447753906250001", "1.0000000596046448"),  # f64 then f32: a float32 tie
                    ("3.14159265358979323846264338327950288", "-2.7182818284590452353602874713527")], True),
    "denormals": ([("4.9e-324", "2.4703282292062328e-324"), ("1e-40", "-1.4e-45"), ("2.2250738585072011e-308", "0.5")],
                  True),
    "signed zeros": ([("-0", "0.5"), ("-0.0", "+0"), ("0", "-0.000")], True),
    "integer -0": ([("-0", "1"), ("0", "2"), ("3", "-0")], False),
    "bare points and signs": ([(".5", "5."), ("+1.25", "-.75"), ("007.5", "+3")], True),
    "inf": ([("1.5", "inf"), ("2", "3"), ("4", "5")], False),
    "nan": ([("1.5", "2"), ("nan", "3"), ("4", "5")], False),
    "beyond float32": ([("1.5", "2"), ("3", "1e39"), ("4", "5")], False),
    "booleans": ([("True", "1.5"), ("False", "2"), ("1", "3")], False),
    "underscores": ([("1_000", "1.5"), ("2", "3"), ("4", "5")], False),
    "empty field": ([("", "1.5"), ("2", "3"), ("4", "5")], False),
    "quoted": ([('"1.5"', "2"), ("3", "4"), ("5", "6")], False),
}


@pytest.mark.parametrize("with_pandas", [True, False], ids=["pandas", "numpy"])
@pytest.mark.parametrize("case", sorted(FEATURE_CASES))
@pytest.mark.parametrize("packing", ["plain", "gzip+crlf+comments"])
def test_numbers_read_as_the_exact_path(tmp_path: Path, case: str, with_pandas: bool, packing: str) -> None:
    """Feature values the float parsers could read differently: every one as Python's ``float`` then float32, and
    every refusal the exact path's error; pandas reads the files it takes (``info.parser``)."""
    features, pandas_takes = FEATURE_CASES[case]
    lines = ["a,b,c,f,g"] + [f"{k},{k + 1},{10 * k},{f},{g}" for k, (f, g) in enumerate(features)]
    if packing != "plain":
        lines.insert(2, "# a comment")
    text = ("\r\n" if packing != "plain" else "\n").join(lines) + "\n"
    path = tmp_path / "events.csv"
    path.write_bytes(gzip.compress(text.encode()) if packing != "plain" else text.encode())
    options = {**LAYOUTS["csv"][3], "feature_cols": ["f", "g"]}
    with counting_exact_calls() as exact_calls, pandas_available(with_pandas):
        fast = outcome(path, "csv", options)
        parser = read_events(path, "csv", **options)[1].parser if fast[0] == "ok" else None
    with exact_path_only():
        assert outcome(path, "csv", options) == fast
    if pandas_takes:
        assert not exact_calls and parser == ("pandas" if with_pandas else "numpy")
        exact = torch.tensor([[float(f), float(g)] for f, g in features], dtype=torch.float64).float()
        assert fast[1]["msg"] == (torch.float32, exact.tolist())
        assert torch.equal(torch.signbit(read_events(path, "csv", **options)[0].msg), torch.signbit(exact))
    elif fast[0] == "ok":
        assert parser in ("numpy", "python")


def test_parser_is_recorded_but_not_cached(tmp_path: Path) -> None:
    """``info.parser`` says what converted the fields (numpy's parser for whitespace-separated files, where pandas'
    is no faster); a cache hit parsed nothing."""
    path, snap = tmp_path / "events.csv", tmp_path / "events.txt"
    path.write_text("a,b,c,f,g\n0,1,2,0.5,1\n1,2,3,1.5,2\n")
    snap.write_text("0 1 2\n1 2 3\n")
    options = LAYOUTS["csv"][3]
    with pandas_available(True):
        assert read_events(path, "csv", **options)[1].parser == "pandas"
        assert read_events(snap, "snap")[1].parser == "numpy"
    with pandas_available(False):
        assert read_events(path, "csv", **options)[1].parser == "numpy"
    with exact_path_only():
        assert read_events(path, "csv", **options)[1].parser == "python"
    cache = tmp_path / "cache"
    assert read_events(path, "csv", cache_dir=cache, **options)[1].parser in ("pandas", "numpy")
    hit = read_events(path, "csv", cache_dir=cache, **options)[1]
    assert hit.cache == "hit" and hit.parser is None
