"""The documentation's generated tables equal what ``benchmarks/tables.py`` renders from the saved
benchmark outputs in ``benchmarks/results/``: a page edited by hand, or a result saved without
rerunning the script, fails here (fix: ``python benchmarks/tables.py``)."""

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
    used = {match["name"] for page in tables.pages() for match in tables.MARKER.finditer(page.read_text())}
    assert used == set(tables.TABLES)


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


def test_an_unknown_table_is_refused():
    with pytest.raises(KeyError, match="unknown table 'nope'"):
        tables.render("<!-- table:nope -->\n<!-- /table:nope -->\n")
