"""A result whose per-event file cannot be read with it, through the command line: a `tgeval evaluate`
killed (``SIGKILL``) between the renames of its pair leaves the new CSV beside the old JSON; a results
folder moved without the CSV its results name, or a CSV moved away. `tgeval compare` refuses such a
result with an ``EventsFileError`` whose fix applies to it; `tgeval report` shows the result from its
JSON alone and says why, on the page and on stderr, with a fix that applies to a folder; the fix works."""

import json
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tgeval.core.atomic import file_sha256
from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.diagnostics.comparison import EventsFileError, load_events
from tgeval.eval.result import Result
from tests.helpers import snap_text

REPO = Path(__file__).resolve().parents[2]

KILLED = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from tgeval.core import atomic
    from tgeval.cli.program import main

    def replace(source, target):
        if Path(target).name == "r.json":  # the CSV is in place; the JSON's rename would come now
            os.kill(os.getpid(), signal.SIGKILL)
        return os.rename(source, target)
    atomic.os.replace = replace
    main(sys.argv[1:])
""")


def evaluate(data: Path, out: Path, events: Path, *options: str) -> list[str]:
    return ["evaluate", str(data), "--format", "snap", "--model", "edgebank", "--negatives", "3", "--out", str(out),
            "--save-events", str(events), *options]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "events.txt"
    path.write_text(snap_text(generate_events(num_events=900, num_nodes=60, seed=11)))
    return path


def run(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def refusal(argv: list[str], capsys) -> str:
    """The message of the typed error the command ends in (exit status 2)."""
    code, err = run(argv, capsys)
    assert code == 2 and "Traceback" not in err, err
    found = re.search(r"tgeval: error: (\w+): (.*)", err, flags=re.S)
    assert found and found.group(1) == "EventsFileError", err
    return " ".join(found.group(2).split())


def reported_without_events(folder: Path, name: str, capsys) -> tuple[str, str]:
    """`tgeval report` of ``folder`` (exit status 0): the warning on stderr about result ``name`` and the page."""
    code, err = run(["report", str(folder), "--out", str(folder.parent / "report.html")], capsys)
    assert code == 0 and "Traceback" not in err, err
    warning = re.search(rf"tgeval: warning: result '{name}' is reported without its per-event file: (.*)", err)
    assert warning, err
    page = (folder.parent / "report.html").read_text(encoding="utf-8")
    assert f"{name}: its per-event file was not used" in page
    return " ".join(warning.group(1).split()), page


def test_a_pair_killed_between_its_renames_is_refused_and_the_rerun_repairs_it(tmp_path, data, capsys):
    folder = tmp_path / "res"
    out, events = folder / "r.json", folder / "e.csv"
    assert main(evaluate(data, out, events, "--seed", "0")) == 0  # the old pair
    assert main(evaluate(data, folder / "pa.json", folder / "pa.csv", "--model", "pa")) == 0  # a sound neighbour
    old = out.read_text()
    done = subprocess.run([sys.executable, "-c", KILLED, *evaluate(data, out, events, "--seed", "1")], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    # the new CSV, the old JSON and the JSON's temporary file: the pair does not match
    assert out.read_text() == old and json.loads(old)["manifest"]["events_sha256"] != file_sha256(events)
    assert len([p for p in folder.iterdir() if re.fullmatch(r"\.r\.json\.[a-z0-9_]{8}\.tmp", p.name)]) == 1

    with pytest.raises(EventsFileError, match="does not match this result"):
        load_events(out)
    message = refusal(["compare", str(out), str(folder / "pa.json")], capsys)
    assert "was not written together" in message and "killed between writing the CSV and the JSON" in message
    assert f"Evaluate again with --save-events beside --out (`tgeval evaluate ... --out {out} --save-events " \
           f"{events}`)" in message

    warning, page = reported_without_events(folder, "r", capsys)
    assert "does not match this result" in warning and "Evaluate again" in warning
    mrr = Result.load(out).metrics["all_entity"]["mrr"]["micro"]  # the old result, from its JSON alone
    assert re.search(rf"<td>r</td><td>[^<]*</td><td>{mrr:.4f}</td><td>–</td>", page)  # no interval
    assert page.count("<td>[0.") == 1  # pa's interval only

    assert main(evaluate(data, out, events, "--seed", "1")) == 0  # the fix the messages name
    assert sorted(p.name for p in folder.iterdir()) == ["e.csv", "pa.csv", "pa.json", "r.json"]  # stale file gone
    assert run(["compare", str(out), str(folder / "pa.json")], capsys)[0] == 0
    code, err = run(["report", str(folder), "--out", str(tmp_path / "report.html")], capsys)
    assert code == 0 and "warning" not in err


def test_a_result_naming_a_csv_outside_its_folder(tmp_path, data, capsys):
    """``--save-events`` outside the folder of ``--out``: the result names ``../elsewhere/e.csv``, which the readers do
    not follow. compare: pass the CSV itself (which works); report (a folder): evaluate again with the CSV beside
    the JSON (which works)."""
    folder, csv = tmp_path / "res", tmp_path / "elsewhere" / "e.csv"
    assert main(evaluate(data, folder / "r.json", csv)) == 0
    assert json.loads((folder / "r.json").read_text())["manifest"]["events_file"] == "../elsewhere/e.csv"

    message = refusal(["compare", str(folder / "r.json")], capsys)
    assert f"resolves to '{csv}', outside that folder" in message
    assert f"Pass that CSV itself (`tgeval compare {csv} ...`)" in message
    assert run(["compare", str(csv)], capsys)[0] == 0  # that fix works

    warning, _ = reported_without_events(folder, "r", capsys)
    assert f"resolves to '{csv}', outside that folder" in warning
    assert "compare" not in warning and "itself" not in warning  # no fix that does not apply to a folder
    fix = re.search(r"`tgeval evaluate \.\.\. (--out .*?)`", warning).group(1).split()
    assert fix == ["--out", str(folder / "r.json"), "--save-events", str(folder / "e.csv")]
    assert main(evaluate(data, *map(Path, fix[1::2]))) == 0  # that fix works
    code, err = run(["report", str(folder), "--out", str(tmp_path / "report.html")], capsys)
    assert code == 0 and "warning" not in err


def test_a_moved_folder_keeps_its_pairs_and_a_csv_moved_away_is_named(tmp_path, data, capsys):
    first = tmp_path / "res"
    assert main(evaluate(data, first / "r.json", first / "e.csv")) == 0
    folder = tmp_path / "moved" / "res"
    shutil.move(first, folder)  # the pair moves together: its JSON names the CSV beside it
    assert run(["report", str(folder), "--out", str(tmp_path / "moved" / "report.html")], capsys)[0] == 0
    assert run(["compare", str(folder / "r.json")], capsys)[0] == 0

    moved = tmp_path / "e.csv"
    shutil.move(folder / "e.csv", moved)
    message = refusal(["compare", str(folder / "r.json")], capsys)
    assert f"'{folder / 'e.csv'}' does not exist (moved, renamed or deleted" in message
    assert "If the CSV was moved, pass its new path itself" in message
    assert run(["compare", str(moved)], capsys)[0] == 0  # that fix works
    warning, _ = reported_without_events(folder, "r", capsys)
    assert f"'{folder / 'e.csv'}' does not exist" in warning and "itself" not in warning
    assert "Evaluate again with --save-events beside --out" in warning


@pytest.mark.parametrize("named", ["/dev/zero", "."])
def test_a_result_naming_no_regular_file_suggests_no_reading_of_it(tmp_path, data, capsys, named):
    assert main(evaluate(data, tmp_path / "r.json", tmp_path / "e.csv")) == 0
    payload = json.loads((tmp_path / "r.json").read_text())
    payload["manifest"]["events_file"] = named  # an edit, or a hostile result
    (tmp_path / "r.json").write_text(json.dumps(payload))
    message = refusal(["compare", str(tmp_path / "r.json")], capsys)
    assert "is no regular file" in message and "itself" not in message
    assert f"Evaluate again with --save-events beside --out (`tgeval evaluate ... --out {tmp_path / 'r.json'} " \
           f"--save-events {tmp_path / 'r.csv'}`)" in message
