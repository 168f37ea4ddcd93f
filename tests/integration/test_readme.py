"""Every Python block of the README runs, in order, in one namespace (as a reader would paste
them), on a small DGB file named as the README's ``ml_uci.csv``: a wrong snippet fails here; and CI
runs the README's two set-up commands."""

import json
import re

import torch

from tests.helpers import README
from tests.markdown_blocks import python_blocks, run_python_blocks


def test_readme_python_blocks_run_in_order(tmp_path, one_thread):
    # evaluate a PyG model; swap samplers in training; all-entity evaluation on a GPU (or the CPU)
    assert len(python_blocks(README)) == 3
    namespace = run_python_blocks(README, tmp_path, "readme")
    # What the blocks promise, checked on what they produced.
    data = namespace["data"]
    assert namespace["info"].num_nodes == int(max(data.src.max(), data.dst.max())) + 1
    saved = json.loads((tmp_path / "uci-tgn.json").read_text())
    assert saved["manifest"]["protocol"]["replay"] == "online"
    assert saved["manifest"]["protocol"]["num_negatives"] == 20
    for metrics in (namespace["result"].metrics["sampled"], namespace["result"].metrics["all_entity"]):
        assert 0.0 < metrics["mrr"]["micro"] <= 1.0
    assert set(namespace["trained"]) == {"uniform", "historical"}
    ranked = namespace["ranked"]  # the last model of the GPU example, ranked against the catalog only
    assert "sampled" not in ranked.metrics and 0.0 < ranked.metrics["all_entity"]["mrr"]["micro"] <= 1.0
    assert namespace["device"] == ("cuda" if torch.cuda.is_available() else "cpu")


def test_ci_runs_the_readmes_two_commands():
    """CI (``.ci/run``) runs the README's set-up command, then its test command, which includes the slow tests."""
    block = re.search(r"^## Set up and test\n.*?^```bash\n(.*?)^```", README.read_text(encoding="utf-8"),
                      flags=re.S | re.M).group(1)
    setup, test = block.strip().split("\n")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").split("\n")
    assert setup in ci and test in ci and ci.index(setup) < ci.index(test)
    assert test == "python -m pytest --slow"
