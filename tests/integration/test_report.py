"""`tgeval report`: one self-contained HTML page of a results folder, checked by parsing it (every
image is an embedded PNG that decodes, nothing is loaded from elsewhere, the numbers are the
results', each segment has its own section and table, the title is the data's name) and, where
Chromium is installed, by loading it in a headless browser (no horizontal overflow)."""

import base64
import html
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from html.parser import HTMLParser

import matplotlib.image
import pytest
import torch

from tgeval.cli.program import main
from tgeval.data.synthetic import generate_events
from tgeval.diagnostics.comparison import compare, load_events
from tgeval.eval.result import Result
from tgeval.core.choices import DEFAULT_BLOCK as BLOCK
from tgeval.diagnostics.report import _interval, _k_sweep_figure, _strata_figure, _time_profile_figure, build_report
from tests.helpers import snap_text
from tests.plot_checks import assert_legends_outside


#: a data file in a deep folder, both with long names: the page must show neither the path nor overflow
LONG_NAME = "interactions_of_a_dataset_with_an_unusually_long_name_that_has_no_spaces_" + "x" * 60 + ".txt"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    data = generate_events(num_events=2000, num_nodes=100, seed=3)
    events = folder / ("a_folder_with_a_long_name_" * 6) / ("and_another_one_" * 8) / LONG_NAME
    events.parent.mkdir(parents=True)
    events.write_text(snap_text(data))
    out = folder / "results"
    for model in ("edgebank", "pa"):
        assert main(["evaluate", str(events), "--format", "snap", "--model", model, "--out",
                     str(out / f"{model}.json"), "--save-events", str(out / f"{model}.csv")]) == 0
    assert main(["evaluate", str(events), "--format", "snap", "--model", "popularity", "--out",
                 str(out / "popularity.json")]) == 0  # no per-event file: in the table, not in the K-sweep
    assert main(["evaluate", str(events), "--format", "snap", "--model", "node-memory", "--segment", "val",
                 "--out", str(out / "memory_val.json"), "--save-events", str(out / "memory_val.csv")]) == 0
    assert main(["diagnose", str(events), "--format", "snap", "--out", str(out)]) == 0
    (out / "notes.json").write_text(json.dumps({"comment": "not a result"}))
    assert main(["report", str(out), "--out", str(folder / "report.html")]) == 0
    return out, (folder / "report.html").read_text(encoding="utf-8")


def test_a_segment_of_one_block_gets_no_interval():
    """One block of events resamples to itself: the page says there is no interval, not a zero-width one."""
    def table(n):
        return {"t": torch.arange(n), "rank": torch.arange(n) % 7 + 1, "covered": torch.ones(n, dtype=torch.bool)}
    assert _interval(table(BLOCK), "rank") == f"none: {BLOCK} events, one block of {BLOCK}"
    low, high = (float(x) for x in re.findall(r"[\d.]+", _interval(table(BLOCK + 1), "rank")))
    assert low < high


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_the_page_is_self_contained_and_every_image_decodes(results):
    _, page = results
    parser = _Tags()
    parser.feed(page)
    images = [attrs["src"] for tag, attrs in parser.tags if tag == "img"]
    assert len(images) == 9  # per segment K-sweep, time profile, strata; two Birth-Death diagrams, novelty
    for src in images:
        assert src.startswith("data:image/png;base64,")
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(src.split(",", 1)[1])), format="png")
        assert pixels.shape[0] > 100 and pixels.std() > 0  # decoded, and not a blank image
    external = [attrs for tag, attrs in parser.tags if tag in ("script", "link", "iframe")
                or any(k in ("href", "src") and not v.startswith("data:") for k, v in attrs.items())]
    assert not external


def test_the_page_holds_the_results_numbers_and_manifests(results):
    out, page = results
    for model in ("edgebank", "pa", "popularity"):
        result = json.loads((out / f"{model}.json").read_text())
        mrr = result["metrics"]["all_entity"]["mrr"]["micro"]
        assert re.search(rf"<td>{model}</td><td>[^<]*</td><td>{mrr:.4f}</td>", page)
        assert f"<summary>{model}</summary>" in page
    assert page.count("<td>[0.") == 3  # intervals for the three results with per-event files
    assert "notes.json: not a result JSON" in page  # listed, not dropped
    assert "diagnose.json" not in page.split("Files not reported")[-1]
    assert "test segment" in page and "Kendall" in page and "surprise" in page


def _sections(page):
    """The page's segment sections, in order."""
    return re.findall(r"<section>(.*?)</section>", page, flags=re.S)


