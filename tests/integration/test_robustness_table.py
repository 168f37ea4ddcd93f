"""The robustness table (issue 13, part 11): one row per bad input or fault, run through the
command line as a user would. Every row ends in a typed error (its class printed, exit status 2,
a message that names the fix) or in a correct result, and leaves no partial output: no result
file, no events file, no checkpoint, no temporary file. Interrupted writes (SIGTERM, Ctrl-C)
are the rows of ``test_interrupted_writes.py``."""

from __future__ import annotations

import bz2
import contextlib
import errno
import functools
import gzip
import hashlib
import io
import json
import lzma
import os
import pickle
import re
import tempfile
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Optional
from unittest import mock

import numpy as np
import pytest
import torch

from tgeval import build_catalog, chronological_split
from tgeval.cli.program import main
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
    (``"usage"``: a usage error of the command line, naming its flag) and a pattern of its message
    (the fix), or a check of the result JSON. ``fault`` is a fault the command meets while it runs
    (e.g. a full disk)."""

    name: str
    command: list[str]
    files: dict = field(default_factory=dict)
    error: Optional[str] = None
    fix: str = ""
    check: Optional[Callable[[dict], bool]] = None
    prepare: Optional[Callable[[Path], None]] = None
    fault: Callable[[], ContextManager] = contextlib.nullcontext


def advice(says: str, never: str) -> str:
    """A pattern of a message that says ``says`` and nowhere ``never`` (advice that does not apply)."""
    return rf"^(?!.*{never})(?=.*{says})"


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


@functools.lru_cache(maxsize=1)
def _wide_checkpoint() -> bytes:
    """``last.pt`` of one TGN epoch trained with ``--split 0.9,0.05,0.05``: its training events reach into the
    default test segment."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "events.txt").write_text(SNAP)
        assert main(["train", f"{folder}/events.txt", "--format", "snap", "--model", "tgn", "--epochs", "1",
                     "--threads", "1", "--split", "0.9,0.05,0.05", "--checkpoint-dir", f"{folder}/wide"]) == 0
        return (Path(folder) / "wide" / "last.pt").read_bytes()


def wide_checkpoint(folder: Path) -> None:
    (folder / "wide").mkdir()
    (folder / "wide" / "last.pt").write_bytes(_wide_checkpoint())


def result_on_trained_events(folder: Path) -> None:
    """A result (JSON and per-event file) of the wide checkpoint on the default test segment, allowed."""
    wide_checkpoint(folder)
    (folder / "res").mkdir()
    assert main(["evaluate", f"{folder}/events.txt", "--format", "snap", "--model", f"{folder}/wide/last.pt",
                 "--negatives", "3", "--allow-trained-events", "--out", f"{folder}/res/tgn.json", "--save-events",
                 f"{folder}/res/tgn.csv"]) == 0
    assert main(["evaluate", f"{folder}/events.txt", "--format", "snap", "--model", "edgebank", "--negatives", "3",
                 "--out", f"{folder}/res/edgebank.json", "--save-events", f"{folder}/res/edgebank.csv"]) == 0


class Payload:
    """Pickles as a call that would create a file: what a crafted TGB negatives file runs."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


def crafted_tgb_file(folder: Path) -> None:
    (folder / "ns.pkl").write_bytes(pickle.dumps({(0, 1, 2): Payload(str(folder / "pwned"))}))


class Call:
    """Pickles as ``function(*args)``: what a hostile TGB file asks for."""

    def __init__(self, function: Callable, args: tuple) -> None:
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def crafted_negatives(folder: Path) -> None:
    """A file with a valid negatives header and checksum whose payload pickles a call (torch's safe loader must
    refuse it)."""
    from tgeval.samplers.fixed import _MAGIC

    buffer = io.BytesIO()
    torch.save({"header": Payload(str(folder / "pwned"))}, buffer)
    body = buffer.getvalue()
    (folder / "neg.pt").write_bytes(_MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def tgb_file_of_other_events(folder: Path) -> None:
    write_tgb_negatives(folder / "ns.pkl", [0], [1], [2], [[3, 4, 5]])


def crafted_checkpoint(folder: Path) -> None:
    """A file with a valid checkpoint header and checksum whose payload pickles a call (torch's safe
    loader must refuse it)."""
    buffer = io.BytesIO()
    torch.save({"model": Payload(str(folder / "pwned"))}, buffer)
    body = buffer.getvalue()
    (folder / "crafted.pt").write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:" + hashlib.sha256(body).hexdigest().encode()
                                        + b"\n" + body)


def zipped(text: str) -> bytes:
    """``text`` as the one member of a zip archive."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("events.txt", text)
    return buffer.getvalue()


