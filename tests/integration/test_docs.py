"""The documentation: it builds with warnings as errors, every ```python block of every page runs, the
built pages render in a headless browser, every page of the table of contents exists, and no page
cites material from outside the repository (a specification file, issue numbers, commit hashes)."""

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.markdown_blocks import python_blocks, run_python_blocks

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: the Markdown pages of the docs (docs/notebooks links to the notebooks, which test_notebooks.py runs)
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)
#: the pages the landing page's table of contents lists, in order
INDEX_PAGES = ["guide/install", "guide/first-run", "guide/evaluating", "guide/training", "guide/pyg-models", "guide/auditing",
               "guide/samplers", "guide/diagnostics", "guide/static", "guide/protocols", "guide/distributed",
               "protocol", "api/index", "notebooks", "performance", "quality", "changelog"]
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def build_command(out: Path) -> list[str]:
    """The documented build command (docs/conf.py), into ``out``."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(out)]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The HTML of a build with warnings as errors (one thread; the doctrees stay in the temp folder)."""
    out = tmp_path_factory.mktemp("docs") / "html"
    command = build_command(out) + ["-d", str(out.parent / "doctrees")]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"})
    print(f"docs built in {time.perf_counter() - start:.1f} s")
    assert done.returncode == 0, f"the docs build failed:\n{done.stderr[-20_000:]}"
    return out


def toctree_entries(page: Path) -> list[str]:
    """The entries of every ``{toctree}`` block of the MyST page ``page``, in order."""
    blocks = re.findall(r"^```\{toctree\}\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith(":")]


@pytest.mark.slow
def test_the_docs_build_with_warnings_as_errors(built):
    for page in ("index", "protocol", "api/index", "api/tgeval.eval", "notebooks/01_quickstart", "changelog"):
        assert (built / f"{page}.html").is_file(), page
    api = (built / "api" / "tgeval.eval.html").read_text(encoding="utf-8")
    assert 'id="tgeval.eval.evaluate"' in api  # described from its docstring
    assert 'href="tgeval.eval.html#tgeval.eval.evaluate"' in (built / "api" / "tgeval.html").read_text("utf-8")


def test_the_registry_tables_list_every_registered_name_with_its_options(built):
    """``tgeval-registry`` renders each registry's ``describe()``: every name, its help and its options (a default
    may show as written in the source, ``"query"`` for ``'query'``: autodoc preserves defaults)."""
    listing = ("import json, tgeval.data.formats as f, tgeval.models.registry as m, tgeval.samplers.registry as s; "
               "print(json.dumps({k: [[x.name, x.help, x.options] for x in r.describe()] "
               "for k, r in zip('mfs', (m, f, s))}))")
    rows = json.loads(subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True,
                                     cwd=REPO).stdout)  # as a fresh process registers them: no test's models
    for page, kind in (("guide/evaluating", "m"), ("guide/evaluating", "f"), ("guide/samplers", "s")):
        text = html.unescape(re.sub(r"<[^>]+>", "", (built / f"{page}.html").read_text(encoding="utf-8")))
        text = text.replace('"', "'")
        for name, help, options in rows[kind]:
            assert f"{name}\n{help}\n{options or 'none'}" in text, (page, name)


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(DOCS)))
def test_every_python_block_of_a_page_runs_in_order(page, tmp_path, one_thread):
    run_python_blocks(page, tmp_path, name=f"docs_{page.stem.replace('-', '_')}")


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no Chromium binary (chromium, chromium-browser or google-chrome) on "
                                            "this machine: the built pages are not rendered")