def test_each_segment_has_its_own_section_and_results_of_segments_are_never_ranked_together(results):
    out, page = results
    val, test = (json.loads((out / f"{name}.json").read_text())["manifest"]["segment"]
                 for name in ("memory_val", "edgebank"))
    sections = _sections(page)
    assert len(sections) == 2 and page.count("<table>") == 2  # one Models table per segment
    for section, segment, word, models in ((sections[0], val, "Validation", ["memory_val"]),
                                           (sections[1], test, "Test", ["edgebank", "pa", "popularity"])):
        assert f"<h2>{word} segment: events [{segment['start']}, {segment['end']})</h2>" in section
        assert f"{segment['num_events']} events from {segment['t_first']:g} to {segment['t_last']:g}" in section
        assert section.count("<table>") == 1 and re.findall(r"<tr><td>([^<]*)</td>", section) == models
        assert section.count("<figure>") == 3  # its own K-sweep, time profile and strata
        assert section.count("Kendall") == 1  # the K-sweep's model order is of this segment's models only
    assert "memory_val" not in sections[1] and "edgebank" not in sections[0]


def test_the_title_is_the_data_name_and_no_path(results):
    out, page = results
    full = json.loads((out / "edgebank.json").read_text())["manifest"]["data"]["name"]
    assert full.endswith("/" + LONG_NAME)  # the CLI records the path it read
    assert re.search(r"<h1>(.*?)</h1>", page).group(1) == LONG_NAME
    assert re.search(r"<title>(.*?)</title>", page).group(1) == f"{LONG_NAME}: tgeval report"
    assert full not in page.split("<h2>Manifests</h2>")[0]  # the full path only in the manifests


def test_captions_and_headers_name_the_protocol(results):
    _, page = results
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page, flags=re.S)
    assert len(captions) == 6 and all("average ties" in c for c in captions)
    assert all("catalog train, 50 items" in c for c in captions)  # every plot names the catalog of its ranks
    for name in ("MRR (K=20, uniform)", "all-entity MRR (catalog train, 50 items)", "AP (K=20, uniform)",
                 "all-entity Hits@10 (catalog train, 50 items)"):  # protocol.metric_name's names
        assert f"<th>{name}</th>" in page


@pytest.mark.parametrize("name, title", [(None, "report"), ("", "report"), ("/data/tgb/ml_uci.csv", "ml_uci.csv")])
def test_the_title_falls_back_to_the_folder_name_and_cuts_paths(results, tmp_path, name, title):
    out, _ = results
    folder = tmp_path / "report"
    folder.mkdir()
    result = json.loads((out / "popularity.json").read_text())
    result["manifest"]["data"]["name"] = name
    (folder / "popularity.json").write_text(json.dumps(result))
    assert re.search(r"<h1>(.*?)</h1>", build_report(folder)).group(1) == title


def test_the_report_plots_keep_their_legends_off_the_data(results):
    out, _ = results
    tables = {name: load_events(out / f"{name}.json") for name in ("edgebank", "pa")}
    profile = _time_profile_figure(tables)
    for fig in (_k_sweep_figure(compare(tables)), profile,
                _strata_figure({name: Result.load(out / f"{name}.json") for name in ("edgebank", "pa", "popularity")})):
        assert_legends_outside(fig)
    assert profile.axes[0].get_xlabel() == "time: the stream's own time units"  # times 0..2012: shown as they are
    tables = {name: {**table, "t": table["t"] * 3600 + 1_082_008_561} for name, table in tables.items()}
    assert _time_profile_figure(tables).axes[0].get_xlabel() == "time: UTC date (from Unix seconds)"


def test_results_of_two_data_sets_get_their_own_sections_named_by_their_data(tmp_path):
    folder = tmp_path / "two"
    for name, seed in (("first.txt", 1), ("second.txt", 2)):
        data = generate_events(num_events=600, num_nodes=100, seed=seed)
        (tmp_path / name).write_text(snap_text(data))
        assert main(["evaluate", str(tmp_path / name), "--format", "snap", "--model", "popularity", "--out",
                     str(folder / f"{Path(name).stem}.json")]) == 0
    page = build_report(folder)
    assert re.search(r"<h1>(.*?)</h1>", page).group(1) == "first.txt, second.txt"
    sections = _sections(page)  # the same segment name and range, but other events: never one table
    assert len(sections) == 2 and [re.findall(r"<tr><td>([^<]*)</td>", s) for s in sections] == [["first"], ["second"]]
    assert " of first.txt (fingerprint " in sections[0] and " of second.txt (fingerprint " in sections[1]


