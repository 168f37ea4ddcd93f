"""The robustness table (issue 13, part 11): one row per bad input or fault, run through the
command line as a user would. Every row ends in a typed error (its class printed, exit status 2,
a message that names the fix) or in a correct result, and leaves no partial output: no result
file, no events file, no checkpoint, no temporary file. Interrupted writes (SIGTERM, Ctrl-C)
are the rows of ``test_interrupted_writes.py``."""

from __future__ import annotations

import functools
import gzip
import json
import os
import pickle
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pytest

from tgeval import build_catalog, chronological_split
from tgeval.cli import main
from tgeval.data import read_events
from tgeval.data.synthetic import generate_events
from tgeval.samplers import UniformSampler, save_negatives, write_tgb_negatives
from tests.helpers import snap_text

EVENTS = generate_events(num_events=900, num_nodes=60, seed=11)
SNAP = snap_text(EVENTS)


def lines_with(replace: dict[int, str]) -> str:
    lines = SNAP.splitlines(keepends=True)
    for row, text in replace.items():
        lines[row] = text
    return "".join(lines)


WITH_DUPLICATE = lines_with({8: SNAP.splitlines(True)[7]})  # line 9 repeats line 8


def csv_with_feature(value: str) -> str:
    rows = ["src,dst,t,f"] + [f"{u},{v},{t},0.5" for u, v, t in
                              zip(EVENTS.src.tolist(), EVENTS.dst.tolist(), EVENTS.t.tolist())]
    rows[5] = rows[5].rsplit(",", 1)[0] + "," + value
    return "\n".join(rows) + "\n"


CSV_OPTIONS = ["--option", "src_col=src", "--option", "dst_col=dst", "--option", "t_col=t",
               "--option", "feature_cols=f"]


@dataclass(frozen=True)
class Row:
    """One case: files to write (name -> text / bytes, or a function of the folder that writes
    them), the command (``{dir}`` is the row's folder), and what must come out: an error class
    and a pattern of its message (the fix), or a check of the result JSON."""

    name: str
    command: list[str]
    files: dict = field(default_factory=dict)
    error: Optional[str] = None
    fix: str = ""
    check: Optional[Callable[[dict], bool]] = None
    prepare: Optional[Callable[[Path], None]] = None


def evaluate(data: str = "events.txt", *options: str, fmt: str = "snap", save: bool = True,
             result: str = "r.json") -> list[str]:
    out = ["evaluate", "{dir}/" + data, "--format", fmt, "--model", "edgebank", "--negatives", "3",
           "--out", "{dir}/" + result]
    return out + (["--save-events", "{dir}/e.csv"] if save else []) + list(options)


def train(*options: str) -> list[str]:
    return ["train", "{dir}/events.txt", "--format", "snap", "--model", "tgn", "--epochs", "1",
            "--checkpoint-dir", "{dir}/ckpt", "--out", "{dir}/r.json", *options]


# -- files built from the stream: negatives, checkpoints -------------------------------------------
def stream_and_split(folder: Path):
    data, _ = read_events(folder / "events.txt", "snap")
    return data, chronological_split(data)


def write_negatives(folder: Path) -> None:
    data, split = stream_and_split(folder)
    save_negatives(folder / "neg.pt", UniformSampler(build_catalog(data, "train", train_end=split.train.end)),
                   data, split.test, 3, seed=1)


