"""Values beyond what the stream's dtypes hold: ids beyond int64 (exact names when renumbered, else refused
with advice that applies) and features beyond float32 (refused naming the line, never a NaN-or-inf message
after a numpy warning)."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from tgeval.data.io import read_csv_events, read_snap
from tgeval.errors import DataFormatError

HUGE = 2**63 + 5  # one past int64, as a 64-bit unsigned hash may be


def write(folder: Path, text: str, name: str = "events.txt") -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("side", ["src", "dst"])
def test_ids_beyond_int64_are_renumbered_exactly_with_remap(tmp_path, side):
    big = [HUGE, HUGE + 1]  # 2^63 + 5 and 2^63 + 6: one float64, two nodes
    rows = [(big[0], 1, 10), (2, big[1], 11), (big[0], 2, 12)] if side == "src" else \
        [(1, big[0], 10), (big[1], 2, 11), (2, big[0], 12)]
    data, info = read_snap(write(tmp_path, "".join(f"{u} {v} {t}\n" for u, v, t in rows)), remap=True)
    names = [str(x) for row in rows for x in row[:2]]
    assert info.node_names == tuple(dict.fromkeys(names))  # first appearance, exact text
    assert [info.node_names[i] for i in data.src.tolist()] == [str(row[0]) for row in rows]
    assert [info.node_names[i] for i in data.dst.tolist()] == [str(row[1]) for row in rows]
    assert info.num_nodes == 4


def test_ids_beyond_int64_without_remap_suggest_remap(tmp_path):
    path = write(tmp_path, f"1 2 10\n{HUGE} 2 11\n")
    with pytest.raises(DataFormatError, match=rf"line 2: column 'src' must hold integer node ids, found '{HUGE}'. "
                                              r"Pass remap=True to number ids 0..n-1 \(textual ones, or beyond the "
                                              r"int64 range\)"):
        read_snap(path)


@pytest.mark.parametrize("value", ["2.5", "1e19"])
def test_numbers_that_are_no_ids_with_remap_do_not_suggest_remap(tmp_path, value):
    path = write(tmp_path, f"1 2 10\n1 {value} 11\n")
    with pytest.raises(DataFormatError, match=rf"line 2: column 'dst' must hold integer node ids, found '{value}'. "
                                              r"Node ids are integers or names, .*check the column mapping") as raised:
        read_snap(path, remap=True)
    assert "remap" not in str(raised.value)


def features(folder: Path, value: str) -> Path:
    return write(folder, "src,dst,t,f,g\n0,1,10,0.5,1\n1,2,11,0.5,%s\n2,0,12,0.5,2\n" % value, "events.csv")


@pytest.mark.parametrize("value", ["1e39", "-1e39", "3.4028236e38"])
def test_features_beyond_float32_are_refused_without_a_warning(tmp_path, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning is an error here
        with pytest.raises(DataFormatError, match=rf"line 3: column 'g' holds '{value}', beyond the float32 range "
                                                  r"of event features \(\|x\| <= 3\.403e\+38; 1 of the file's "
                                                  r"feature values exceed it\)\. Rescale that column"):
            read_csv_events(features(tmp_path, value), src_col="src", dst_col="dst", t_col="t",
                            feature_cols=["f", "g"])


def test_the_largest_float32_feature_is_kept(tmp_path):
    top = float(np.finfo(np.float32).max)
    data, _ = read_csv_events(features(tmp_path, repr(top)), src_col="src", dst_col="dst", t_col="t",
                              feature_cols=["f", "g"])
    assert data.msg[1, 1].item() == top
