"""`tgeval report` of a folder that mixes runs: results of one segment measured under other settings (another
seed, K or tie rule) are never one comparison. Each set of settings has its own section, headed by the settings
that tell it from the others, with its own table, K-sweep (Kendall's τ) and bootstrap intervals; results under
the same settings share a section, whichever command wrote them (a `tgeval run` whose TGN replays with
batch-start history and whose heuristics with exact history is one run: history is then each model's default,
the same setting)."""

import json
import re
import shutil

import pytest

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tests.helpers import snap_text

#: result name -> the options of `tgeval evaluate` it was added to the run's folder with
ADDED = {"edgebank-seed1": ["--model", "edgebank", "--seed", "1"], "pa-seed1": ["--model", "pa", "--seed", "1"],
         "pa-k5": ["--model", "pa", "--negatives", "5"], "pa-optimistic": ["--model", "pa", "--ties", "optimistic"],
         "pa-historical": ["--model", "pa", "--sampler", "historical"], "pa-all": ["--model", "pa", "--catalog", "all"],
         "pa-again": ["--model", "pa"]}
RUN = ["edgebank-window(test)", "edgebank-window(val)", "edgebank", "local-global", "node-memory", "pa", "poptrack",
       "popularity", "popularity-global", "popularity-local", "recency-global", "recency-local",
       "recency-popularity-global", "recency-popularity-local", "tgn"]


def in_file_order(names: list[str]) -> tuple[str, ...]:
    """``names`` in the order of their JSON files' names, the page's."""
    return tuple(sorted(names, key=lambda name: f"{name}.json"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    data = root / "events.txt"
    data.write_text(snap_text(generate_events(num_events=900, num_nodes=60, seed=11)))
    run = root / "run"
    assert main(["run", "--data", str(data), "--out", str(run), "--tgn-epochs", "1", "--threads", "1"]) == 0
    mixed = root / "mixed"
    shutil.copytree(run, mixed)
    for name, options in ADDED.items():
        assert main(["evaluate", str(data), "--format", "snap", *options, "--out", str(mixed / f"{name}.json"),
                     "--save-events", str(mixed / f"{name}.csv")]) == 0
    assert main(["report", str(mixed), "--out", str(root / "mixed.html")]) == 0
    return run, (run / "report.html").read_text(encoding="utf-8"), (root / "mixed.html").read_text(encoding="utf-8")


def sections(page: str) -> list[tuple[str, list[str], str]]:
    """(heading, the Models table's rows, the section's text) of each section of ``page``."""
    return [(re.search(r"<h2>(.*?)</h2>", body).group(1), re.findall(r"<tr><td>([^<]*)</td>", body), body)
            for body in re.findall(r"<section>(.*?)</section>", page, flags=re.S)]


def test_one_run_is_one_section(folders):
    run, page, _ = folders
    modes = {json.loads((run / f"{name}.json").read_text())["manifest"]["history"]["mode"] for name in RUN}
    assert modes == {"exact", "batch"}  # the TGN's default history differs from the heuristics'
    (heading, rows, _), = sections(page)
    assert heading.startswith("Test segment: events [") and heading.endswith(")")  # no setting named
    assert tuple(rows) == in_file_order(RUN)


def test_results_under_other_settings_get_their_own_sections_named_by_what_differs(folders):
    run, _, page = folders
    found = {tuple(rows): heading for heading, rows, _ in sections(page)}
    segment = sections(folders[1])[0][0]
    size = {kind: json.loads((run.parent / "mixed" / f"{name}.json").read_text())["manifest"]["catalog"]["size"]
            for kind, name in (("train", "pa"), ("all", "pa-all"))}
    train = f"catalog=train ({size['train']} items)"
    assert found == {
        ("edgebank-seed1", "pa-seed1"): f"{segment}; K=20, ties=average, seed=1, sampler=uniform (catalog=train), "
                                        f"{train}",
        in_file_order(RUN + ["pa-again"]): f"{segment}; K=20, ties=average, seed=0, sampler=uniform (catalog=train), "
                                           f"{train}",
        ("pa-all",): f"{segment}; K=20, ties=average, seed=0, sampler=uniform (catalog=all), catalog=all "
                     f"({size['all']} items)",
        ("pa-historical",): f"{segment}; K=20, ties=average, seed=0, sampler=historical, {train}",
        ("pa-k5",): f"{segment}; K=5, ties=average, seed=0, sampler=uniform (catalog=train), {train}",
        ("pa-optimistic",): f"{segment}; K=20, ties=optimistic, seed=0, sampler=uniform (catalog=train), {train}"}
    assert "6 sections, one per segment and settings" in page
    assert all("measured under other settings (they differ in K, ties, seed, sampler, catalog)" in body
               for *_, body in sections(page))


def test_each_comparison_stays_within_its_section(folders):
    _, _, page = folders
    for _, rows, body in sections(page):
        assert body.count("<table>") == 1 and body.count("<td>[0.") == len(rows)  # an interval per row
        taus = re.search(r"and the whole catalog&#x27;s: (.*?)\.</figcaption>", body).group(1)  # Kendall's τ
        assert taus.startswith("K=1: ") == (len(rows) > 1)  # one row: no order to compare with another section's
        assert ("none (one model has no order to compare)" in taus) == (len(rows) == 1)
        names = {"sampled": {("pa-k5",): "MRR (K=5, uniform)", ("pa-historical",): "MRR (K=20, historical)"}.get(
                     tuple(rows), "MRR (K=20, uniform)"),
                 "ties": "optimistic ties" if rows == ["pa-optimistic"] else "average ties"}
        assert f"<th>{names['sampled']}</th>" in body and names["ties"] in body
        assert "protocol per row" not in body
