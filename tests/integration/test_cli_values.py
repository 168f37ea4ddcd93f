"""Numbers beyond what a flag can take are usage errors naming the flag (exit 2), never an
uncaught OverflowError or a library's message."""

import pytest

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tests.helpers import snap_text

HUGE = str(10**20)


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "events.txt"
    path.write_text(snap_text(generate_events(num_events=600, num_nodes=40, seed=1)))
    return str(path)


@pytest.mark.parametrize("command, flag, value, says", [
    ("evaluate", "--negatives", HUGE, "at most 2,147,483,647"),
    ("evaluate", "--batch-size", HUGE, "at most 2,147,483,647"),
    ("evaluate", "--hits", HUGE, "every k must lie in"),
    ("evaluate", "--candidate-budget", HUGE, "at most 2,147,483,647"),
    ("evaluate", "--seed", str(2**70), "a seed lies in"),
    ("evaluate", "--seed", "-1", "a seed lies in"),
    ("train", "--seed", str(2**32), "a seed lies in"),
    ("train", "--epochs", HUGE, "at most 2,147,483,647"),
    ("train", "--lr", "-1", "a learning rate is a positive finite number"),
    ("train", "--lr", "nan", "a learning rate is a positive finite number"),
    ("train", "--lr", "inf", "a learning rate is a positive finite number"),
])
def test_out_of_range_numbers_are_usage_errors_naming_the_flag(events, capsys, command, flag, value, says):
    model = ["--model", "edgebank"] if command == "evaluate" else ["--model", "membership", "--epochs", "1"]
    with pytest.raises(SystemExit) as raised:
        main([command, events, "--format", "snap", *model, flag, value])
    err = capsys.readouterr().err
    assert raised.value.code == 2 and f"argument {flag}" in err and says in err, err
    assert "Traceback" not in err and "OverflowError" not in err


def test_the_largest_values_still_parse(events, tmp_path):
    assert main(["evaluate", events, "--format", "snap", "--model", "edgebank", "--seed", str(2**32 - 1),
                 "--negatives", "3", "--out", str(tmp_path / "r.json")]) == 0
