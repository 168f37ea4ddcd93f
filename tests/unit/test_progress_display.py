import gzip

import pytest

from tgeval.core import progress
from tgeval.data import read_events


def test_stderr_progress_prints_plain_lines_at_most_every_interval_off_a_terminal(capsys):
    every_call = progress.StderrProgress("replay", every=0.0)
    for done in (1, 2, 4):
        every_call(done, 4)
    assert capsys.readouterr().err.splitlines() == ["  replay: 25% (1 of 4)", "  replay: 50% (2 of 4)",
                                                    "  replay: 100% (4 of 4)"]
    quiet = progress.StderrProgress("replay", every=3600.0)
    quiet(4, 4)
    progress.StderrProgress("replay", enabled=False, every=0.0)(4, 4)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("compressed", [False, True])
def test_reading_reports_the_bytes_read_up_to_the_files_size(tmp_path, compressed):
    text = "".join(f"{i % 7} {i % 11 + 7} {i}\n" for i in range(20_000)).encode()
    path = tmp_path / "events.txt"
    path.write_bytes(gzip.compress(text) if compressed else text)
    seen = []
    with progress.reporting(lambda done, total: seen.append((done, total))):
        read_events(path, "snap")
    size = path.stat().st_size
    assert seen and all(total == size for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen) and seen[-1][0] == size
