"""The documentation's generated tables equal what ``benchmarks/tables.py`` renders from the saved
benchmark outputs in ``benchmarks/results/``: a page edited by hand, or a result saved without
rerunning the script, fails here (fix: ``python benchmarks/tables.py``)."""

import argparse
import importlib.util
import json

import pytest

from tests.helpers import README

ROOT = README.parent
spec = importlib.util.spec_from_file_location("benchmark_tables", ROOT / "benchmarks" / "tables.py")
tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tables)


@pytest.mark.parametrize("page", tables.pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_page_equals_its_rendered_tables(page):
    text = page.read_text(encoding="utf-8")
    assert tables.render(text) == text


def test_every_table_is_on_a_page():
    """Every bespoke table and every saved results file is rendered somewhere."""
    used = {match["name"] for page in tables.pages() for match in tables.MARKER.finditer(page.read_text())}
    assert used == set(tables.TABLES) | {path.stem for path in tables.RESULTS.glob("*.json")}


def test_saved_tables_render_with_how_they_were_measured(tmp_path, monkeypatch):
    """``_common.print_table`` keeps each table, ``save_results`` writes them, and a marker renders all of them
    (titles first) or the I-th, each time followed by the command, threads and load average."""
    monkeypatch.setenv("TGEVAL_DATA_DIR", str(tmp_path))  # _common sets a default at import
    spec = importlib.util.spec_from_file_location("benchmark_common", ROOT / "benchmarks" / "_common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    common.print_table(["method", "events/s"], [["a", "1,000"], ["b | c", 2]])
    common.print_table(["x"], [[0.5]], title="second table")
    common.save_results(argparse.Namespace(out=tmp_path / "bench_x.json"))
    report = json.loads((tmp_path / "bench_x.json").read_text())
    assert [t["rows"] for t in report["tables"]] == [[["a", "1,000"], ["b | c", "2"]], [["0.5"]]]
    assert report["machine"]["torch_threads"] >= 1 and len(report["machine"]["load_end"]) == 3
    page = ("<!-- table:bench_x -->\n<!-- /table:bench_x -->\ntext\n"
            "<!-- table:bench_x:2 -->\n<!-- /table:bench_x:2 -->\n")
    provenance = tables._provenance(report)
    assert provenance.startswith("*Measured by `") and "torch thread" in provenance and "load average" in provenance
    assert tables.render(page, tmp_path) == (
        "<!-- table:bench_x -->\n| method | events/s |\n|---|---|\n| a | 1,000 |\n| b \\| c | 2 |\n\n"
        "second table\n\n| x |\n|---|\n| 0.5 |\n\n" + provenance + "<!-- /table:bench_x -->\ntext\n"
        "<!-- table:bench_x:2 -->\nsecond table\n\n| x |\n|---|\n| 0.5 |\n\n" + provenance
        + "<!-- /table:bench_x:2 -->\n")
    with pytest.raises(IndexError, match="has 2 tables, not a table 3"):
        tables.render("<!-- table:bench_x:3 -->\n<!-- /table:bench_x:3 -->\n", tmp_path)


def test_leaderboard_rows_come_from_the_finished_runs(tmp_path):
    """One row per model, seeds pooled into mean ± std (epochs and times per seed, in seed order); a run still
    training is left out."""
    folder = tmp_path / "tgb_leaderboard"
    folder.mkdir()
    def run(model, seed, mrr, finished=True):
        history = [{"epoch": e, "train_seconds": s} for e, s in enumerate((10.0, 30.0, 20.0))]
        return {"model": model, "seed": seed, "finished": finished, "best_epoch": 1, "epochs_run": 3,
                "history": history, "test_mrr_tgb_preset": mrr, "test_mrr_tgeval_protocol": mrr + 0.01}
    for seed, mrr in ((0, 0.4), (1, 0.5)):
        report = {"leaderboard": {"tgn": [0.396, 0.06]}, "runs": {f"tgn/seed {seed}": run("tgn", seed, mrr)}}
        (folder / f"tgn-seed{seed}.json").write_text(json.dumps(report))
    partial = {"leaderboard": {}, "runs": {"dyrep/seed 0": {"model": "dyrep", "seed": 0, "finished": False,
                                                            "history": []}}}
    (folder / "dyrep-seed0.json").write_text(json.dumps(partial))
    rows = tables.tgb_leaderboard(tmp_path).splitlines()[2:]
    assert rows == ["| TGN | 0.396 ± 0.060 | 0, 1 | 0.4500 ± 0.0707 | 0.4600 ± 0.0707 | 1 / 3; 1 / 3 | 20; 20 |"]


def test_a_missing_results_file_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json is missing: run OMP_NUM_THREADS=1 python "
                                                "benchmarks/nope.py --threads 1 --out benchmarks/results/nope.json"):
        tables.render("<!-- table:nope -->\n<!-- /table:nope -->\n", tmp_path)


@pytest.mark.parametrize("text, message", [
    ("<!-- table:nope -->\n| a |\n", "has no closing <!-- /table:nope -->"),
    ("<!-- table:nope:1 -->\n<!-- /table:nope -->\n", "the closing marker repeats the index"),
    ("<!-- table:tgb_leaderboard:1 -->\n<!-- /table:tgb_leaderboard:1 -->\n", "bespoke table: its marker takes no :1"),
    ("<!-- table:other -->\n<!-- /table:other -->\n", "holds no tables saved by _common.save_results"),
])
def test_a_marker_that_cannot_be_rendered_is_refused_with_its_fix(tmp_path, text, message):
    """An opener without its closer, a closer without the opener's index, an index on a bespoke table and a
    results file that ``save_results`` did not write are refused, not left unrendered or half-rendered."""
    (tmp_path / "other.json").write_text(json.dumps({"command": "x", "runs": {}}))
    with pytest.raises(tables.TableError, match=message):
        tables.render(text, tmp_path)


def test_a_marker_quoted_in_prose_is_not_a_marker(tmp_path):
    text = "quoted in prose: `<!-- table:nope -->`\n"
    assert tables.render(text, tmp_path) == text
