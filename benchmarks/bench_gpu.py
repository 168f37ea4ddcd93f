"""Every GPU figure of issue 10 in one script (under 5 minutes on one GPU).

1. **CUDA = CPU**: every model (EdgeBank, EdgeBank-window, PA, popularity, TGN, DyRep,
   GraphMixer; neural ones untrained, seed 0) evaluated on UCI's test segment on both devices
   (K = 20 uniform negatives, all-entity over the 'train' catalog, batches <= 200): largest
   score difference in units of the model's tie band, events whose all-entity counts differ,
   metric differences.
2. **GPU vs the same machine's CPU** (``--cpu-threads``, default all cores): all-entity
   evaluation + K = 20 of the Wikipedia test segment (23,621 events, 952-item catalog) for
   EdgeBank, TGN, DyRep and GraphMixer; the state is warmed once on the GPU and restored onto
   the CPU model (not timed); events/s from ``evaluate``'s own timer; peak GPU memory.
3. **TGN training**: one epoch of Wikipedia's training segment, tgeval's ``train_epoch`` vs the
   PyG-recipe loop of ``bench_tgn_train.py`` on the same GPU (interleaved, best of 2).
4. **Large catalogs**: an untrained TGN ranks 2,000 events of a random stream over 1.1 M nodes
   against catalogs of 10^5 and 10^6 items: ``evaluate`` (incremental), including the first
   batch's embedding of every item and in steady state (the cache filled by one untimed
   scoring call first), vs one event at a time (``model.score`` of every item per event, not
   incremental, as TGB's examples do; timed on the first events and reported per event).
5. **Launches and synchronisations per batch** (``torch.profiler``, CUDA activity): kernel
   launches and host synchronisations (stream / device / event synchronisations and tgeval's
   host reads) inside the engine's ``tgeval.replay.step`` ranges, first 10 test batches of
   Wikipedia, EdgeBank and TGN, with K = 20 uniform negatives and all-entity ranking.

Data: UCI and Wikipedia from ``--data-dir`` / ``$TGEVAL_DATA_DIR`` / ``../shared/datasets``;
when absent, synthetic streams of the same shape (``tgeval.data.generate_events``; printed).
``--quick`` shrinks every size so the script's code paths can be checked on a CPU
(``--device cpu``) in about a minute; its figures mean nothing.

Run: python benchmarks/bench_gpu.py [--device cuda] [--cpu-threads N] [--data-dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from typing import Callable, Optional

import _common  # noqa: F401  (puts the repository root on sys.path)
import torch
from _common import add_results_arg, head_segment, inside_range, print_header, print_table, save_results
from bench_tgn_train import PygRecipeTGN, range_catalog, with_zero_message
from torch.profiler import ProfilerActivity, profile
from torch_geometric.data import TemporalData

from tgeval import build_catalog, chronological_split, evaluate, warm_up
from tgeval.data.catalog import Catalog
from tgeval.data.split import Segment, Split
from tgeval.data.synthetic import generate_events
from tgeval.core.device import HOST_READ
from tgeval.errors import InputPathError
from tgeval.eval.metrics import tie_band
from tgeval.stream.loader import timestamp_batch_boundaries
from tgeval.models import (TGN, DyRep, DyRepConfig, EdgeBank, GraphMixer, GraphMixerConfig, Popularity,
                           PreferentialAttachment, TGNConfig)
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch
from tgeval.eval.protocol import Protocol

K = 20
BATCH = 200
SYNC_EVENTS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
LAUNCH_EVENTS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


def load(name: str, data_dir: Optional[str], quick: bool) -> tuple[TemporalData, str]:
    """A shared dataset, or a synthetic stream of its shape when the file is absent."""
    if data_dir is not None:
        os.environ["TGEVAL_DATA_DIR"] = data_dir
    try:
        from tgeval.data.datasets import load_dataset

        data, _ = load_dataset(name)
        how = f"{name} from the shared datasets"
    except InputPathError:
        shape = {"uci": dict(num_events=59_835, num_nodes=1_900),
                 "wikipedia": dict(num_events=157_474, num_nodes=9_228, bipartite=True, num_sources=8_228)}[name]
        data = generate_events(**shape, seed=0)
        how = f"SYNTHETIC stand-in for {name} ({name} not found): generate_events({shape}, seed=0)"
    if quick:
        data = data[: min(data.num_events, 6_000)]
        how += ", --quick: first 6,000 events"
    return data, how


def models(num_nodes: int, quick: bool) -> dict[str, Callable[[], torch.nn.Module]]:
    width = dict(memory_dim=16, time_dim=8, embedding_dim=16) if quick else {}
    return {
        "EdgeBank": lambda: EdgeBank(num_nodes),
        "EdgeBank-window": lambda: EdgeBank(num_nodes, window=100_000.0),
        "PA": lambda: PreferentialAttachment(num_nodes),
        "popularity": lambda: Popularity(num_nodes),
        "TGN": lambda: _seeded(lambda: TGN(TGNConfig(num_nodes, **width))),
        "DyRep": lambda: _seeded(lambda: DyRep(DyRepConfig(num_nodes, memory_dim=width.get("memory_dim", 100),
                                                           time_dim=width.get("time_dim", 100)))),
        "GraphMixer": lambda: _seeded(lambda: GraphMixer(GraphMixerConfig(
            num_nodes, **({"hidden_dim": 16, "embedding_dim": 16, "time_dim": 8} if quick else {})))),
    }


def _seeded(make):
    torch.manual_seed(0)
    return make()


def _setting(name: str, args) -> tuple[TemporalData, str, Split, int, Catalog]:
    """``(data, how it was read, 70/15/15 split, num_nodes, 'train' catalog)`` of a dataset."""
    data, how = load(name, args.data_dir, args.quick)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    num_nodes = int(max(int(data.src.max()), int(data.dst.max()))) + 1
    return data, how, split, num_nodes, build_catalog(data, "train", train_end=split.train.end, num_nodes=num_nodes)


def _evaluate(model, data, segment, catalog, device, warm=True, prefilter=None):
    sampler = UniformSampler(catalog.to(device))
    return evaluate(model.to(device), data.to(device), segment,
                    Protocol(num_negatives=K, batch_size=BATCH, warm=warm, prefilter=prefilter),
                    sampler=sampler, catalog=catalog.to(device))


# -- 1 ------------------------------------------------------------------------------------------
def cuda_equals_cpu(args, device) -> None:
    data, how, split, num_nodes, catalog = _setting("uci", args)
    print(f"\n-- 1. CUDA = CPU on {how}: test segment {split.test.num_events} events, K = {K}, "
          f"'train' catalog {catalog.size} items")
    rows = []
    cases = [(name, make, None) for name, make in models(num_nodes, args.quick).items()]
    cases.append(("TGN, prefilter=100 (approximate)", models(num_nodes, args.quick)["TGN"], 100))
    for name, make, prefilter in cases:
        cpu = _evaluate(make(), data, split.test, catalog, "cpu", prefilter=prefilter)
        gpu = _evaluate(make(), data, split.test, catalog, device, prefilter=prefilter)
        tolerance = make().capabilities.tie_tolerance
        worst = 0.0  # in tie bands for the float32 models, absolute (must be 0) for the exact heuristics
        for key in ("score", "neg_score"):
            diff = (cpu.records[key] - gpu.records[key]).abs()
            unit = tie_band(cpu.records[key], tolerance) if tolerance > 0 else torch.ones_like(diff)
            worst = max(worst, float((diff / unit).max()))
        differ = int(((cpu.records["above"] != gpu.records["above"]) | (cpu.records["equal"] != gpu.records["equal"]))
                     .sum())
        mrr = [r.metrics["all_entity"]["mrr"]["micro"] for r in (cpu, gpu)]
        sampled = [r.metrics["sampled"]["mrr"]["micro"] for r in (cpu, gpu)]
        ok = (worst <= 1.0 if tolerance > 0 else worst == 0.0) and (differ == 0 or tolerance > 0)
        rows.append([name, f"{worst:.3g}" + (" bands" if tolerance > 0 else " (exact)"), differ,
                     f"{mrr[1] - mrr[0]:+.2e}", f"{sampled[1] - sampled[0]:+.2e}", "PASS" if ok else "FAIL"])
    print_table(["model", "max |score diff|", "events with other counts", "all-entity MRR diff",
                 "sampled MRR diff", "check"], rows)


# -- 2 and 5 ------------------------------------------------------------------------------------
def throughput(args, device) -> None:
    data, how, split, num_nodes, catalog = _setting("wikipedia", args)
    print(f"\n-- 2. GPU vs this machine's CPU ({args.cpu_threads} threads), {how}: test segment "
          f"{split.test.num_events} events, K = {K} uniform + all-entity over {catalog.size} items, batches <= {BATCH}")
    rows = []
    makers = models(num_nodes, args.quick)
    for name in ("EdgeBank", "TGN", "DyRep", "GraphMixer"):
        gpu_model = makers[name]().to(device)
        warm_up(gpu_model, data[: split.test.start].to(device), batch_size=BATCH)
        state = gpu_model.snapshot()
        _evaluate(gpu_model, data, head_segment(data, split.test, 2 * BATCH), catalog, device, warm=False)  # warm-up
        gpu_model.restore(state)
        gpu = _evaluate(gpu_model, data, split.test, catalog, device, warm=False)
        cpu_model = makers[name]()
        cpu_model.load_state_dict(gpu_model.state_dict())
        cpu_model.restore(state)  # the GPU-warmed state, copied onto the CPU model
        cpu = _evaluate(cpu_model, data, split.test, catalog, "cpu", warm=False)
        g, c = gpu.performance["events_per_second"], cpu.performance["events_per_second"]
        rows.append([name, f"{g:,.0f}", f"{c:,.0f}", f"{g / c:.2f}x",
                     f"{gpu.performance.get('peak_cuda_bytes', 0) / 2**20:,.0f} MiB"])
    print_table(["model", "GPU events/s", "CPU events/s", "GPU / CPU", "peak GPU memory"], rows)
    print("targets : EdgeBank >= 300k events/s and >= 3x the CPU; TGN >= 50k events/s")

    print(f"\n-- 5. kernel launches and host synchronisations per batch, first 10 test batches, K = {K} + all-entity")
    bounds = timestamp_batch_boundaries(data.t[split.test.start:split.test.end], BATCH)
    segment = head_segment(data, split.test, int(bounds[min(10, bounds.numel() - 1)]))
    rows = []
    for name in ("EdgeBank", "TGN"):
        model = makers[name]().to(device)
        warm_up(model, data[: segment.start].to(device), batch_size=BATCH)
        state = model.snapshot()
        _evaluate(model, data, segment, catalog, device, warm=False)
        model.restore(state)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            result = _evaluate(model, data, segment, catalog, device, warm=False)
        batches, steps = result.performance["num_batches"], result.performance["num_steps"]
        inside = [e.name for e in prof.events() if inside_range(e, "tgeval.replay.step")]
        launches = sum(inside.count(n) for n in LAUNCH_EVENTS)
        syncs = sum(inside.count(n) for n in SYNC_EVENTS + (HOST_READ,))
        rows.append([name, batches, steps, f"{launches / batches:.1f}", f"{syncs / batches:.1f}"])
    print_table(["model", "batches", "steps (exact history: batches share steps)", "kernel launches / batch", "host syncs / batch"], rows)


# -- 3 ------------------------------------------------------------------------------------------
def training(args, device) -> None:
    raw, how = load("wikipedia", args.data_dir, args.quick)
    data = with_zero_message(raw).to(device)
    split = chronological_split(data, (0.70, 0.15, 0.15))
    train = data[: split.train.end]
    num_nodes = int(max(int(data.src.max()), int(data.dst.max()))) + 1
    catalog = range_catalog(train.dst.cpu(), num_nodes).to(device)
    print(f"\n-- 3. TGN training, one epoch of {train.num_events} events ({how}), PyG recipe widths, batch {BATCH}, "
          f"1 negative, Adam 1e-4, on {device}")

    def ours() -> float:
        torch.manual_seed(0)
        model = TGN(TGNConfig(num_nodes)).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        _synchronize(device)
        began = time.perf_counter()
        train_epoch(model, data, (0, split.train.end),
                    recipe=Recipe(UniformSampler(catalog), "bce", num_negatives=1, batch_size=BATCH),
                    optimizer=optimizer, epoch=0)
        _synchronize(device)
        return train.num_events / (time.perf_counter() - began)

    def recipe() -> float:
        torch.manual_seed(0)
        model = PygRecipeTGN(num_nodes, device=str(device))
        _synchronize(device)
        out = model.train_epoch(data, train)
        _synchronize(device)
        return out["events_per_second"]

    runs = {"tgeval train_epoch": [], "PyG recipe loop": []}
    for _ in range(2):
        runs["PyG recipe loop"].append(recipe())
        runs["tgeval train_epoch"].append(ours())
    base = max(runs["PyG recipe loop"])
    print_table(["method", "events/s (best of 2)", "vs recipe"],
                [[name, f"{max(v):,.0f}", f"{max(v) / base:.2f}x"] for name, v in runs.items()])
    print("target  : tgeval >= 2x the PyG recipe")


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# -- 4 ------------------------------------------------------------------------------------------
def large_catalogs(args, device) -> None:
    sizes = (10**3, 10**4) if args.quick else (10**5, 10**6)
    num_nodes = sizes[-1] + 100_000
    history, events = (2_000, 200) if args.quick else (20_000, 2_000)
    gen = torch.Generator().manual_seed(0)
    total = history + events
    data = TemporalData(src=torch.randint(0, num_nodes, (total,), generator=gen),
                        dst=torch.randint(0, sizes[-1], (total,), generator=gen), t=torch.arange(total) // 4)
    segment = Segment("test", history, total, int(data.t[history]), int(data.t[-1]))
    print(f"\n-- 4. large catalogs: untrained TGN, {num_nodes:,} nodes, {events} events after {history:,} "
          f"(uniform random stream), batches <= {BATCH}, all-entity only")
    rows = []
    stream = data.to(device)
    for size in sizes:
        catalog = Catalog("custom", torch.arange(size), None, num_nodes).to(device)
        model = _seeded(lambda: TGN(TGNConfig(num_nodes))).to(device)
        first = evaluate(model, stream, segment, Protocol(batch_size=BATCH, warm=True), catalog=catalog)
        warm_up(model, stream[:history], batch_size=BATCH)
        with torch.no_grad():  # fill the cache (every item's embedding and decoder terms), untimed
            model.eval().candidate_scorer(stream.src[history:history + 1], stream.t[history:history + 1],
                                          catalog.items)
        steady = evaluate(model, stream, segment, Protocol(batch_size=BATCH, warm=False), catalog=catalog)
        with_fill, warm = (1e3 / r.performance["events_per_second"] for r in (first, steady))
        model.incremental = False
        items, probe = catalog.items, min(20, events)
        src, t = stream.src[history:history + probe], stream.t[history:history + probe]
        with torch.no_grad():
            model.score(src[:1].expand(size), items, t[:1].expand(size))  # warm-up
            _synchronize(device)
            began = time.perf_counter()
            for i in range(probe):
                model.score(src[i].expand(size), items, t[i].expand(size))
            _synchronize(device)
        slow = (time.perf_counter() - began) / probe * 1e3
        rows.append([f"{size:,}", f"{with_fill:.3f}", f"{warm:.3f}", f"{slow:.2f}", f"{slow / with_fill:.0f}x",
                     f"{steady.performance.get('peak_cuda_bytes', 0) / 2**20:,.0f} MiB"])
    print_table(["catalog", "evaluate ms/event (with first fill)", "evaluate ms/event (steady)",
                 "one event at a time ms/event", "ratio (with fill)", "peak GPU memory"], rows)
    print("target  : 10^6 items <= 0.3 ms/event and >= 60x one event at a time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="accelerator to measure (default cuda)")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count(), help="CPU threads of the CPU baseline")
    parser.add_argument("--data-dir", default=None, help="folder with uci/ and wikipedia/ (else $TGEVAL_DATA_DIR, "
                                                         "../shared/datasets, or synthetic stand-ins)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the code paths, not the speed")
    parser.add_argument("--parts", nargs="+", default=["1", "2", "3", "4"], choices=["1", "2", "3", "4"],
                        help="sections to run (5 runs with 2)")
    add_results_arg(parser)
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU machine, or pass --device cpu --quick to check the script")
    torch.set_num_threads(args.cpu_threads)
    logging.getLogger("torch.profiler").setLevel(logging.ERROR)
    print_header("issue 10 GPU figures: CUDA = CPU, GPU vs CPU, training, large catalogs, launches and syncs")
    if device.type == "cuda":
        print(f"device  : {torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda}")
    began = time.perf_counter()
    sections = {"1": cuda_equals_cpu, "2": throughput, "3": training, "4": large_catalogs}
    for part in args.parts:
        sections[part](args, device)
        print(f"(elapsed {time.perf_counter() - began:.0f} s)")
    save_results(args)


if __name__ == "__main__":
    main()