def edited_checkpoint(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """The trained checkpoint as ``edited.pt``, its payload edited by ``edit`` behind a valid checksum."""
    def apply(folder: Path) -> None:
        body = _trained_checkpoint().partition(b"\n")[2]
        payload = torch.load(io.BytesIO(body), weights_only=True)
        edit(payload)
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        body = buffer.getvalue()
        (folder / "edited.pt").write_bytes(b"TGEVAL-CHECKPOINT 2 sha256:" + hashlib.sha256(body).hexdigest().encode()
                                           + b"\n" + body)
    return apply


def tgb_file_of_text(folder: Path) -> None:
    """A TGB file with a key per test event whose negatives are strings of ids."""
    data, split = stream_and_split(folder)
    test = split.test.select(data)
    keys = zip(test.src.tolist(), test.dst.tolist(), test.t.tolist())
    (folder / "ns.pkl").write_bytes(pickle.dumps({key: np.array(["3", "4", "5"]) for key in keys}))


@functools.lru_cache(maxsize=None)
def _metrics(text: str, *options: str) -> dict:
    """The metrics of ``evaluate()`` with ``options`` on the SNAP file ``text`` (the reference of a row)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "events.txt").write_text(text)
        assert main([part.replace("{dir}", folder) for part in evaluate("events.txt", *options, save=False)]) == 0
        return json.loads((Path(folder) / "r.json").read_text())["metrics"]


def two_results(folder: Path) -> None:
    """Per-event files ``a.csv`` (EdgeBank) and ``b.csv`` (PA) of the table's stream, for ``compare``."""
    for model, name in (("edgebank", "a"), ("pa", "b")):
        assert main(["evaluate", f"{folder}/events.txt", "--format", "snap", "--model", model, "--negatives", "3",
                     "--save-events", f"{folder}/{name}.csv"]) == 0


def full_disk() -> ContextManager:
    """Every file write meets a full disk (``fsync`` fails with ``ENOSPC``, as on a disk that fills up)."""
    return mock.patch("os.fsync", side_effect=OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))


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
    Row("id beyond int64", evaluate(), {"events.txt": lines_with({7: "%d 2 %d\n" % (2**63 + 5, EVENTS.t[7])})},
        "DataFormatError", "Pass --remap to number ids 0..n-1 .*beyond the int64 range"),
    Row("id beyond int64 with --remap is renumbered", evaluate("events.txt", "--remap", save=False),
        {"events.txt": lines_with({7: "%d 2 %d\n" % (2**63 + 5, EVENTS.t[7])})},
        check=lambda r: r["manifest"]["reader"]["remapped"] and r["metrics"] == _metrics(  # as any other new id
            lines_with({7: "%d 2 %d\n" % (2**40, EVENTS.t[7])}), "--remap")),
    Row("fractional id with --remap", evaluate("events.txt", "--remap"),
        {"events.txt": lines_with({7: "1.5 2 %d\n" % EVENTS.t[7]})}, "DataFormatError",
        advice("check the column mapping", never="--remap")),
    Row("feature beyond float32", evaluate("events.csv", *CSV_OPTIONS, fmt="csv"),
        {"events.csv": csv_with_feature("1e39")}, "DataFormatError",
        advice("line 6: column 'f' holds '1e39', beyond the float32 range.*Rescale", never="NaN")),
    Row("data file missing", evaluate("missing.txt"), {}, "InputPathError",
        "the data file .*missing.txt' does not exist: check the path"),
    Row("data file is a folder", evaluate("folder"), {"folder/events.txt": SNAP}, "InputPathError",
        "is a folder, but a file is expected \\(it holds events.txt\\)"),
    Row("data file under a file", evaluate("events.txt/events.txt"), {"events.txt": SNAP}, "InputPathError",
        "the data file .*events.txt/events.txt' does not exist: check the path"),
    Row("--resume in a missing folder", train("--resume", "{dir}/run/last.pt"), {"events.txt": SNAP},
        "CheckpointError", r"run/last.pt does not exist, nor its folder .*run: check the path given to resume"),
    Row("--model is a folder", evaluate("events.txt", "--model", "{dir}/trained"), {"events.txt": SNAP},
        "InputPathError", "--model .* is a folder, .*it holds last.pt", prepare=checkpoint),
    Row("compare of a missing events file", ["compare", "{dir}/a.csv", "{dir}/b.csv"], {"a.csv": "x"},
        "InputPathError", "events file 2 .*b.csv' does not exist"),
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
        {"events.txt": SNAP}, "SamplerError", "fallback must be one of"),
    Row("malformed float option", evaluate("events.txt", "--sampler", "popularity:half_life=1.2.3"),
        {"events.txt": SNAP}, "ValueError", "half_life takes a number or none"),
    Row("negative K", evaluate("events.txt", "--negatives", "-5"), {"events.txt": SNAP}, "ProtocolError",
        "--negatives must be >= 0"),
    Row("unknown sampler", evaluate("events.txt", "--sampler", "magic"), {"events.txt": SNAP}, "SamplerError",
        "registered"),
    Row("reader column outside the row", evaluate("events.csv", "--option", "src_col=9", "--option", "dst_col=1",
                                                  "--option", "t_col=2", fmt="csv"),
        {"events.csv": SNAP.replace(" ", ",")}, "DataFormatError", "column|index"),
    Row("reader option of the wrong type", evaluate("events.csv", "--option", "has_header=maybe", fmt="csv"),
        {"events.csv": SNAP.replace(" ", ",")}, "ValueError", "true|false"),
    Row("reader option the format does not take", evaluate("events.txt", "--option", "src_col=1"),
        {"events.txt": SNAP}, "ValueError", "format 'snap' takes no option 'src_col'; its options: none .*"
                                            "'src_col' is an option of --format csv"),
    Row("mixture weight not a number", evaluate("events.txt", "--sampler", "mixture:uniform=abc"),
        {"events.txt": SNAP}, "SamplerError", "weight uniform=abc .*mixture:NAME=WEIGHT"),
    Row("mixture weight infinite", evaluate("events.txt", "--sampler", "mixture:uniform=inf,historical=1"),
        {"events.txt": SNAP}, "SamplerError", "proportions must be finite"),
    # -- numbers beyond what a flag takes: usage errors naming the flag, or the exact meaning of the value -----
    Row("--window 1e300 is unlimited", evaluate("events.txt", "--model", "edgebank-window", "--window", "1e300",
                                                save=False), {"events.txt": SNAP},
        check=lambda r: r["manifest"]["model"]["window"] is None and r["metrics"] == _metrics(SNAP)),
    Row("--window inf is unlimited", evaluate("events.txt", "--model", "edgebank-window", "--window", "inf",
                                              save=False), {"events.txt": SNAP},
        check=lambda r: r["manifest"]["model"]["window"] is None and r["metrics"] == _metrics(SNAP)),
    Row("--window nan", evaluate("events.txt", "--model", "edgebank-window", "--window", "nan"), {"events.txt": SNAP},
        "usage", "--window: .*positive duration"),
    Row("--negatives 1e20", evaluate("events.txt", "--negatives", "1e20"), {"events.txt": SNAP}, "usage",
        "--negatives: expected an integer"),
    Row("--negatives 10^20", evaluate("events.txt", "--negatives", str(10**20)), {"events.txt": SNAP}, "usage",
        "--negatives: must be at most 2,147,483,647"),
    Row("--batch-size 10^20", evaluate("events.txt", "--batch-size", str(10**20)), {"events.txt": SNAP}, "usage",
        "--batch-size: must be at most 2,147,483,647"),
    Row("--hits 10^20", evaluate("events.txt", "--hits", str(10**20)), {"events.txt": SNAP}, "usage",
        "--hits: every k must lie in"),
    Row("--seed 2^70", evaluate("events.txt", "--seed", str(2**70)), {"events.txt": SNAP}, "usage",
        "--seed: a seed lies in"),
    Row("--lr -1", train("--lr", "-1"), {"events.txt": SNAP}, "usage", "--lr: a learning rate is a positive finite"),
    Row("--lr nan", train("--lr", "nan"), {"events.txt": SNAP}, "usage", "--lr: a learning rate is a positive finite"),
    # -- devices and output paths ----------------------------------------------------------------------
    Row("cuda without CUDA", evaluate("events.txt", "--device", "cuda:7"), {"events.txt": SNAP}, "DeviceError",
        "--device cpu|cpu"),
    Row("--out is a folder", ["evaluate", "{dir}/events.txt", "--format", "snap", "--model", "edgebank",
                              "--out", "{dir}/folder"], {"events.txt": SNAP, "folder/keep": ""},
        "OutputPathError", "file name|folder"),
    Row("existing run directory", train(), {"events.txt": SNAP, "ckpt/last.pt": "old run"}, "OutputPathError",
        "--resume|--overwrite"),
    Row("--checkpoint-dir is a file", train(), {"events.txt": SNAP, "ckpt": "a file"}, "OutputPathError",
        "checkpoint folder .*ckpt' is a file, but a folder is expected"),
    Row("--resume is a folder", train("--resume", "{dir}/ckpt"), {"events.txt": SNAP, "ckpt/notes.txt": ""},
        "CheckpointError",
        r"is a folder, but resume \(--resume\) takes a file: the run's last.pt, e.g. .*ckpt/last.pt"),
    Row("diagnose --out is a file", ["diagnose", "{dir}/events.txt", "--format", "snap", "--out", "{dir}/diag"],
        {"events.txt": SNAP, "diag": "a file"}, "OutputPathError", "--out .*diag' is a file, but a folder is expected"),
    Row("static --out is a file", ["static", "{dir}/events.txt", "--format", "snap", "--out", "{dir}/st"],
        {"events.txt": SNAP, "st": "a file"}, "OutputPathError", "--out .*st' is a file, but a folder is expected"),
    Row("full disk while writing a checkpoint", train(), {"events.txt": SNAP}, "OutputPathError",
        r"ckpt/best.pt could not be written: no space left .*MiB free.*resume the run from its last complete epoch, "
        r".*ckpt/last.pt", prepare=lambda folder: (folder / "ckpt").mkdir(), fault=full_disk),
    Row("full disk while writing the result", ["train", "{dir}/events.txt", "--format", "snap", "--model",
                                               "membership", "--epochs", "1", "--out", "{dir}/r.json"],
        {"events.txt": SNAP}, "OutputPathError",
        r"r.json could not be written: no space left .*MiB free.*give --out on another disk", fault=full_disk),
    Row("checkpoint of other data resumed", train("--resume", "{dir}/trained/last.pt", "--epochs", "2"),
        {"events.txt": lines_with({10: "1 2 %d\n" % EVENTS.t[10]})}, "CheckpointError",
        "trained on other data \\(fingerprint sha256:\\w+, this data sha256:\\w+\\)", prepare=checkpoint),
    Row("zero epochs", ["train", "{dir}/events.txt", "--format", "snap", "--model", "membership", "--epochs", "0",
                        "--out", "{dir}/r.json"], {"events.txt": SNAP}, "ProtocolError", "--epochs .*>= 1|at least 1"),
    Row("neural-only option for membership", ["train", "{dir}/events.txt", "--format", "snap", "--model", "membership",
                                              "--memory-dim", "8", "--out", "{dir}/r.json"],
        {"events.txt": SNAP}, "ProtocolError", "apply to the neural models"),
    Row("intervention option without --intervention", ["diagnose", "{dir}/events.txt", "--format", "snap",
                                                       "--negatives", "5", "--out", "{dir}/diag"],
        {"events.txt": SNAP}, "ValueError", "only apply to --intervention"),
    Row("intervention of a heuristic name", ["diagnose", "{dir}/events.txt", "--format", "snap", "--intervention",
                                             "membership", "edgebank", "--out", "{dir}/diag"],
        {"events.txt": SNAP}, "InputPathError", "checkpoint file written by `tgeval train"),
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
    Row("TGB file of text", evaluate("events.txt", "--sampler", "tgb:path={dir}/ns.pkl"), {"events.txt": SNAP},
        "NegativesFileError", r"hold '3' \(dtype <U1\), not integer node ids. Write each row as integer ids",
        prepare=tgb_file_of_text),
    Row("crafted checkpoint", evaluate("events.txt", "--model", "{dir}/crafted.pt"), {"events.txt": SNAP},
        "CheckpointError", advice("refused unread and nothing from it ran. Check where the file came from",
                                  never="weights_only"), prepare=crafted_checkpoint),
    Row("compare follows only files next to the result", ["compare", "{dir}/r.json"], {"events.txt": SNAP},
        "EventsFileError", "not a regular file inside", prepare=result_naming("/dev/zero")),
    Row("truncated checkpoint", evaluate("events.txt", "--model", "{dir}/trained/last.pt"), {"events.txt": SNAP},
        "CheckpointError", "train .*again|retrain|checkpoint",
        prepare=then(checkpoint, damage("trained/last.pt", lambda b: b[: len(b) // 2]))),
    Row("corrupted checkpoint", evaluate("events.txt", "--model", "{dir}/trained/last.pt"), {"events.txt": SNAP},
        "CheckpointError", "train .*again|retrain|checkpoint",
        prepare=then(checkpoint, damage("trained/last.pt", flip_middle_byte))),
    # -- no output replaces another output, checkpoint or run
    *[Row(f"train --out is the checkpoint folder's {name}", train("--out", "{dir}/ckpt/" + name), {"events.txt": SNAP},
          "OutputPathError", f"--out .*ckpt/{name}' is also --checkpoint-dir {name} .*Give --out another path")
      for name in ("best.pt", "last.pt", "timings.json")],
    Row("compare --out is the result of a compared file", ["compare", "{dir}/e.csv", "--out", "{dir}/r.json"],
        {"events.txt": SNAP}, "OutputPathError", "--out .*r.json' holds a tgeval result, which this command would "
                                                 "replace with a comparison. Give --out another path",
        prepare=lambda folder: main([part.replace("{dir}", str(folder)) for part in evaluate()])),
    Row("evaluate --out is a checkpoint", evaluate(save=False, result="trained/last.pt"), {"events.txt": SNAP},
        "OutputPathError", "holds a tgeval checkpoint, which this command would replace with a result",
        prepare=checkpoint),
    Row("resume into the folder of another run", train("--resume", "{dir}/trained/last.pt", "--epochs", "2"),
        {"events.txt": SNAP, "ckpt/last.pt": "run B", "ckpt/best.pt": "run B", "ckpt/timings.json": "[]"},
        "OutputPathError", r"holds another run \(last.pt, best.pt, timings.json\) than the resumed .*would mix the "
                           r"two.*--overwrite", prepare=checkpoint),
    Row("full disk in diagnose", ["diagnose", "{dir}/events.txt", "--format", "snap", "--out", "{dir}/d/diag"],
        {"events.txt": SNAP}, "OutputPathError",
        r"d/diag/novelty.csv could not be written: no space left .*MiB free.*give --out on another disk",
        fault=full_disk),
    Row("full disk in static", ["static", "{dir}/events.txt", "--format", "snap", "--out", "{dir}/st"],
        {"events.txt": SNAP}, "OutputPathError", r"st/static.json could not be written: no space left",
        fault=full_disk),
    Row("full disk in evaluate", evaluate(save=False, result="new/r.json"), {"events.txt": SNAP}, "OutputPathError",
        r"new/r.json could not be written: no space left .*give --out on another disk", fault=full_disk),
    Row("full disk in compare", ["compare", "{dir}/e.csv", "--out", "{dir}/cmp/c.json"], {"events.txt": SNAP},
        "OutputPathError", r"cmp/c.json could not be written: no space left", fault=full_disk,
        prepare=lambda folder: main([part.replace("{dir}", str(folder)) for part in evaluate()])),
    Row("full disk in report", ["report", "{dir}", "--out", "{dir}/html/report.html"], {"events.txt": SNAP},
        "OutputPathError", r"html/report.html could not be written: no space left", fault=full_disk,
        prepare=lambda folder: main([part.replace("{dir}", str(folder)) for part in evaluate()])),
    Row("full disk in run", ["run", "--data", "{dir}/events.txt", "--out", "{dir}/runs/res", "--tgn-epochs", "0",
                             "--negatives", "3"], {"events.txt": SNAP}, "OutputPathError",
        r"could not be written: no space left .*give --out on another disk", fault=full_disk),
    # -- every input that can change a number is checked or refused
    Row("--candidate-budget -5", evaluate("events.txt", "--model", "pa", "--candidate-budget", "-5"),
        {"events.txt": SNAP}, "ProtocolError", "--candidate-budget .*must be an integer >= 1, got -5"),
    Row("--candidate-budget 0", evaluate("events.txt", "--model", "pa", "--candidate-budget", "0"),
        {"events.txt": SNAP}, "ProtocolError", "--candidate-budget .*must be an integer >= 1, got 0"),
    Row("compare --resamples 1", ["compare", "{dir}/a.csv", "{dir}/b.csv", "--resamples", "1"], {"events.txt": SNAP},
        "ProtocolError", "--resamples 1 is too few for a 0.95 interval.*--resamples >= 40", prepare=two_results),
    Row("compare --block longer than the segment", ["compare", "{dir}/a.csv", "{dir}/b.csv", "--block", "5000"],
        {"events.txt": SNAP}, "ProtocolError", r"--block 5000 events holds all \d+ events.*zero width",
        prepare=two_results),
    Row("static --end nan", ["static", "{dir}/events.txt", "--format", "snap", "--end", "nan", "--out", "{dir}/st"],
        {"events.txt": SNAP}, "usage", "--end: --end takes 'all', 'train' or a finite time, got 'nan'"),
    Row("csv with src_col equal to dst_col", evaluate("events.csv", "--option", "src_col=0", "--option", "dst_col=0",
                                                      "--option", "t_col=2", "--option", "has_header=false", fmt="csv"),
        {"events.csv": SNAP.replace(" ", ",")}, "DataFormatError", "src_col and dst_col name the same column"),
    Row("id with a digit separator", evaluate(), {"events.txt": lines_with({7: "1_0 2 %d\n" % EVENTS.t[7]})},
        "DataFormatError", "line 8: column .* must hold integer node ids, found '1_0'"),
    Row("id with a digit separator under --remap is a name", evaluate("events.txt", "--remap", save=False),
        {"events.txt": lines_with({7: "1_0 2 %d\n" % EVENTS.t[7]})},
        check=lambda r: r["metrics"] == _metrics(lines_with({7: "%d 2 %d\n" % (2**40, EVENTS.t[7])}), "--remap")),
    Row("--window for edgebank", evaluate("events.txt", "--window", "100"), {"events.txt": SNAP}, "ProtocolError",
        "--window applies to edgebank-window, .*not to --model edgebank"),
    Row("--window for pa", evaluate("events.txt", "--model", "pa", "--window", "5"), {"events.txt": SNAP},
        "ProtocolError", "--window applies to edgebank-window, .*not to --model pa"),
    Row("--half-life for a checkpoint", evaluate("events.txt", "--model", "{dir}/trained/last.pt", "--half-life", "5"),
        {"events.txt": SNAP}, "ProtocolError", "--half-life applies to popularity, .*not to --model .*last.pt",
        prepare=checkpoint),
    Row("--sampler with --negatives 0", evaluate("events.txt", "--negatives", "0", "--sampler", "historical"),
        {"events.txt": SNAP}, "ProtocolError", "--sampler chooses the sampled negatives, and --negatives 0"),
    Row("--val-metric for membership", ["train", "{dir}/events.txt", "--format", "snap", "--model", "membership",
                                        "--val-metric", "mrr", "--out", "{dir}/r.json"], {"events.txt": SNAP},
        "ProtocolError", "--val-metric apply to the neural models"),
    Row("checkpoint evaluated on its training events", evaluate("events.txt", "--model", "{dir}/wide/last.pt"),
        {"events.txt": SNAP}, "LeakageError",
        r"was trained on events \[0, \d+\) .* \d+ of the \d+ events of the 'test' segment .*--allow-trained-events",
        prepare=wide_checkpoint),
    Row("checkpoint on its training events, allowed", evaluate("events.txt", "--model", "{dir}/wide/last.pt",
                                                               "--allow-trained-events", save=False),
        {"events.txt": SNAP}, check=lambda r: r["manifest"]["checkpoint"]["overlap"]["num_events"] > 0
        and r["manifest"]["checkpoint"]["overlap"]["allowed"], prepare=wide_checkpoint),
    Row("--allow-trained-events for a heuristic", evaluate("events.txt", "--allow-trained-events"),
        {"events.txt": SNAP}, "ProtocolError", "--allow-trained-events applies to a checkpoint"),
    Row("compare of a result on training events", ["compare", "{dir}/res/tgn.json", "{dir}/res/edgebank.json"],
        {"events.txt": SNAP}, "LeakageError",
        r"result 'tgn': \d+ of its events lie in its checkpoint's training range .*--allow-trained-events",
        prepare=result_on_trained_events),
    # -- hostile files; every error typed, with the fix
    Row("data file is a named pipe", evaluate("fifo"), {}, "InputPathError",
        r"the data file .*fifo' is a named pipe \(FIFO\), not a regular file.*Save what it gives to a file first",
        prepare=lambda folder: os.mkfifo(folder / "fifo")),
    Row("data file is /dev/zero", evaluate("zero"), {}, "InputPathError",
        r"the data file .*zero' is a character device, not a regular file.*Give the path of a file",
        prepare=lambda folder: (folder / "zero").symlink_to("/dev/zero")),
    Row("TGB file is a named pipe", evaluate("events.txt", "--sampler", "tgb:path={dir}/fifo"), {"events.txt": SNAP},
        "InputPathError", r"--sampler path 1 .*fifo' is a named pipe",
        prepare=lambda folder: os.mkfifo(folder / "fifo")),
    Row("empty tgb:path=", evaluate("events.txt", "--sampler", "tgb:path="), {"events.txt": SNAP}, "SamplerError",
        r"option 'path' in 'tgb:path=' has no value: .*'tgb:path=FILE'"),
    Row("TGB file is a folder", evaluate("events.txt", "--sampler", "tgb:path={dir}/tgb"),
        {"events.txt": SNAP, "tgb/ns.pkl": "x"}, "InputPathError", r"--sampler path 1 .*tgb' is a folder"),
    Row("missing --sampler file", evaluate("events.txt", "--sampler", "fixed:path={dir}/neg.pt"), {"events.txt": SNAP},
        "InputPathError", r"--sampler path 1 .*neg.pt' does not exist"),
    Row("tgeval negatives file given as a TGB file", evaluate("events.txt", "--sampler", "tgb:path={dir}/neg.pt"),
        {"events.txt": SNAP}, "NegativesFileError", r"is a tgeval negatives file .*read it with fixed:path=FILE",
        prepare=write_negatives),
    Row("TGB file given as a tgeval negatives file", evaluate("events.txt", "--sampler", "fixed:path={dir}/ns.pkl"),
        {"events.txt": SNAP}, "NegativesFileError", r"is a Python pickle, .*read it with tgb:path=FILE",
        prepare=tgb_file_of_other_events),
    Row("crafted negatives file", evaluate("events.txt", "--sampler", "fixed:path={dir}/neg.pt"), {"events.txt": SNAP},
        "NegativesFileError", advice("names posix.mkdir\\), so it was refused unread and nothing from it ran. Check "
                                     "where the file came from", never="weights_only"), prepare=crafted_negatives),
    Row("TGB pickle asking for 8.9 GiB", evaluate("events.txt", "--sampler", "tgb:path={dir}/ns.pkl"),
        {"events.txt": SNAP, "ns.pkl": pickle.dumps({(0, 1, 2): Call(np.ndarray, ((20_000_000, 60),))})},
        "NegativesFileError", r"calls numpy.ndarray itself .*refusing to load it"),
    Row("TGB pickle holding bytes(8e8)", evaluate("events.txt", "--sampler", "tgb:path={dir}/ns.pkl"),
        {"events.txt": SNAP, "ns.pkl": pickle.dumps({(0, 1, 2): Call(bytes, (800_000_000,))})},
        "NegativesFileError", r"asks for bytes of 800,000,000 bytes, more than a TGB file of \d+ bytes builds"),
    Row("--threads 100000", evaluate("events.txt", "--threads", "100000"), {"events.txt": SNAP}, "DeviceError",
        r"--threads must be a positive integer of at most \d+ \(4 per core"),
    Row("--device meta", evaluate("events.txt", "--device", "meta"), {"events.txt": SNAP}, "DeviceError",
        r"--device meta: meta tensors hold shapes but no values.*use --device cpu or cuda"),
    Row("checkpoint with a valid checksum and a wrong num_nodes", evaluate("events.txt", "--model", "{dir}/edited.pt"),
        {"events.txt": SNAP}, "CheckpointError", r"do not fit the 'tgn' model its config describes \(num_nodes=5\)"
        r".*train again", prepare=edited_checkpoint(lambda p: p["model"]["config"].update(num_nodes=5))),
    Row("checkpoint with a valid checksum and a wrong parameter shape",
        evaluate("events.txt", "--model", "{dir}/edited.pt"), {"events.txt": SNAP}, "CheckpointError",
        r"size mismatch for \S+ .*train again",
        prepare=edited_checkpoint(lambda p: p["parameters"].update({next(iter(p["parameters"])): torch.zeros(3)}))),
    Row("checkpoint with a valid checksum and an empty state", evaluate("events.txt", "--model", "{dir}/edited.pt"),
        {"events.txt": SNAP}, "CheckpointError", r"it holds no state of part .*train again",
        prepare=edited_checkpoint(lambda p: p.update(state={}))),
    Row("checkpoint with a valid checksum and a broken RNG", train("--resume", "{dir}/edited.pt", "--epochs", "2"),
        {"events.txt": SNAP}, "CheckpointError", r"checkpoint.rng\[0\].torch is missing.*train again",
        prepare=edited_checkpoint(lambda p: p.update(rng=[{}]))),
    Row("run --tgn-epochs -1", ["run", "--data", "{dir}/events.txt", "--out", "{dir}/res", "--tgn-epochs", "-1"],
        {"events.txt": SNAP}, "ProtocolError", r"--tgn-epochs must be >= 0 .*0: the heuristics only\), got -1"),
    Row("bzip2-compressed file", evaluate(), {"events.txt": bz2.compress(SNAP.encode())}, "DataFormatError",
        advice(r"events.txt is bzip2-compressed, not UTF-8 text: decompress it first: `bunzip2 -k ", never="iconv")),
    Row("xz-compressed file", evaluate(), {"events.txt": lzma.compress(SNAP.encode())}, "DataFormatError",
        advice(r"is xz-compressed, not UTF-8 text: decompress it first: `unxz -k ", never="iconv")),
    Row("zip archive", evaluate(), {"events.txt": zipped(SNAP)}, "DataFormatError",
        advice(r"is a zip archive, not UTF-8 text: extract the event file first: `unzip ", never="iconv")),
    Row("UTF-16 file", evaluate(), {"events.txt": SNAP.encode("utf-16")}, "DataFormatError",
        advice(r"is UTF-16 text, not UTF-8 text: re-encode it as UTF-8: `iconv -f utf-16 -t utf-8 ", never="latin1")),
    Row("UTF-16 file without a byte-order mark", evaluate(), {"events.txt": SNAP.encode("utf-16-le")},
        "DataFormatError", advice(r"is UTF-16 text without a byte-order mark \(little-endian\).*iconv -f utf-16le",
                                  never="latin1")),
    Row("repeated header", evaluate("events.csv", "--option", "src_col=src", "--option", "dst_col=dst", "--option",
                                    "t_col=t", fmt="csv"),
        {"events.csv": "src,dst,t\n" + "".join(line.replace(" ", ",") + "\n" for line in SNAP.splitlines()[:400])
         + "src,dst,t\n" + "".join(line.replace(" ", ",") + "\n" for line in SNAP.splitlines()[400:])},
        "DataFormatError", advice(r"line 402: repeats the header of line 1 \('src,dst,t'\).*Remove that line",
                                  never="remap")),
    Row("inline comment", evaluate(), {"events.txt": lines_with({7: SNAP.splitlines()[7] + "  # checked\n"})},
        "DataFormatError", r"line 8: .*It ends in an inline comment \('# checked'\), and comments are read only on "
                           r"lines of their own"),
    Row("byte-order mark inside the file", evaluate(),
        {"events.txt": lines_with({400: "\ufeff" + SNAP.splitlines(True)[400]})}, "DataFormatError",
        advice(r"line 401: holds a byte-order mark \(U\+FEFF\) inside the text, where files were joined",
               never="remap")),
    Row("one malformed row among good ones", evaluate(), {"events.txt": lines_with({700: "1 2 x5\n"})},
        "DataFormatError", advice(r"line 701: column 't' must hold numeric timestamps, found 'x5'. The column's other "
                                  r"899 values are numbers: fix or remove that line", never="time_format")),
    Row("one row out of order among sorted ones", evaluate(), {"events.txt": lines_with({7: "1 2 999999\n"})},
        "TemporalDataError", r"line 8 \(t=999999\) lies out of order between line 7 .* and line 9 .*Fix or remove "
                             r"that line; if its time is right, pass --sort"),
    Row("one id far beyond the others", evaluate(), {"events.txt": lines_with({7: "%d 2 %d\n" % (2**40, EVENTS.t[7])})},
        "DataFormatError", r"line 8: holds the id 1,099,511,627,776, far beyond every other id .*Fix that line"),
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
    with row.fault(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = main([part.replace("{dir}", str(tmp_path)) for part in row.command])
        except SystemExit as stop:  # a usage error of the command line
            code = stop.code
    err = capsys.readouterr().err
    made = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path not in before)
    assert "Traceback" not in err
    leaked = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not leaked, f"a numeric warning leaked: {leaked}"
    assert not (tmp_path / "pwned").exists()  # nothing from a crafted file ran
    if row.error is None:
        assert code == 0, err
        assert row.check(json.loads((tmp_path / "r.json").read_text()))
        assert not [name for name in made if ".tmp" in name], f"temporary files left behind: {made}"
        return
    assert code == 2, err
    if row.error == "usage":
        match = re.search(r"tgeval \w+: error: argument (.*)", err, flags=re.S)
        assert match, err
    else:
        match = re.search(r"tgeval: error: (\w+): (.*)", err, flags=re.S)
        assert match, err
        assert match.group(1) == row.error, err
    assert re.search(row.fix, match.group(match.lastindex), flags=re.S), \
        f"the message does not name the fix ({row.fix!r}): {err}"
    assert not made, f"output left behind after the error: {made}"
    changed = [str(path) for path, mtime in before.items() if path.is_file() and path.stat().st_mtime_ns != mtime]
    assert not changed, f"files changed by the failed command: {changed}"
