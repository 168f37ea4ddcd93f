"""Static degree bias on the shared datasets: ``tgeval static`` on UCI, Enron, High school and Wikipedia.

Each row is one ``tgeval static`` command, run here as users type it (a fresh process, ``--out`` into
a temporary folder, the figures read back from its ``static.json``): the degree spread σ̂ (the MLE
of a log-normal over the training degrees; per side on a bipartite graph), the analytic PA AUROC
Φ(σ̂), and PA's measured AUROC against uniform and degree-corrected negatives (seed 0, a quarter of
the edges held out as test, heuristics on the training graph, one negative per test edge).
``benchmarks/results/static_degree_bias.json`` (``--out``) is rendered in docs/quality.md.

Run: python benchmarks/static_degree_bias.py [--data-dir DIR] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401  (puts the repository root on sys.path)
from _common import (add_run_args, apply_common_args, command_env, print_header, print_table, required_dataset,
                     save_results)

from tgeval.data.datasets import DATASET_FILES

#: (row label, dataset, the command's options after the file)
ROWS = (
    ("UCI", "uci", ["--format", "dgb"]),
    ("Enron", "enron", ["--format", "dgb"]),
    ("High school", "highschool", ["--format", "sociopatterns", "--remap"]),
    ("Wikipedia (bipartite)", "wikipedia", ["--format", "snap", "--bipartite"]),
)


def static_report(path: Path, arguments: list[str], threads: int, folder: Path) -> dict:
    """``static.json`` of ``tgeval static path ARGUMENTS --out folder``."""
    command = [sys.executable, "-m", "tgeval", "static", str(path), *arguments, "--out", str(folder)]
    subprocess.run(command, check=True, env=command_env(threads), stdout=subprocess.DEVNULL)
    return json.loads((folder / "static.json").read_text(encoding="utf-8"))


def sigma_cell(report: dict) -> str:
    """σ̂, or each side's σ̂ on a bipartite graph."""
    sides = report.get("sigma_sides")
    if sides is None:
        return f"{report['sigma']:.3f}"
    return f"{sides['source']['sigma']:.3f} / {sides['destination']['sigma']:.3f} (users / pages)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("Static degree bias on the shared datasets (tgeval static)")
    rows = []
    for label, name, arguments in ROWS:
        path = required_dataset(name)
        with tempfile.TemporaryDirectory() as folder:
            report = static_report(path, arguments, args.threads, Path(folder))
        shown = f"../shared/datasets/{DATASET_FILES[name]}"
        rows.append([label, f"{report['data']['num_nodes']:,}", f"{report['data']['num_edges']:,}", sigma_cell(report),
                     f"{report['pa_auroc_analytic']:.3f}", f"{report['pa_auroc_uniform']:.3f}",
                     f"{report['pa_auroc_degree_corrected']:.3f}",
                     f"`tgeval static {shown} {' '.join(arguments)} --out runs/static-{name}`"])
        print(f"  {label}: {rows[-1][1:7]}", flush=True)
    print_table(["dataset", "nodes", "edges", "σ̂", "Φ(σ̂)", "PA AUROC uniform", "PA AUROC degree-corrected",
                 "command"], rows,
                title="Seed 0, a quarter of the edges held out as test (`--test-fraction 0.25`, the default), "
                      "heuristics on the training graph, one negative per test edge.")
    save_results(args)


if __name__ == "__main__":
    main()
