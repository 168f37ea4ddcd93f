"""Reading event files: tgeval's readers against pandas' C reader, cold and warm from the binary cache.

Generates into a temporary folder three files of ``--events`` events (sorted times):

* ``snap``: SNAP-like ``SRC DST T`` separated by spaces, two comment lines first;
* ``jodie``: JODIE-like ``user_id,item_id,timestamp,state_label,f0..f3``, times written as floats
  (``123.0``) as JODIE does, four float features (read bipartite with remap, JODIE's default);
* ``csv``: ``src,dst,t,w`` with a header, read by ``format="csv"`` with an explicit column mapping.

For each file it times, best of ``--repeat``, in this process: pandas' ``read_csv(engine="c")`` into
the same dtypes (int64 ids and times, float32 features; ``sep=r"\s+"`` for the whitespace-separated SNAP
file, as tgeval reads it), tgeval's ``read_events`` without a cache
(cold; ``parser`` says which C parser converted the fields, ``info.parser``) and from a filled cache folder (warm,
``info.cache == "hit"``). Peak memory is the growth of the resident-set high-water mark (``VmHWM``) of a fresh
subprocess while it reads the file once, against the bytes of the final arrays. Everything runs on one thread
(``OMP_NUM_THREADS=1``, torch intra-op threads 1, pandas' ``mode.max_threads`` 1 where pandas has it: from 3.1 its
``read_csv`` splits a large file across threads; numpy's parser is single-threaded).

Run: python benchmarks/bench_read.py [--events 3000000] [--repeat 3] [--out benchmarks/results/bench_read.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from _common import add_results_arg, print_header, print_table, save_results  # puts the repository root on sys.path

from tgeval.data.io import read_events

READS = {
    "snap": ("snap", {}),
    "jodie": ("jodie", {}),
    "csv": ("csv", {"src_col": "src", "dst_col": "dst", "t_col": "t", "feature_cols": ["w"]}),
}


def write_files(folder: Path, n: int, seed: int = 0) -> dict[str, Path]:
    """The three files of ``n`` events each."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, 100_000, n), rng.integers(0, 100_000, n)
    t = np.sort(rng.integers(0, 2_700_000, n))
    label = (rng.random(n) < 0.01).astype(np.int64)
    feats = rng.standard_normal((n, 4)).astype(np.float32)
    paths = {name: folder / f"{name}.txt" for name in READS}
    with open(paths["snap"], "w") as out:
        out.write("# generated SNAP-like edge list\n% SRC DST T\n")
        for k in range(0, n, 500_000):
            out.write("".join(f"{a} {b} {c}\n" for a, b, c in zip(src[k:k + 500_000].tolist(),
                                                                     dst[k:k + 500_000].tolist(),
                                                                     t[k:k + 500_000].tolist())))
    with open(paths["jodie"], "w") as out:
        out.write("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n")
        for k in range(0, n, 500_000):
            rows = zip(src[k:k + 500_000].tolist(), (dst[k:k + 500_000] % 1000).tolist(), t[k:k + 500_000].tolist(),
                       label[k:k + 500_000].tolist(), feats[k:k + 500_000].tolist())
            out.write("".join(f"{a},{b},{c}.0,{y},{f[0]:.6f},{f[1]:.6f},{f[2]:.6f},{f[3]:.6f}\n"
                              for a, b, c, y, f in rows))
    with open(paths["csv"], "w") as out:
        out.write("src,dst,t,w\n")
        for k in range(0, n, 500_000):
            rows = zip(src[k:k + 500_000].tolist(), dst[k:k + 500_000].tolist(), t[k:k + 500_000].tolist(),
                       feats[k:k + 500_000, 0].tolist())
            out.write("".join(f"{a},{b},{c},{w:.4f}\n" for a, b, c, w in rows))
    return paths


