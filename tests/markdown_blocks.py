"""Runs the ```python blocks of a Markdown page (the README, a docs page) as a reader would paste them:
in order, in one namespace, in a folder that holds the small DGB file ``ml_uci.csv`` the pages read."""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import numpy as np
import torch

from tgeval.data.synthetic import generate_events
from tgeval.models import registry

#: the data file the pages' blocks read
DATA_FILE = "ml_uci.csv"


def python_blocks(path: Path) -> list[str]:
    """The source of every fenced ```python block of the Markdown file ``path``, in order."""
    return re.findall(r"^```python\n(.*?)^```", Path(path).read_text(encoding="utf-8"), flags=re.S | re.M)


def write_dgb(path: Path, num_events: int = 1_200, num_nodes: int = 60, seed: int = 0) -> None:
    """A DGB ``ml_<name>.csv`` file (header ``,u,i,ts,label,idx``; ids start at 1 as in DGB's files)."""
    data = generate_events(num_events, num_nodes, seed=seed)
    rows = np.stack([data.src.numpy() + 1, data.dst.numpy() + 1, data.t.numpy()], axis=1)
    lines = [",u,i,ts,label,idx"] + [f"{i},{u},{v},{t},0,{i + 1}" for i, (u, v, t) in enumerate(rows.tolist())]
    Path(path).write_text("\n".join(lines) + "\n")


def run_python_blocks(path: Path, workdir: Path, name: str = "page") -> dict:
    """Runs every ```python block of ``path`` in order in one namespace (``__name__`` = ``name``), from
    ``workdir`` (made to hold :data:`DATA_FILE`), with torch seeded; returns the namespace. The namespace is
    a module's, importable as ``name`` while the blocks run (dataclasses and pickling look classes up there).
    A block that raises fails with its page and block number in the traceback (``<path>:block<i>``).
    Models the blocks register are unregistered afterwards, so no page leaves one for the next."""
    blocks = python_blocks(path)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir / DATA_FILE).exists():
        write_dgb(workdir / DATA_FILE)
    module = types.ModuleType(name)
    namespace = module.__dict__
    models, cwd = set(registry.names()), os.getcwd()
    torch.manual_seed(0)
    os.chdir(workdir)
    sys.modules[name] = module
    try:
        for i, code in enumerate(blocks):
            # dont_inherit: the page's code, not this module's `from __future__ import annotations`
            exec(compile(code, f"{path}:block{i + 1}", "exec", dont_inherit=True), namespace)
    finally:
        os.chdir(cwd)
        del sys.modules[name]
        for added in set(registry.names()) - models:
            registry.unregister(added)
    return namespace
