"""Static link prediction (tgeval.static): heuristics vs networkx, negative-pair sampling, `tgeval static`.

1. Heuristics: CN, Jaccard, Adamic-Adar, RA and PA on 10^5 random node pairs of UCI's static graph
   (all events), tgeval's batched sparse kernels vs networkx's functions (``common_neighbors``,
   ``jaccard_coefficient``, ...) on the same pairs, same process; the scores are checked equal.
2. Sampling: negative pairs per second, uniform and degree-corrected, distinct and with
   replacement, on the static graph of Wikipedia (all events; 9,227 nodes; bipartite: one
   endpoint per side) and UCI.
3. Bipartite heuristics: CN, Adamic-Adar and RA over paths of length 3 on 10^4 random
   user-page pairs of Wikipedia's graph, tgeval's sparse products vs a networkx loop over the
   neighbours' neighbourhoods, same pairs; the scores are checked equal.
4. ``tgeval static`` on UCI (whole file, the five heuristics and the GCN and GraphSAGE baselines)
   as a subprocess: wall time, imports included.

Run: python benchmarks/bench_static.py [--data-dir DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import _common  # noqa: F401  (puts the repository root on sys.path)
import networkx as nx
import torch
from _common import REPO_ROOT, add_common_args, apply_common_args, have_dataset, print_header, print_table, save_results

from tgeval.data.datasets import dataset_path, load_dataset
from tgeval.static import HEURISTICS, PairSampler, adjacency, heuristic_scores, static_graph

NX = {"jaccard": nx.jaccard_coefficient, "aa": nx.adamic_adar_index, "ra": nx.resource_allocation_index,
      "pa": nx.preferential_attachment}
NUM_PAIRS = 100_000


def networkx_scores(g: nx.Graph, method: str, pairs: list[tuple[int, int]]) -> list[float]:
    if method == "cn":
        return [float(len(list(nx.common_neighbors(g, u, v)))) for u, v in pairs]
    return [float(s) for _, _, s in NX[method](g, pairs)]


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_heuristics(repeat: int) -> None:
    data, info = load_dataset("uci")
    graph = static_graph(data, num_nodes=info.num_nodes)
    adj = adjacency(graph)
    active = torch.nonzero(graph.degree() > 0).flatten()
    gen = torch.Generator().manual_seed(0)
    src, dst = active[torch.randint(0, active.numel(), (2, 2 * NUM_PAIRS), generator=gen)]
    keep = torch.nonzero(src != dst).flatten()[:NUM_PAIRS]
    src, dst = src[keep], dst[keep]
    pairs = list(zip(src.tolist(), dst.tolist()))
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_nodes))
    g.add_edges_from(graph.edge_index.T.tolist())
    print(f"\n1. heuristics on {len(pairs):,} random pairs of UCI's static graph ({graph.num_nodes} nodes, "
          f"{graph.num_edges} edges); best of {repeat} runs each")
    rows = []
    for method in HEURISTICS:
        ours = best_time(lambda: heuristic_scores(adj, src, dst, method), repeat)
        theirs = best_time(lambda: networkx_scores(g, method, pairs), repeat)
        reference = networkx_scores(g, method, pairs)
        same = torch.allclose(heuristic_scores(adj, src, dst, method), torch.tensor(reference, dtype=torch.float64),
                              rtol=1e-12, atol=1e-12)
        rows.append([method, f"{len(pairs) / ours:,.0f}", f"{len(pairs) / theirs:,.0f}", f"{theirs / ours:.1f}",
                     "yes" if same else "NO"])
    print_table(["method", "tgeval pairs/s", "networkx pairs/s", "x networkx", "equal scores"], rows)


def bench_sampling(repeat: int) -> None:
    print(f"\n2. negative pairs per second (best of {repeat}); draws exclude every edge of the graph")
    rows = []
    for name in ("wikipedia", "uci"):
        if not have_dataset(name):
            rows.append([name, "-", "-", "-", "dataset not found"])
            continue
        data, info = load_dataset(name)
        graph = static_graph(data, num_nodes=info.num_nodes, dst_offset=info.dst_offset if info.bipartite else None)
        num = 1_000_000 if name == "wikipedia" else 100_000
        for weighting in ("uniform", "degree"):
            sampler = PairSampler(graph, weighting=weighting)
            for replace in (False, True):
                seconds = best_time(lambda: sampler.sample(num, seed=1, replace=replace), repeat)
                rows.append([f"{name} ({graph.num_nodes} nodes, {graph.num_edges} edges, "
                             f"{graph.describe_sides()['kind']})", weighting,
                             "with" if replace else "distinct", f"{num:,}", f"{num / seconds:,.0f}"])
    print_table(["graph", "weighting", "replacement", "negatives", "negatives/s"], rows)


def paths3_networkx(g: nx.Graph, method: str, pairs: list[tuple[int, int]]) -> list[float]:
    """Sum over the paths u - a - b - v of f(a) f(b), by a loop over u's neighbours' neighbourhoods."""
    f = {"cn": lambda w: 1.0, "aa": lambda w: 1.0 / math.log(g.degree(w)), "ra": lambda w: 1.0 / g.degree(w)}[method]
    return [float(sum(f(a) * f(b) for a in g[u] for b in g[a] if b != u and a != v and b in g[v]))
            for u, v in pairs]


def bench_bipartite(repeat: int) -> None:
    if not have_dataset("wikipedia"):
        print("\n3. bipartite heuristics: skipped (Wikipedia is not available)")
        return
    data, info = load_dataset("wikipedia")
    graph = static_graph(data, num_nodes=info.num_nodes, dst_offset=info.dst_offset)
    adj = adjacency(graph)
    d, n, num = graph.dst_offset, graph.num_nodes, 10_000
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, d, (num,), generator=gen), torch.randint(d, n, (num,), generator=gen)
    pairs = list(zip(src.tolist(), dst.tolist()))
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(graph.edge_index.T.tolist())
    print(f"\n3. bipartite heuristics (paths of length 3) on {num:,} random user-page pairs of Wikipedia's graph; "
          f"best of {repeat} runs each")
    rows = []
    for method in ("cn", "aa", "ra"):
        ours = best_time(lambda: heuristic_scores(adj, src, dst, method), repeat)
        start = time.perf_counter()
        reference = paths3_networkx(g, method, pairs)
        theirs = time.perf_counter() - start
        same = torch.allclose(heuristic_scores(adj, src, dst, method), torch.tensor(reference, dtype=torch.float64),
                              rtol=1e-12, atol=1e-12)
        rows.append([method, f"{num / ours:,.0f}", f"{num / theirs:,.0f}", f"{theirs / ours:.1f}",
                     "yes" if same else "NO"])
    print_table(["method", "tgeval pairs/s", "networkx loop pairs/s", "x networkx", "equal scores"], rows)


def bench_cli(threads: int) -> None:
    path = dataset_path("uci")
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "tgeval", "static", str(path), "--format", "dgb", "--models",
                   "pa,cn,ra,aa,jaccard,gcn,sage", "--threads", str(threads), "--out", out]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO_ROOT)
        seconds = time.perf_counter() - start
    print("\n4. `tgeval static` on UCI (all events; heuristics, GCN and GraphSAGE; C=50), as a subprocess:")
    print(f"   {' '.join(['python'] + command[1:-1])} OUT")
    print(f"   wall time {seconds:.1f} s (exit code {done.returncode})")
    print("   " + "\n   ".join(done.stdout.strip().splitlines()))
    if done.returncode:
        print(done.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    print_header("static link prediction: heuristics vs networkx, negative-pair sampling, `tgeval static` on UCI")
    if not have_dataset("uci"):
        print("skipped: UCI is not available (pass --data-dir or set TGEVAL_DATA_DIR)")
        return
    with torch.no_grad():
        bench_heuristics(args.repeat)
        bench_sampling(args.repeat)
        bench_bipartite(args.repeat)
    bench_cli(args.threads)
    save_results(args)


if __name__ == "__main__":
    main()