def test_a_given_comparison_serves_the_segment_of_its_models_only(results):
    out, page = results
    comparison = compare({name: load_events(out / f"{name}.json") for name in ("edgebank", "pa")})
    comparison["k_sweep"]["kendall_tau"] = [0.25] * len(comparison["k_sweep"]["K"])  # as `tgeval run` passes it
    val, test = _sections(build_report(out, comparison))
    assert "K=1: 0.25" in test and val == _sections(page)[0]  # the validation segment's is computed


def test_an_empty_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert "no result JSON" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
                    reason="no Chromium on this machine (the page is checked by parsing it instead)")
def test_chromium_renders_the_page_without_horizontal_overflow(results, tmp_path):
    browser = next(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b))
    out, _ = results
    shot = tmp_path / "page.png"
    done = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", f"--screenshot={shot}",
                           "--window-size=1200,3000", "--enable-logging=stderr", "--v=0",
                           (out.parent / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr
    assert "Uncaught" not in done.stderr and "Failed to load resource" not in done.stderr
    assert matplotlib.image.imread(shot).std() > 0  # a non-blank screenshot
    # every image decodes in the browser itself and nothing is wider than the window: a probe appended to a copy
    # of the page counts them after load
    page = (out.parent / "report.html").read_text(encoding="utf-8")
    assert _probe(browser, page, tmp_path / "probe.html") == (page.count("<img "), 0, 0)
    broken = '<img src="data:image/png;base64,iVBORw0KGgoAAAAbad"><div style="width: 3000px">wide</div>'
    images, undecoded, overflow = _probe(browser, page.replace("</body>", broken + "</body>"), tmp_path / "b.html")
    assert (images, undecoded) == (page.count("<img ") + 1, 1) and overflow > 0  # the probe can fail


_PROBE = """<script>window.addEventListener("load", () => {
  const images = [...document.images], bad = images.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  const root = document.documentElement, overflow = root.scrollWidth - root.clientWidth;
  const out = document.createElement("pre");
  out.textContent = "tgeval-probe images " + images.length + " undecoded " + bad + " overflow " + overflow;
  document.body.appendChild(out);
});</script>"""


def _probe(browser, page, path):
    """(images, images the browser could not decode, pixels of horizontal overflow) of ``page``, loaded in
    headless Chromium in a 1000-pixel-wide window."""
    path.write_text(page.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    done = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom",
                           "--window-size=1000,2000", "--virtual-time-budget=10000", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r"tgeval-probe images (\d+) undecoded (\d+) overflow (-?\d+)", done.stdout)
    assert found, done.stderr
    return tuple(int(value) for value in found.groups())


def test_results_without_an_all_entity_pass_or_negatives_are_reported(results, tmp_path):
    out, _ = results
    events = json.loads((out / "edgebank.json").read_text())["manifest"]["data"]["name"]  # the path read
    folder = tmp_path / "partial"
    assert main(["evaluate", str(events), "--format", "snap", "--model", "edgebank", "--no-all-entity",
                 "--out", str(folder / "sampled.json"), "--save-events", str(folder / "sampled.csv")]) == 0
    assert main(["evaluate", str(events), "--format", "snap", "--model", "pa", "--negatives", "0",
                 "--out", str(folder / "exact.json")]) == 0
    assert main(["report", str(folder), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<td>sampled</td>" in page and "<td>exact</td>" in page
    assert "need per-event files" in page  # the sampled-only events file has no all-entity ranks to sweep
    assert "<th>MRR (K=20, uniform)</th>" in page  # the one result with a sampled pass names the column
    assert main(["evaluate", str(events), "--format", "snap", "--model", "pa", "--negatives", "5", "--no-all-entity",
                 "--out", str(folder / "k5.json")]) == 0
    page = build_report(folder)  # K=20 and K=5 rows: each K its own section, its column named with it
    assert "<th>MRR (K=5, uniform)</th>" in page and "<th>MRR (K=20, uniform)</th>" in page


def test_results_on_training_events_are_reported_only_when_allowed(tmp_path, capsys):
    """A checkpoint trained on a 0.9 split, scored on the default test segment (allowed at evaluation): compare and
    report refuse its result unless told, and then say so."""
    events = tmp_path / "events.txt"
    events.write_text(snap_text(generate_events(num_events=900, num_nodes=60, seed=2)))
    assert main(["train", str(events), "--format", "snap", "--model", "tgn", "--epochs", "1", "--threads", "1",
                 "--split", "0.9,0.05,0.05", "--checkpoint-dir", str(tmp_path / "run")]) == 0
    out = tmp_path / "results"
    for name, model, extra in (("tgn", str(tmp_path / "run" / "last.pt"), ["--allow-trained-events"]),
                               ("edgebank", "edgebank", [])):
        assert main(["evaluate", str(events), "--format", "snap", "--model", model, *extra, "--out",
                     str(out / f"{name}.json"), "--save-events", str(out / f"{name}.csv")]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "plain.html")]) == 0
    page = html.unescape((tmp_path / "plain.html").read_text(encoding="utf-8"))
    assert re.search(r"<li>tgn.json: \d+ of its events lie in its checkpoint's training range \(allowed at "
                     r"evaluation\): pass --allow-trained-events", page) and "<td>tgn</td>" not in page
    assert main(["report", str(out), "--out", str(tmp_path / "allowed.html"), "--allow-trained-events"]) == 0
    page = (tmp_path / "allowed.html").read_text(encoding="utf-8")
    assert "<td>tgn</td>" in page and "tgn may measure events its model was trained on" in page
    assert main(["compare", str(out / "tgn.json"), str(out / "edgebank.json"), "--allow-trained-events", "--out",
                 str(tmp_path / "c.json")]) == 0
    assert "note: tgn: " in capsys.readouterr().out
    assert set(json.loads((tmp_path / "c.json").read_text())["trained_events"]) == {"tgn"}


def _hostile(result: dict, how: str) -> str:
    """The text of ``result`` (a result JSON) edited as a hostile or broken file would be."""
    if how == "deep nesting":
        return '{"manifest": ' + "[" * 50_000 + "]" * 50_000 + ', "metrics": {}}'
    edited = json.loads(json.dumps(result))
    if how == "markup in a number":
        edited["manifest"]["segment"]["num_events"] = "<script>alert(1)</script>"
    elif how == "markup in the data's name":
        edited["manifest"]["data"]["name"] = "<script>alert(2)</script>"
    elif how == "missing segment":
        del edited["manifest"]["segment"]
    elif how == "a list of metrics":
        edited["metrics"] = [1, 2]
    elif how == "a component that is no sampler":
        edited["manifest"]["sampler"]["components"] = [1]
    return json.dumps(edited)


HOSTILE = {"markup in a number": r"result.manifest.segment.num_events is text \(.*\), expected a whole number",
           "missing segment": r"result.manifest.segment is missing",
           "a list of metrics": r"result.metrics is a list, expected an object",
           "a component that is no sampler": r"result.manifest.sampler.components\[0\] is a whole number, expected an "
                                             r"object",
           "deep nesting": r"nested deeper than any result \(more than 64 levels\)"}


@pytest.mark.parametrize("how", list(HOSTILE))
def test_a_broken_or_hostile_result_is_listed_with_the_reason_never_run_into_the_page(results, tmp_path, capsys, how):
    """Every entry the report reads is checked by type when a result is loaded: a file that fails is listed under
    "Files not reported" with the entry that fails, beside the good results; alone, it is a clear error."""
    out, _ = results
    folder = tmp_path / "hostile"
    folder.mkdir()
    shutil.copy(out / "popularity.json", folder / "good.json")
    (folder / "bad.json").write_text(_hostile(json.loads((out / "popularity.json").read_text()), how))
    assert main(["report", str(folder), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script" not in page
    listed = re.search(r"<li>bad.json: not a result JSON: (.*?)</li>", page)
    assert listed and re.search(HOSTILE[how], html.unescape(listed.group(1)))
    (folder / "good.json").unlink()
    assert main(["report", str(folder), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and re.search(rf"InputPathError: .*no result JSON .*bad.json: .*{HOSTILE[how]}", err)


def test_text_from_a_result_is_escaped(results, tmp_path):
    out, _ = results
    folder = tmp_path / "escaped"
    folder.mkdir()
    (folder / "r.json").write_text(_hostile(json.loads((out / "popularity.json").read_text()),
                                            "markup in the data's name"))
    (folder / "diagnose.json").write_text(json.dumps({"lifetimes": {"t_split": "<script>alert(3)</script>"}}))
    page = build_report(folder)
    assert "<script" not in page and "&lt;script&gt;alert(2)" in page
    assert "diagnose.json is not shown: " in page and "lifetimes.t_split is text" in page