def read_pandas(name: str, path: Path) -> dict[str, np.ndarray]:
    """The same columns through pandas' C reader, in the final dtypes."""
    if name == "snap":
        frame = pd.read_csv(path, sep=r"\s+", header=None, skiprows=2, engine="c", dtype=np.int64)
        return {"src": frame[0].to_numpy(), "dst": frame[1].to_numpy(), "t": frame[2].to_numpy()}
    if name == "jodie":
        dtypes = {0: np.int64, 1: np.int64, 2: np.float64, 3: np.int64, **{j: np.float32 for j in range(4, 8)}}
        frame = pd.read_csv(path, header=None, skiprows=1, engine="c", dtype=dtypes)
        return {"src": frame[0].to_numpy(), "dst": frame[1].to_numpy(), "t": frame[2].to_numpy().astype(np.int64),
                "y": frame[3].to_numpy(), "msg": frame[[4, 5, 6, 7]].to_numpy()}
    frame = pd.read_csv(path, engine="c", dtype={"src": np.int64, "dst": np.int64, "t": np.int64, "w": np.float32})
    return {"src": frame["src"].to_numpy(), "dst": frame["dst"].to_numpy(), "t": frame["t"].to_numpy(),
            "msg": frame[["w"]].to_numpy()}


def one_thread() -> None:
    """Torch and pandas on one thread (pandas' option exists from 3.1)."""
    torch.set_num_threads(1)
    if hasattr(pd.options.mode, "max_threads"):
        pd.set_option("mode.max_threads", 1)


def best_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def peak_growth(kind: str, name: str, path: Path) -> int:
    """Growth of a fresh process's VmHWM (bytes) while it reads ``path`` once (``kind``: tgeval or pandas), after
    reading the file's first 1000 lines once (so that lazy imports and first-use allocations are not counted)."""
    sample = path.with_suffix(".head")
    with open(path) as source, open(sample, "w") as out:
        out.writelines(line for _, line in zip(range(1000), source))
    code = f"""
import sys, json
sys.path.insert(0, {str(Path(__file__).parent)!r})
import bench_read
from pathlib import Path
bench_read.one_thread()
def hwm():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) * 1024
def read(path):
    if {kind!r} == 'tgeval':
        fmt, options = bench_read.READS[{name!r}]
        bench_read.read_events(path, fmt, **options)
    else:
        bench_read.read_pandas({name!r}, path)
read(Path({str(sample)!r}))
before = hwm()
read(Path({str(path)!r}))
print(json.dumps(hwm() - before))
"""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TGEVAL_CACHE_DIR": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=3_000_000, help="events per file")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions; the best is reported")
    add_results_arg(parser)
    args = parser.parse_args()
    one_thread()
    os.environ.pop("TGEVAL_CACHE_DIR", None)  # the cold reads must not find a cache of the user's
    print_header(f"bench_read: {args.events:,} events per file, 1 thread")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        paths = write_files(Path(folder), args.events)
        cache_dir = Path(folder) / "cache"
        for name, path in paths.items():
            fmt, options = READS[name]
            pandas_s, reference = best_time(lambda: read_pandas(name, path), args.repeat)
            cold_s, (data, info) = best_time(lambda: read_events(path, fmt, cache_dir=None, **options), args.repeat)
            read_events(path, fmt, cache_dir=cache_dir, **options)  # fills the cache
            warm_s, (warm, warm_info) = best_time(lambda: read_events(path, fmt, cache_dir=cache_dir, **options),
                                                  args.repeat)
            assert warm_info.cache == "hit" and info.cache == "off" and data.num_events == args.events
            if name != "jodie":  # JODIE's ids are remapped by tgeval, as read_events does by default
                assert all(np.array_equal(reference[key], data[key].numpy()) for key in ("src", "dst", "t"))
            final = sum(value.numpy().nbytes for value in data.to_dict().values())
            peak, pandas_peak = peak_growth("tgeval", name, path), peak_growth("pandas", name, path)
            rows.append([name, f"{path.stat().st_size / 1e6:.0f} MB", f"{pandas_s:.2f}", info.parser, f"{cold_s:.2f}",
                         f"{cold_s / pandas_s:.2f}x", f"{warm_s:.2f}", f"{warm_s / pandas_s:.2f}x",
                         f"{final / 1e6:.0f} MB", f"{peak / final:.2f}x", f"{pandas_peak / final:.2f}x"])
    print_table(["file", "size", "pandas s", "parser", "tgeval cold s", "cold/pandas", "warm s", "warm/pandas",
                 "final arrays", "tgeval peak/final", "pandas peak/final"], rows,
                title=f"{args.events:,} events per file, 1 thread, pandas {pd.__version__}")
    save_results(args)


if __name__ == "__main__":
    main()
