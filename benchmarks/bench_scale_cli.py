"""The command line end to end on a text file shaped like tgbl-flight: reading, EdgeBank and ``diagnose``.

The stream of :mod:`bench_scale` (18,143 nodes, 1,385 daily timestamps, repeated routes) is written
as a SNAP edge list (``SRC DST T`` per line), then each command runs in a fresh process, as a user
would run it, so its wall time and peak resident memory are its own (``os.wait4``'s ``ru_maxrss``, taken
by a small wrapper process, :data:`MEASURE`):

* ``evaluate --model edgebank --negatives 20 --no-all-entity``: sampled metrics, K = 20 uniform
  negatives over the training catalog;
* ``evaluate --model edgebank --negatives 0 --all-entity``: exact ranking against every item of the
  training catalog;
* ``diagnose``: lifetimes, novelty and the sampled-vs-all-entity diagnostics of the stream.

Every command reads the file itself (no cache). The same commands on a ``--tiny`` file give the fixed
costs (imports, torch), so ``(peak - tiny peak) / (E - tiny E)`` is what each event costs, reading included.
``--threads`` sets the torch threads of the evaluations (``diagnose`` runs with
``OMP_NUM_THREADS`` set to the same number).

Run: python benchmarks/bench_scale_cli.py [--events 50000000] [--tiny 20000] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repository root on sys.path)
from _common import bytes_per_event, command_env, command_line, print_header, print_table
from bench_scale import NODES, flight_like

from tgeval.core.atomic import write_atomic

# Runs the command given in argv from a small process and prints its peak resident memory (``os.wait4``'s
# ``ru_maxrss``) last on stderr. A child spawned straight from this benchmark would report at least this
# benchmark's own resident memory: Linux carries the spawning process's high-water mark across ``exec``.
MEASURE = """import os, subprocess, sys
process = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(process.pid, 0)
print(f"peak KiB {usage.ru_maxrss}", file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))
"""

COMMANDS = {
    "evaluate, sampled K = 20": ["evaluate", "--model", "edgebank", "--negatives", "20", "--no-all-entity"],
    "evaluate, all-entity": ["evaluate", "--model", "edgebank", "--negatives", "0", "--all-entity"],
    "diagnose": ["diagnose"],
}


def peak_bytes(stderr: str) -> int:
    """The peak resident memory (bytes) that :data:`MEASURE` printed as the last line of ``stderr``."""
    return int(stderr.strip().splitlines()[-1].removeprefix("peak KiB ")) * 1024


def write_snap(path: Path, num_events: int, chunk: int = 2**21) -> float:
    """Write the flight-like stream as ``SRC DST T`` lines, ``chunk`` events per formatting step; returns MB."""
    import pandas as pd  # a fast text writer for the benchmark's input only (tgeval never needs it)

    data = flight_like(num_events)
    with open(path, "w") as handle:
        for a in range(0, num_events, chunk):
            b = min(a + chunk, num_events)
            frame = pd.DataFrame({"src": data.src[a:b].numpy(), "dst": data.dst[a:b].numpy(), "t": data.t[a:b].numpy()})
            frame.to_csv(handle, sep=" ", header=False, index=False)
    return path.stat().st_size / 1e6


def run(name: str, data: Path, folder: Path, threads: int) -> dict:
    """Run one command of :data:`COMMANDS` on ``data`` in a fresh process: its seconds, peak and result."""
    folder.mkdir(exist_ok=True)
    out = folder / re.sub(r"\W+", "-", name)
    args = [sys.executable, "-m", "tgeval", *COMMANDS[name], str(data), "--format", "snap"]
    if name == "diagnose":
        args += ["--out", str(out)]
    else:
        args += ["--threads", str(threads), "--out", str(out) + ".json"]
    env = command_env(threads)
    start = time.perf_counter()
    with open(f"{out}.stdout", "w") as stdout, open(f"{out}.stderr", "w") as stderr:
        done = subprocess.run([sys.executable, "-c", MEASURE, *args], cwd=_common.REPO_ROOT, env=env, stdout=stdout,
                              stderr=stderr)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{Path(f'{out}.stderr').read_text()[-4000:]}")
    return {"command": " ".join(["tgeval", *COMMANDS[name]]), "seconds": seconds,
            "stdout": Path(f"{out}.stdout").read_text()[-2000:],
            "peak_mib": peak_bytes(Path(f"{out}.stderr").read_text()) / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000_000)
    parser.add_argument("--tiny", type=int, default=20_000, help="events of the fixed-cost file")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="JSON of every run (written atomically)")
    args = parser.parse_args()
    print_header(f"The command line on a tgbl-flight-shaped SNAP file of {args.events:,} events, {NODES:,} nodes")
    rows, runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = {}
        for label, events in (("tiny", args.tiny), ("full", args.events)):
            start = time.perf_counter()
            files[label] = tmp / f"{label}.txt"
            megabytes = write_snap(files[label], events)
            print(f"wrote {events:,} events ({megabytes:,.0f} MB) in {time.perf_counter() - start:.0f} s", flush=True)
        for name in COMMANDS:
            tiny = run(name, files["tiny"], tmp / "tiny", args.threads)
            full = run(name, files["full"], tmp / "full", args.threads)
            per_event = bytes_per_event(full["peak_mib"] * 2**20, tiny["peak_mib"] * 2**20, args.events, args.tiny)
            runs.append({"name": name, "events": args.events, "tiny_events": args.tiny, "threads": args.threads,
                         "tiny": tiny, "run": full, "bytes_per_event": per_event})
            rows.append([name, f"{args.events:,}", args.threads, f"{full['seconds']:.0f}",
                         f"{full['peak_mib'] / 1024:.2f}", f"{tiny['peak_mib'] / 1024:.2f}", f"{per_event:.0f}"])
            print(json.dumps(runs[-1]), flush=True)
    print_table(["command", "events", "threads", "wall s", "peak GiB", "tiny peak GiB", "B/event"], rows)
    print("wall s: the whole command in a fresh process (start, reading the text file, the work, writing); "
          "B/event: (peak - the same command's peak on the tiny file) / (events - the tiny file's events)")
    if args.out:
        write_atomic(args.out, json.dumps({"command": command_line(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
