"""`tgeval report`: one self-contained HTML page of a results folder, checked by parsing it (every
image is an embedded PNG that decodes, nothing is loaded from elsewhere, the numbers are the
results') and, where Chromium is installed, by loading it in a headless browser."""

import base64
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import matplotlib.image
import pytest

from tgeval.cli import main
from tgeval.data.synthetic import generate_events


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    data = generate_events(num_events=2000, num_nodes=100, seed=3)
    events = folder / "events.txt"
    events.write_text("".join(f"{u} {v} {t}\n" for u, v, t in zip(data.src.tolist(), data.dst.tolist(),
                                                                  data.t.tolist())))
    out = folder / "results"
    for model in ("edgebank", "pa"):
        assert main(["evaluate", str(events), "--format", "snap", "--model", model, "--out",
                     str(out / f"{model}.json"), "--save-events", str(out / f"{model}.csv")]) == 0
    assert main(["evaluate", str(events), "--format", "snap", "--model", "popularity", "--out",
                 str(out / "popularity.json")]) == 0  # no per-event file: in the table, not in the K-sweep
    assert main(["diagnose", str(events), "--format", "snap", "--out", str(out)]) == 0
    (out / "notes.json").write_text(json.dumps({"comment": "not a result"}))
    assert main(["report", str(out), "--out", str(folder / "report.html")]) == 0
    return out, (folder / "report.html").read_text(encoding="utf-8")


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
    assert len(images) == 6  # K-sweep, time profile, strata, two Birth-Death diagrams, novelty
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
    assert page.count("<td>[0.") == 2  # intervals for the two results with per-event files
    assert "notes.json: not a result JSON" in page  # listed, not dropped
    assert "diagnose.json" not in page.split("Files not reported")[-1]
    assert "test segment" in page and "Kendall" in page and "surprise" in page


def test_an_empty_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert "no result JSON" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
                    reason="no Chromium on this machine (the page is checked by parsing it instead)")
def test_chromium_renders_the_page(results, tmp_path):
    browser = next(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b))
    out, _ = results
    shot = tmp_path / "page.png"
    done = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", f"--screenshot={shot}",
                           "--window-size=1200,3000", "--enable-logging=stderr", "--v=0",
                           (out.parent / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr
    assert "Uncaught" not in done.stderr and "Failed to load resource" not in done.stderr
    assert matplotlib.image.imread(shot).std() > 0  # a non-blank screenshot
    # every image decodes in the browser itself: a probe appended to a copy of the page counts them after load
    page = (out.parent / "report.html").read_text(encoding="utf-8")
    assert _undecoded_images(browser, page, tmp_path / "probe.html") == (page.count("<img "), 0)
    broken = '<img src="data:image/png;base64,iVBORw0KGgoAAAAbad">'  # the probe can fail: a damaged PNG
    assert _undecoded_images(browser, page.replace("</body>", broken + "</body>"), tmp_path / "broken.html") == (
        page.count("<img ") + 1, 1)


_PROBE = """<script>window.addEventListener("load", () => {
  const images = [...document.images], bad = images.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  const out = document.createElement("pre");
  out.textContent = "tgeval-probe images " + images.length + " undecoded " + bad;
  document.body.appendChild(out);
});</script>"""


def _undecoded_images(browser, page, path):
    """(images, images the browser could not decode) of ``page``, loaded in headless Chromium."""
    path.write_text(page.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    done = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom",
                           "--virtual-time-budget=10000", path.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r"tgeval-probe images (\d+) undecoded (\d+)", done.stdout)
    assert found, done.stderr
    return int(found.group(1)), int(found.group(2))


def test_results_without_an_all_entity_pass_or_negatives_are_reported(results, tmp_path):
    out, _ = results
    events = out.parent / "events.txt"
    folder = tmp_path / "partial"
    assert main(["evaluate", str(events), "--format", "snap", "--model", "edgebank", "--no-all-entity",
                 "--out", str(folder / "sampled.json"), "--save-events", str(folder / "sampled.csv")]) == 0
    assert main(["evaluate", str(events), "--format", "snap", "--model", "pa", "--negatives", "0",
                 "--out", str(folder / "exact.json")]) == 0
    assert main(["report", str(folder), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<td>sampled</td>" in page and "<td>exact</td>" in page
    assert "need per-event files" in page  # the sampled-only events file has no all-entity ranks to sweep
