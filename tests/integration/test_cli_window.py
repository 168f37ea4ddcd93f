"""``tgeval evaluate --model edgebank-window --window ...`` at every time magnitude (issue 29, part 3)."""

import json

import pytest

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events


def write_events(path, offset=0):
    data = generate_events(num_events=1500, num_nodes=80, seed=4)
    path.write_text("".join(f"{u} {v} {t + offset}\n" for u, v, t in zip(data.src.tolist(), data.dst.tolist(),
                                                                        data.t.tolist())))
    return path


def evaluate(path, out, *flags):
    assert main(["evaluate", str(path), "--format", "snap", "--negatives", "5", "--out", str(out), *flags]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("window", ["inf", "1e300", "9.3e18", "9223372036854775808"])
def test_windows_beyond_int64_are_unlimited(tmp_path, window):
    """``9.3e18`` wrapped around int64 and emptied the memory; ``inf`` was an uncaught OverflowError."""
    path = write_events(tmp_path / "events.txt", offset=2**62)
    bank = evaluate(path, tmp_path / "bank.json", "--model", "edgebank")
    clamped = evaluate(path, tmp_path / "w.json", "--model", "edgebank-window", "--window", window)
    assert clamped["metrics"] == bank["metrics"]
    assert clamped["manifest"]["model"]["window"] is None
    assert float(clamped["manifest"]["model"]["window_given"]) == float(window)


@pytest.mark.parametrize("window", ["val", "test-duration", "7", "9223372036854775807"])
def test_window_and_metrics_do_not_move_with_a_2_62_shift(tmp_path, window):
    """The float duration chose another window at 2^62 (5,120 vs 81,062 on UCI); integer windows stay exact."""
    flags = ["--model", "edgebank-window", "--window", window]
    base = evaluate(write_events(tmp_path / "a.txt"), tmp_path / "a.json", *flags)
    moved = evaluate(write_events(tmp_path / "b.txt", offset=2**62), tmp_path / "b.json", *flags)
    assert moved["metrics"] == base["metrics"]
    assert moved["manifest"]["model"]["window"] == base["manifest"]["model"]["window"]
    if window not in ("val", "test-duration"):
        assert base["manifest"]["model"]["window"] == int(window)


@pytest.mark.parametrize("window", ["nan", "0", "-3", "-inf", "week"])
def test_a_nan_zero_negative_or_unknown_window_is_refused(tmp_path, window, capsys):
    path = write_events(tmp_path / "events.txt")
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", str(path), "--format", "snap", "--model", "edgebank-window", f"--window={window}"])
    assert exit_.value.code == 2
    assert "--window takes 'val', 'test-duration', 'tgb' or a positive duration" in capsys.readouterr().err