@pytest.mark.parametrize("page", ["index", "api/tgeval.eval"])
def test_chromium_renders_a_page_that_is_not_blank(built, page, tmp_path):
    import matplotlib.image

    shot = tmp_path / "page.png"
    done = subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", f"--screenshot={shot}",
                           "--window-size=1200,2000", "--enable-logging=stderr", "--v=0",
                           (built / f"{page}.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr
    assert "Uncaught" not in done.stderr and "Failed to load resource" not in done.stderr, done.stderr
    assert matplotlib.image.imread(shot).std() > 0.02  # not a blank page


_PROBE = """<script>window.addEventListener("load", () => setTimeout(() => {
  const root = document.documentElement, overflow = root.scrollWidth - root.clientWidth;
  const math = document.querySelectorAll("mjx-container").length;
  const out = document.createElement("pre");
  out.textContent = "tgeval-probe overflow " + overflow + " math " + math;
  document.body.appendChild(out);
}, 2000));</script>"""


def _probe(page: Path) -> tuple[int, int]:
    """(pixels of horizontal overflow, formulas MathJax typeset) of the built ``page``, loaded in headless
    Chromium in a 1000-pixel-wide window from a copy next to it (so that its relative links resolve)."""
    copy = page.with_name(f"probe-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    done = subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom",
                           "--window-size=1000,2000", "--virtual-time-budget=15000", copy.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r"tgeval-probe overflow (-?\d+) math (\d+)", done.stdout)
    assert found, done.stderr
    return int(found.group(1)), int(found.group(2))


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no Chromium binary (chromium, chromium-browser or google-chrome) on "
                                            "this machine: the built pages are not rendered")
def test_pages_do_not_overflow_and_math_is_typeset_offline(built):
    for page in ("index", "api/tgeval.eval", "api/tgeval.static", "protocol", "guide/samplers"):
        overflow, math = _probe(built / f"{page}.html")
        assert overflow <= 0, f"{page}: {overflow} px wider than the window"
        if page == "protocol":
            assert math > 20  # MathJax is served from the build, not from a network


def test_the_landing_page_lists_every_page_and_every_listed_page_exists():
    listed = toctree_entries(DOCS / "index.md")
    assert listed == INDEX_PAGES
    for index in (DOCS / "index.md", DOCS / "api" / "index.md", DOCS / "notebooks.md"):
        for entry in toctree_entries(index):
            assert any((index.parent / f"{entry}{suffix}").is_file() for suffix in (".md", ".ipynb")), (index, entry)


def test_the_protocol_reference_keeps_its_thirteen_numbered_sections():
    """The code cites "protocol reference §N": section N keeps its number and its target ``protocol-N``."""
    text = (DOCS / "protocol.md").read_text(encoding="utf-8")
    found = re.findall(r"^\(protocol-(\d+)\)=\n## (\d+)\. ", text, flags=re.M)
    assert found == [(str(n), str(n)) for n in range(1, 14)]


def _commit_hashes() -> set[str]:
    """Every commit of the checkout's history (empty outside a git checkout)."""
    try:
        done = subprocess.run(["git", "rev-list", "--all"], capture_output=True, text=True, cwd=REPO, timeout=60)
    except OSError:
        return set()
    return set(done.stdout.split()) if done.returncode == 0 else set()


def test_no_page_cites_a_specification_file_an_issue_or_a_commit():
    """The docs stand on their own: no "SPEC", no issue or pull-request numbers, no commit hashes (in the
    pages, in conf.py and in the notebooks the docs render)."""
    commits = _commit_hashes()
    for path in [*PAGES, DOCS / "conf.py", *sorted((REPO / "notebooks").glob("*.ipynb"))]:
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(REPO)
        assert not re.search(r"\bSPEC\b", text), f"{where} mentions SPEC"
        issue = re.search(r"(?<![\w&/#])#\d+\b|\b(?:issue|pull request|PR|GH)[ -]?#?\d+\b", text, flags=re.I)
        assert issue is None, f"{where} cites an issue: {issue.group(0)!r}"
        for token in re.findall(r"\b[0-9a-f]{7,40}\b", text):
            assert not any(commit.startswith(token) for commit in commits), f"{where} cites commit {token}"
