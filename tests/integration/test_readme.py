"""Every Python block of the README runs, in order, in one namespace (as a reader would paste
them), on a small DGB file named as the README's ``ml_uci.csv``: a wrong snippet fails here."""

import json
import re

import numpy as np
import torch

from tgeval.models import registry
from tgeval.data.synthetic import generate_events

from tests.helpers import README, readme_python_blocks


def write_dgb(path, num_events=1_200, num_nodes=60, seed=0):
    """A DGB ``ml_<name>.csv`` file (header ``,u,i,ts,label,idx``; ids start at 1 as in DGB's files)."""
    data = generate_events(num_events, num_nodes, seed=seed)
    rows = np.stack([data.src.numpy() + 1, data.dst.numpy() + 1, data.t.numpy()], axis=1)
    lines = [",u,i,ts,label,idx"] + [f"{i},{u},{v},{t},0,{i + 1}" for i, (u, v, t) in enumerate(rows.tolist())]
    path.write_text("\n".join(lines) + "\n")


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch, one_thread):
    blocks = readme_python_blocks()
    assert len(blocks) >= 8 and any("class PygTGN" in code for code in blocks)
    write_dgb(tmp_path / "ml_uci.csv")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    torch.manual_seed(0)
    try:
        for i, code in enumerate(blocks):
            exec(compile(code, f"{README}:block{i + 1}", "exec"), namespace)
    finally:
        if "pyg-tgn" in registry.names():  # the README registers its model; other tests build their own
            registry.unregister("pyg-tgn")
    # What the blocks promise, checked on what they produced.
    data, split = namespace["data"], namespace["split"]
    assert namespace["info"].num_nodes == int(max(data.src.max(), data.dst.max())) + 1
    saved = json.loads((tmp_path / "uci-edgebank.json").read_text())
    assert saved["manifest"]["protocol"]["replay"] == "online"
    assert (tmp_path / "uci-edgebank.csv").is_file()
    assert {"last.pt", "best.pt", "timings.json"} <= {p.name for p in (tmp_path / "runs" / "tgn").iterdir()}
    for name in ("result", "continued"):
        mrr = namespace[name].metrics["all_entity"]["mrr"]["micro"]
        assert 0.0 < mrr <= 1.0
    assert namespace["result"].manifest["model"]["name"] == "PygTGN"
    assert list(namespace["iv"].rows) == ["base", "membership", "random", "shuffled"]
    assert namespace["train"].num_events == split.train.end  # the hand-written loop saw the training events only



def test_ci_runs_the_readmes_two_commands():
    """CI (``.ci/run``) runs the README's set-up command, then its test command, which includes the slow tests."""
    block = re.search(r"^## Set up and test\n.*?^```bash\n(.*?)^```", README.read_text(encoding="utf-8"),
                      flags=re.S | re.M).group(1)
    setup, test = block.strip().split("\n")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").split("\n")
    assert setup in ci and test in ci and ci.index(setup) < ci.index(test)
    assert test == "python -m pytest --slow"
