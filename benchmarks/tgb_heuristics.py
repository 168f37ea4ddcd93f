"""EdgeBank and the parameter-free heuristics on tgbl-wiki: TGB's protocol beside tgeval's own.

Each cell is the test MRR of one ``tgeval evaluate`` command, run here as users type it (a fresh
process, ``--out`` into a temporary folder, the MRR read back from its result JSON):

* **``--preset tgb``**: ``tgeval evaluate ml_wikipedia.txt --format snap --model M --preset tgb [OPTIONS]``
  (online replay, history as of the batch start, the recency and popularity heuristics' per-event
  history excepted as their leaderboard figures, batches of 200, exact ranking over every page, TGB's
  splits);
* **tgeval's own protocol**: the same command without ``--preset tgb`` (exact history, all-entity over
  the training catalog).

The models are the registry's EdgeBank variants, the recency and popularity heuristics, local (per pair)
and global (per destination), their combinations and PopTrack; ``--window`` and ``--half-life`` as named
in the rows.
``benchmarks/results/tgb_heuristics.json`` (``--out``) is rendered in docs/quality.md.

Run: python benchmarks/tgb_heuristics.py [--data-dir DIR] [--threads 1] [--out FILE]
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


#: (row label, model and its options under ``--preset tgb``, under tgeval's own protocol or ``None``,
#: TGB's leaderboard figure or "")
ROWS = (
    ("`edgebank`", ["--model", "edgebank"], ["--model", "edgebank"], "0.495"),
    ("`edgebank-window`", ["--model", "edgebank-window", "--window", "tgb"],
     ["--model", "edgebank-window", "--window", "val"], "0.571 (TGB's window)"),
    ("`recency-local` (−time since the pair was last seen)", ["--model", "recency-local"],
     ["--model", "recency-local"], ""),
    ("`popularity-local` (the pair's past events)", ["--model", "popularity-local"], ["--model", "popularity-local"],
     ""),
    ("`popularity-local`, decayed (a half-life of a day)", ["--model", "popularity-local", "--half-life", "86400"],
     None, ""),
    ("`recency-global` (−time since the page was last a destination)", ["--model", "recency-global"],
     ["--model", "recency-global"], ""),
    ("`popularity-global` (the page's past events)", ["--model", "popularity-global"],
     ["--model", "popularity-global"], ""),
    ("`local-global` (the pair's last time, ties by the page's)", ["--model", "local-global"],
     ["--model", "local-global"], "0.821 (Heuristic (LocalGlobal))"),
    ("`recency-popularity-local` (the pair's last time, ties by its count)", ["--model", "recency-popularity-local"],
     ["--model", "recency-popularity-local"], ""),
    ("`recency-popularity-global` (the page's last time, ties by its count)",
     ["--model", "recency-popularity-global"], ["--model", "recency-popularity-global"], ""),
    ("`poptrack` (the page's events, decayed by 0.36 per 200 events)", ["--model", "poptrack"], None, ""),
)


def options(arguments: list[str]) -> str:
    """``arguments`` as the row shows them (the model's options, without ``--model M``)."""
    rest = arguments[2:]
    return f" (`{' '.join(rest)}`)" if rest else ""


def test_mrr(path: Path, arguments: list[str], threads: int, folder: Path) -> float:
    """The test MRR (all-entity, micro) of ``tgeval evaluate path --format snap ARGUMENTS``."""
    out = folder / "result.json"
    command = [sys.executable, "-m", "tgeval", "evaluate", str(path), "--format", "snap", *arguments,
               "--out", str(out)]
    subprocess.run(command, check=True, env=command_env(threads), stdout=subprocess.DEVNULL)
    mrr = json.loads(out.read_text(encoding="utf-8"))["metrics"]["all_entity"]["mrr"]["micro"]
    out.unlink()
    return mrr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("EdgeBank and the heuristics on tgbl-wiki, TGB's protocol beside tgeval's")
    path = required_dataset("wikipedia")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, preset, own, leaderboard in ROWS:
            tgb = test_mrr(path, [*preset, "--preset", "tgb"], args.threads, Path(folder))
            ours = "" if own is None else f"{test_mrr(path, own, args.threads, Path(folder)):.4f}{options(own)}"
            rows.append([label, leaderboard, f"{tgb:.4f}{options(preset)}", ours])
            print(f"  {label}: {rows[-1][2:]}", flush=True)
    print_table(["model", "TGB leaderboard", "`--preset tgb`",
                 "tgeval's own protocol (exact history, all-entity over the training catalog)"], rows,
                title="Test MRR on tgbl-wiki (micro, average ties); options of the command in brackets.")
    save_results(args)


if __name__ == "__main__":
    main()
