"""The readers' fast path (numpy's C parser over blocks) against their exact path (field by field):
same arrays, same ReadInfo, same errors, on generated files of every format."""

from __future__ import annotations

import gzip
import tempfile
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator

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


def outcome(path: Path, fmt: str, options: dict[str, Any]) -> tuple[Any, ...]:
    """What reading gives: the arrays and every ReadInfo field, or the error's type and message."""
    try:
        data, info = read_events(path, fmt, **options)
    except (TGEvalError, ValueError) as exc:
        return ("error", type(exc), str(exc))
    arrays = {key: (value.dtype, value.tolist()) for key, value in data.to_dict().items()}
    described = {f.name: getattr(info, f.name) for f in fields(ReadInfo)}
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
        f, g = (draw(st.integers(-9, 9).map(str)) for _ in range(2)) if clean else (draw(features), draw(features))
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_files(), st.booleans(), st.booleans())
def test_fast_path_reads_as_the_exact_path(file: tuple[str, str, dict[str, Any], bool], gz: bool, bom: bool) -> None:
    fmt, text, options, clean = file
    raw = ("\ufeff" + text if bom else text).encode("utf-8")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("events.gz" if gz else "events.txt")
        path.write_bytes(gzip.compress(raw) if gz else raw)
        with counting_exact_calls() as exact_calls:
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
    """Decimals read as integers over a power of ten: signs of zero, bare points, and a block of longer
    numbers (16 digits, an exponent) that numpy's own float parser reads instead."""
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