def damage(name: str, how: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / name
        path.write_bytes(how(path.read_bytes()))
    return apply


def flip_middle_byte(blob: bytes) -> bytes:
    middle = len(blob) // 2
    return blob[:middle] + bytes([blob[middle] ^ 0xFF]) + blob[middle + 1:]


def then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        for step in steps:
            step(folder)
    return apply


def negatives_for_other_data(folder: Path) -> None:
    other = folder / "other.txt"
    other.write_text(lines_with({10: "1 2 %d\n" % EVENTS.t[10]}))
    data, _ = read_events(other, "snap")
    split = chronological_split(data)
    save_negatives(folder / "neg.pt", UniformSampler(build_catalog(data, "train", train_end=split.train.end)),
                   data, split.test, 3, seed=1)


@functools.lru_cache(maxsize=1)
def _trained_checkpoint() -> bytes:
    """``last.pt`` of one TGN epoch on the table's stream (trained once per session)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "events.txt").write_text(SNAP)
        assert main(["train", f"{folder}/events.txt", "--format", "snap", "--model", "tgn", "--epochs", "1",
                     "--threads", "1", "--checkpoint-dir", f"{folder}/trained"]) == 0
        return (Path(folder) / "trained" / "last.pt").read_bytes()


def checkpoint(folder: Path) -> None:
    (folder / "trained").mkdir()
    (folder / "trained" / "last.pt").write_bytes(_trained_checkpoint())


class Payload:
    """Pickles as a call that would create a file: what a crafted TGB negatives file runs."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def crafted_tgb_file(folder: Path) -> None:
    (folder / "ns.pkl").write_bytes(pickle.dumps({(0, 1, 2): Payload(str(folder / "pwned"))}))


def tgb_file_of_other_events(folder: Path) -> None:
    write_tgb_negatives(folder / "ns.pkl", [0], [1], [2], [[3, 4, 5]])


def result_naming(events_file: str) -> Callable[[Path], None]:
    """A result pair whose JSON then names another events file (an edit, or a hostile result)."""
    def apply(folder: Path) -> None:
        assert main([part.replace("{dir}", str(folder)) for part in evaluate()]) == 0
        payload = json.loads((folder / "r.json").read_text())
        payload["manifest"]["events_file"] = events_file
        (folder / "r.json").write_text(json.dumps(payload))
    return apply


ROWS = [
    # -- input files ------------------------------------------------------------------------------------
    Row("empty file", evaluate(), {"events.txt": ""}, "DataFormatError", "no events|empty"),
    Row("one event", evaluate(), {"events.txt": "0 1 5\n"}, "SplitError", "larger .* ratio|more distinct timestamps"),
    Row("one timestamp", evaluate(), {"events.txt": "0 1 5\n1 2 5\n2 3 5\n3 4 5\n"}, "SplitError",
        "more distinct timestamps"),
    Row("NaN time", evaluate(), {"events.txt": lines_with({7: "1 2 nan\n"})}, "DataFormatError", "finite|repair"),
    Row("inf time", evaluate(), {"events.txt": lines_with({7: "1 2 inf\n"})}, "DataFormatError", "finite|repair"),
    Row("NaN feature", evaluate("events.csv", *CSV_OPTIONS, fmt="csv"), {"events.csv": csv_with_feature("nan")},
        "DataFormatError", "finite|impute|repair"),
    Row("inf feature", evaluate("events.csv", *CSV_OPTIONS, fmt="csv"), {"events.csv": csv_with_feature("inf")},
        "DataFormatError", "finite|impute|repair"),
    Row("negative id", evaluate(), {"events.txt": lines_with({7: "-3 2 %d\n" % EVENTS.t[7]})}, "DataFormatError",
        "remap"),
    Row("short line", evaluate(), {"events.txt": lines_with({7: "3 2\n"})}, "DataFormatError",
        "Fix or remove that line"),
    Row("unsorted", evaluate(), {"events.txt": lines_with({7: "1 2 999999\n"})}, "TemporalDataError", "--sort"),
    Row("huge sparse ids", evaluate(), {"events.txt": lines_with({7: "%d 2 %d\n" % (2**40, EVENTS.t[7])})},
        "DataFormatError", "--remap"),
    Row("jodie reader on a DGB file", evaluate("ml.csv", fmt="jodie"),
        {"ml.csv": ",u,i,ts,label,idx\n0,1,2,1.0,0,1\n1,2,3,2.0,0,2\n"}, "DataFormatError", "--format dgb"),
    Row("tgb reader on a DGB file", evaluate("ml.csv", fmt="tgb"),
        {"ml.csv": ",u,i,ts,label,idx\n0,1,2,1.0,0,1\n1,2,3,2.0,0,2\n"}, "DataFormatError", "--format dgb"),
    Row("snap reader on a SocioPatterns file", evaluate("hs.tsv"),
        {"hs.tsv": "20\t1\t2\t2BIO1\t2BIO2\n40\t2\t3\tMP\tMP\n"}, "DataFormatError", "--format sociopatterns"),
    Row("gzip truncated", evaluate("events.txt.gz"), {"events.txt.gz": gzip.compress(SNAP.encode())[:-40]},
        "DataFormatError", "gzip|truncated|corrupt"),
    Row("not UTF-8", evaluate(), {"events.txt": b"0 1 5\n\xff\xfe 2 6\n"}, "DataFormatError", "UTF-8"),
    # -- correct results from unusual but valid input --------------------------------------------------
    Row("duplicate lines are counted", evaluate(), {"events.txt": WITH_DUPLICATE},
        check=lambda r: r["manifest"]["reader"]["num_duplicates"] == len(WITH_DUPLICATE.splitlines())
        - len(set(WITH_DUPLICATE.splitlines()))),  # counted by brute force
    Row("integer times beyond 2^53", evaluate(save=False),
        {"events.txt": "".join(f"{u} {v} {2**60 + t}\n" for u, v, t in
                               zip(EVENTS.src.tolist(), EVENTS.dst.tolist(), EVENTS.t.tolist()))},
        check=lambda r: r["manifest"]["segment"]["t_first"] > 2**60),
    Row("times merged by float64 are counted", evaluate(save=False),
        {"events.txt": "".join(f"{u} {v} {t}.5\n" for u, v, t in
                               zip(EVENTS.src.tolist(), EVENTS.dst.tolist(), EVENTS.t.tolist()))
            .replace(f" {int(EVENTS.t[400])}.5\n", f" {int(EVENTS.t[400])}.50000000000000001\n", 1)},
        check=lambda r: r["manifest"]["reader"]["num_merged_times"] == 1),
    # -- options ---------------------------------------------------------------------------------------
    Row("boolean option not a boolean", evaluate("events.txt", "--sampler", "uniform:replace=maybe"),
        {"events.txt": SNAP}, "ValueError", "replace takes true / false"),
    Row("integer for a boolean option", evaluate("events.txt", "--sampler", "uniform:replace=1"),
        {"events.txt": SNAP}, "ValueError", "replace takes true / false"),
    Row("choice option outside its choices", evaluate("events.txt", "--sampler", "historical:fallback=xyz"),
        {"events.txt": SNAP}, "ValueError", "fallback must be one of"),
    Row("malformed float option", evaluate("events.txt", "--sampler", "popularity:half_life=1.2.3"),
        {"events.txt": SNAP}, "ValueError", "half_life takes a number or none"),
    Row("negative K", evaluate("events.txt", "--negatives", "-5"), {"events.txt": SNAP}, "ValueError",
        "--negatives must be >= 0"),
    Row("unknown sampler", evaluate("events.txt", "--sampler", "magic"), {"events.txt": SNAP}, "ValueError",
        "registered"),
    Row("reader column outside the row", evaluate("events.csv", "--option", "src_col=9", "--option", "dst_col=1",
                                                  "--option", "t_col=2", fmt="csv"),
        {"events.csv": SNAP.replace(" ", ",")}, "DataFormatError", "column|index"),
    Row("reader option of the wrong type", evaluate("events.csv", "--option", "has_header=maybe", fmt="csv"),
        {"events.csv": SNAP.replace(" ", ",")}, "ValueError", "true|false"),
    # -- devices and output paths ----------------------------------------------------------------------
    Row("cuda without CUDA", evaluate("events.txt", "--device", "cuda:7"), {"events.txt": SNAP}, "DeviceError",
        "--device cpu|cpu"),
    Row("--out is a folder", ["evaluate", "{dir}/events.txt", "--format", "snap", "--model", "edgebank",
                              "--out", "{dir}/folder"], {"events.txt": SNAP, "folder/keep": ""},
        "OutputPathError", "file name|folder"),
    Row("existing run directory", train(), {"events.txt": SNAP, "ckpt/last.pt": "old run"}, "OutputPathError",
        "--resume|--overwrite"),
    Row("zero epochs", ["train", "{dir}/events.txt", "--format", "snap", "--model", "membership", "--epochs", "0",
                        "--out", "{dir}/r.json"], {"events.txt": SNAP}, "ValueError", "--epochs .*>= 1|at least 1"),
    Row("neural-only option for membership", ["train", "{dir}/events.txt", "--format", "snap", "--model", "membership",
                                              "--memory-dim", "8", "--out", "{dir}/r.json"],
        {"events.txt": SNAP}, "ValueError", "apply to the neural models"),
    Row("intervention option without --intervention", ["diagnose", "{dir}/events.txt", "--format", "snap",
                                                       "--negatives", "5", "--out", "{dir}/diag"],
        {"events.txt": SNAP}, "ValueError", "only apply to --intervention"),
    Row("intervention of a heuristic name", ["diagnose", "{dir}/events.txt", "--format", "snap", "--intervention",
                                             "membership", "edgebank", "--out", "{dir}/diag"],
        {"events.txt": SNAP}, "FileNotFoundError", "checkpoint file written by `tgeval train"),
    # -- an output onto an input or another output (issue 29 part 1), a used run folder (part 2) ----------
    Row("--out is the data file", evaluate(save=False, result="events.txt"),
        {"events.txt": SNAP}, "OutputPathError", "is also the data file .*Give --out another path"),
    Row("--out is a symlink to the data file", evaluate(save=False, result="link.json"),
        {"events.txt": SNAP}, "OutputPathError", r"through a link.*Give --out another path",
        prepare=lambda folder: (folder / "link.json").symlink_to(folder / "events.txt")),
    Row("--out is a hard link to the data file", evaluate(save=False, result="link.json"),
        {"events.txt": SNAP}, "OutputPathError", r"through a link.*Give --out another path",
        prepare=lambda folder: os.link(folder / "events.txt", folder / "link.json")),
    Row("--save-events is --out", evaluate("events.txt", save=False) + ["--save-events", "{dir}/r.json"],
        {"events.txt": SNAP}, "OutputPathError", "--save-events .* is also --out .*Give --save-events another"),
    Row("--out is the negatives file", evaluate("events.txt", "--sampler", "fixed:path={dir}/neg.pt", save=False,
                                                result="neg.pt"), {"events.txt": SNAP, "neg.pt": "negatives"},
        "OutputPathError",
        "is also --sampler path 1"),
    Row("train --out is the data file", ["train", "{dir}/events.txt", "--format", "snap", "--model", "membership",
                                         "--out", "{dir}/events.txt"], {"events.txt": SNAP}, "OutputPathError",
        "is also the data file"),
    Row("diagnose --out folder holds the data as one of its files", ["diagnose", "{dir}/novelty.csv", "--format",
                                                                     "snap", "--out", "{dir}"],
        {"novelty.csv": SNAP}, "OutputPathError", "--out novelty.csv .* is also the data file"),
    Row("report --out is a result", ["report", "{dir}/res", "--out", "{dir}/res/r.json"], {"res/r.json": "{}"},
        "OutputPathError", "is also the results folder's r.json"),
    Row("run into a used folder", ["run", "--data", "{dir}/events.txt", "--out", "{dir}/res", "--tgn-epochs", "0"],
        {"events.txt": SNAP, "res/summary.json": "{}"}, "OutputPathError", "pass --overwrite"),
    Row("run --overwrite of a folder that is no run", ["run", "--data", "{dir}/events.txt", "--out", "{dir}/res",
                                                       "--overwrite"], {"events.txt": SNAP, "res/notes.txt": "mine"},
        "OutputPathError", "no folder of `tgeval run`.*another --out"),
    Row("run --overwrite of the folder holding the data", ["run", "--data", "{dir}/res/events.txt", "--out",
                                                           "{dir}/res", "--overwrite"],
        {"res/events.txt": SNAP, "res/summary.json": "{}"}, "OutputPathError", "lies inside --out .*Move it out"),
    # -- damaged or foreign files ----------------------------------------------------------------------
    Row("truncated negatives file", evaluate("events.txt", "--sampler", "fixed:path={dir}/neg.pt"),
        {"events.txt": SNAP}, "NegativesFileError", "draw it again|save_negatives",
        prepare=then(write_negatives, damage("neg.pt", lambda b: b[: len(b) // 2]))),
    Row("corrupted negatives file", evaluate("events.txt", "--sampler", "fixed:path={dir}/neg.pt"),
        {"events.txt": SNAP}, "NegativesFileError", "draw it again|save_negatives",
        prepare=then(write_negatives, damage("neg.pt", flip_middle_byte))),
    Row("negatives drawn for other data", evaluate("events.txt", "--sampler", "fixed:path={dir}/neg.pt"),
        {"events.txt": SNAP}, "NegativesFileError", "draw negatives for this one|other data",
        prepare=negatives_for_other_data),
    Row("crafted TGB pickle", evaluate("events.txt", "--sampler", "tgb:path={dir}/ns.pkl"), {"events.txt": SNAP},
        "NegativesFileError", "refusing to load it, nothing from it ran", prepare=crafted_tgb_file),
    Row("TGB file of other events", evaluate("events.txt", "--sampler", "tgb:path={dir}/ns.pkl"),
        {"events.txt": SNAP}, "NegativesFileError", "file of this split", prepare=tgb_file_of_other_events),
    Row("compare follows only files next to the result", ["compare", "{dir}/r.json"], {"events.txt": SNAP},
        "ValueError", "not a regular file inside", prepare=result_naming("/dev/zero")),
    Row("truncated checkpoint", evaluate("events.txt", "--model", "{dir}/trained/last.pt"), {"events.txt": SNAP},
        "CheckpointError", "train .*again|retrain|checkpoint",
        prepare=then(checkpoint, damage("trained/last.pt", lambda b: b[: len(b) // 2]))),
    Row("corrupted checkpoint", evaluate("events.txt", "--model", "{dir}/trained/last.pt"), {"events.txt": SNAP},
        "CheckpointError", "train .*again|retrain|checkpoint",
        prepare=then(checkpoint, damage("trained/last.pt", flip_middle_byte))),
]


def _prepare(row: Row, folder: Path) -> None:
    for name, content in row.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if row.prepare is not None:
        row.prepare(folder)


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_row(row: Row, tmp_path: Path, capsys) -> None:
    _prepare(row, tmp_path)
    before = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*")}
    capsys.readouterr()
    code = main([part.replace("{dir}", str(tmp_path)) for part in row.command])
    err = capsys.readouterr().err
    made = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path not in before)
    assert "Traceback" not in err
    if row.error is None:
        assert code == 0, err
        assert row.check(json.loads((tmp_path / "r.json").read_text()))
        assert not [name for name in made if ".tmp" in name], f"temporary files left behind: {made}"
        return
    assert code == 2, err
    match = re.search(r"tgeval: error: (\w+): (.*)", err, flags=re.S)
    assert match, err
    assert match.group(1) == row.error, err
    assert re.search(row.fix, match.group(2)), f"the message does not name the fix ({row.fix!r}): {err}"
    assert not made, f"output left behind after the error: {made}"
    changed = [str(path) for path, mtime in before.items() if path.is_file() and path.stat().st_mtime_ns != mtime]
    assert not changed, f"files changed by the failed command: {changed}"
    if row.name == "crafted TGB pickle":
        assert not (tmp_path / "pwned").exists()  # nothing from the file ran
