r"""The static link-prediction report behind ``tgeval static`` (docs/protocol.md §10).

Protocol: an edge split of the graph (random, or a structural-shift split); heuristics are computed on the training
graph; each test edge is a positive, and each benchmark offers as many negatives as there are
test edges (one per positive), drawn by :class:`~tgeval.static.negatives.PairSampler` over the
whole graph (so a negative is never a training or a test edge; degree-corrected draws use
the whole graph's degrees, the endpoint distribution of the positives). AUROC and AP are
:func:`~tgeval.eval.metrics.auroc` and :func:`~tgeval.eval.metrics.average_precision`. The
recommendation check ranks, for every node with a test edge, its top-C non-training
candidates (:mod:`tgeval.static.recommend`); each benchmark's ranking of the methods (by
AUROC) is compared with their ranking by VCMPR@C through RBO(p).

On a bipartite graph (:attr:`~tgeval.static.graph.StaticGraph.dst_offset`) every part follows
its sides: negatives and recommendation candidates join the two sides, degree-corrected
negatives draw each endpoint from that side's endpoints of the test edges (the positives' own
``stubs``), CN / AA / RA count paths of length 3, methods without a bipartite definition (Jaccard) are listed under
``not_applicable`` instead of being scored, :math:`\sigma` is fitted per side and the analytic
PA AUROC is the two-sided one (:mod:`tgeval.static.degree_bias`). The report states the sides.

Why the test edges' stubs: PA scores training degrees, and an endpoint of a test edge has lost
that edge from the training graph, so the whole graph's stub list (which matches the positives'
whole-graph degrees) over-represents training degrees one higher than the positives'. Where most
nodes have one edge this decides the benchmark: on Wikipedia 69% of the users have a single edge,
36% of the test edges score PA 0 against 10% of the whole-graph degree-corrected negatives, and
PA's AUROC is 0.42; drawn from the test edges' stubs, negatives have the positives' degree
distribution per side in the training graph too, and PA's AUROC is 0.52 (the rest of the gap:
pairs of busy nodes are often edges, which are never negatives). Unipartite graphs keep
the whole graph's stubs, so their numbers stay as they were (on UCI both lists give 0.50 ± 0.02).
"""

from __future__ import annotations

import io
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence, Union, cast

import torch
from torch import Tensor

from tgeval.core.atomic import PathLike, write_atomic_group
from tgeval.data.hashing import tensor_checksum
from tgeval.eval.metrics import auroc, average_precision
from tgeval.core.rng import derived_seed
from tgeval.static.degree_bias import lognormal_sigma, pa_auroc_analytic
from tgeval.data.sorted_keys import is_member
from tgeval.static.graph import EdgeSplit, StaticGraph, edge_keys, random_edge_split
from tgeval.static.heart import HeartHeuristic, heart_negatives, heart_ranking
from tgeval.static.gnn import GNN_MODELS, GNNConfig, TrainedGNN, train_link_gnn
from tgeval.errors import ProtocolError, StaticGraphError
from tgeval.static.heuristics import (HEURISTICS, Adjacency, Heuristic, PairScorer, adjacency, not_applicable,
                                      score_pairs)
from tgeval.static.negatives import PairSampler, Weighting
from tgeval.static.recommend import method_ranking, rank_biased_overlap, top_c, vcmpr_per_node
from tgeval.static.shift import ShiftSplit

__all__ = ["BENCHMARKS", "StaticBenchmark", "benchmark_of", "build_benchmark", "with_gnns", "static_report",
           "heart_report", "plot_degree_ccdf", "run_static"]


#: benchmark name -> the PairSampler weighting of its negatives
BENCHMARKS: dict[str, Weighting] = {"uniform": "uniform", "degree_corrected": "degree"}


@dataclass(frozen=True)
class StaticBenchmark:
    """A split with its negatives.

    Attributes:
        split: a random (:class:`~tgeval.static.graph.EdgeSplit`) or structural-shift
            (:class:`~tgeval.static.shift.ShiftSplit`) split.
        adjacency: of the training graph (the heuristics' input).
        negatives: benchmark name -> int64 ``[2, T]`` negative pairs.
        definitions: benchmark name -> the sampler's description.
        trained: method name -> a GNN trained on the training graph (:func:`with_gnns`).
    """

    split: Union[EdgeSplit, ShiftSplit]
    adjacency: Adjacency
    negatives: dict[str, Tensor]
    definitions: dict[str, dict]
    trained: dict[str, TrainedGNN] = field(default_factory=dict)

    def scorer(self, name: str) -> Union[Heuristic, PairScorer]:
        """The method called ``name``: a trained GNN of :attr:`trained`, else a heuristic."""
        if name in self.trained:
            return self.trained[name]
        if name not in HEURISTICS:
            raise ProtocolError(f"unknown method {name!r}: use a heuristic of {HEURISTICS}"
                                + (f" or a trained GNN of {sorted(self.trained)}" if self.trained else
                                f" (GNNs {GNN_MODELS} need with_gnns first)") + ".")
        return cast(Heuristic, name)


def benchmark_of(split: Union[EdgeSplit, ShiftSplit]) -> StaticBenchmark:
    """Draw one negative per test edge of ``split`` under each of :data:`BENCHMARKS` (never an
    edge of the whole graph; seeds derived from the split's seed; bipartite: degree-corrected
    endpoints from the test edges' stubs, module docstring)."""
    negatives, definitions = {}, {}
    for salt, (name, weighting) in enumerate(BENCHMARKS.items(), start=1):
        own = weighting == "degree" and split.graph.bipartite  # the test edges' stubs (module docstring)
        sampler = PairSampler(split.graph, weighting=weighting, stubs=split.test if own else None)
        seed = derived_seed(split.seed, salt)
        negatives[name] = sampler.sample(split.test.size(1), seed=seed)
        definitions[name] = {**sampler.describe(), "seed": seed, "replace": False}
        if own:
            definitions[name]["stubs"] = "the test edges' endpoints (the positives' own), per side"
    return StaticBenchmark(split, adjacency(split.train), negatives, definitions)


def build_benchmark(graph: StaticGraph, *, test_fraction: float = 0.25, seed: int = 0) -> StaticBenchmark:
    """:func:`benchmark_of` a :func:`~tgeval.static.graph.random_edge_split` of ``graph``."""
    return benchmark_of(random_edge_split(graph, test_fraction, seed=seed))


def with_gnns(bench: StaticBenchmark, names: Sequence[str], config: GNNConfig = GNNConfig()) -> StaticBenchmark:
    """``bench`` with a :class:`~tgeval.static.gnn.LinkGNN` per name of :data:`~tgeval.static.gnn.GNN_MODELS`
    (the encoder) trained on its training graph under ``config``."""
    unknown = [m for m in names if m not in GNN_MODELS]
    if unknown:
        raise ProtocolError(f"GNN baselines are {GNN_MODELS}, got {unknown}.")
    trained = {m: train_link_gnn(bench.split.train, replace(config, encoder=cast(Any, m))) for m in names}
    return replace(bench, trained={**bench.trained, **trained})


def _applicable(bench: StaticBenchmark, methods: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The methods of ``methods`` that apply to ``bench``'s graph, and why each other one does not."""
    skipped = {m: why for m in methods if (why := not_applicable(bench.adjacency, bench.scorer(m))) is not None}
    if len(skipped) == len(methods):
        raise StaticGraphError(f"none of the methods {list(methods)} applies to this bipartite graph "
                               f"({'; '.join(f'{m} {why}' for m, why in skipped.items())}). Add cn, aa, ra or pa.")
    return [m for m in methods if m not in skipped], skipped


def _degree_spread(train: StaticGraph) -> dict[str, Any]:
    """sigma, its node count and PA's analytic AUROC (per side when bipartite: module docstring)."""
    degree = train.degree()
    if train.dst_offset is None:
        sigma = lognormal_sigma(degree)
        return {"sigma": _number(sigma), "sigma_nodes": int((degree >= 1).sum()),
                "pa_auroc_analytic": _number(pa_auroc_analytic(sigma)), "pa_auroc_formula": "Phi(sigma)"}
    sides = {"source": degree[: train.dst_offset], "destination": degree[train.dst_offset:]}
    sigmas = {name: lognormal_sigma(d) for name, d in sides.items()}
    return {"sigma": _number(torch.sqrt((sigmas["source"] ** 2 + sigmas["destination"] ** 2) / 2.0)),
            "sigma_nodes": int((degree >= 1).sum()),
            "sigma_sides": {name: {"sigma": _number(sigmas[name]), "nodes": int((d >= 1).sum())}
                            for name, d in sides.items()},
            "pa_auroc_analytic": _number(pa_auroc_analytic(sigmas["source"], sigmas["destination"])),
            "pa_auroc_formula": "Phi(sqrt((sigma_source^2 + sigma_destination^2) / 2))"}


def _number(value: Tensor) -> Optional[float]:
    x = float(value)
    return x if math.isfinite(x) else None


def _classification(bench: StaticBenchmark, method: str) -> dict[str, dict[str, Optional[float]]]:
    """AUROC and AP of ``method`` under each benchmark."""
    scorer = bench.scorer(method)
    pos = score_pairs(bench.adjacency, scorer, bench.split.test[0], bench.split.test[1])
    out = {}
    for name, neg in bench.negatives.items():
        scores = torch.cat([pos, score_pairs(bench.adjacency, scorer, neg[0], neg[1])])
        labels = torch.cat([torch.ones_like(pos, dtype=torch.bool), torch.zeros(neg.size(1), dtype=torch.bool,
                                                                                 device=pos.device)])
        out[name] = {"auroc": _number(auroc(scores, labels)), "ap": _number(average_precision(scores, labels))}
    return out


def static_report(bench: StaticBenchmark, *, c: int = 50, rbo_p: float = 0.5,
                  methods: Sequence[str] = HEURISTICS) -> dict[str, Any]:
    r"""Degree bias, both benchmarks and the recommendation check of ``bench`` (module docstring).

    Returns:
        dict: ``sides`` (:meth:`~tgeval.static.graph.StaticGraph.describe_sides`), ``sigma``
        (bipartite: :math:`\sqrt{(\sigma_s^2 + \sigma_d^2)/2}`, with ``sigma_sides``),
        ``pa_auroc_analytic`` and its ``pa_auroc_formula``, ``pa_auroc_uniform``,
        ``pa_auroc_degree_corrected``, ``benchmarks`` (name -> method -> ``auroc``, ``ap``),
        ``vcmpr_at_c`` (method -> value), ``vcmpr_nodes``, ``rankings``, ``rbo`` (benchmark -> RBO
        with the recommendation ranking), ``closer_to_recommendation``, ``not_applicable``
        (method -> why it is not scored on this graph), ``protocol`` and ``models`` (the trained
        GNNs' definitions). ``methods``: heuristics and names of ``bench.trained``.

    Raises:
        StaticGraphError: no method of ``methods`` applies to the graph.
    """
    if not methods:
        raise ProtocolError("methods must name at least one method.")
    for m in methods:
        bench.scorer(m)  # unknown names fail before any work
    methods, skipped = _applicable(bench, methods)
    split, n = bench.split, bench.split.graph.num_nodes
    spread = _degree_spread(split.train)
    scored = {m: _classification(bench, m) for m in dict.fromkeys([*methods, "pa"])}
    sources = torch.nonzero(torch.bincount(split.test.flatten(), minlength=n)).flatten()
    # edges of the whole graph outside train and test (a shift split's validation, capped and dropped links)
    # are known links, never recommendations (an edge split has none)
    test_keys = torch.sort(edge_keys(split.test[0], split.test[1], n)).values
    known = split.graph.keys()
    known = known[~is_member(test_keys, known)]
    vcmpr = {m: _number(vcmpr_per_node(top_c(bench.adjacency, bench.scorer(m), sources, c, exclude=known), sources,
                                        split.test, n).mean()) for m in methods}
    rankings = {name: method_ranking({m: _nan(scored[m][name]["auroc"]) for m in methods}) for name in BENCHMARKS}
    rankings["recommendation"] = method_ranking({m: _nan(vcmpr[m]) for m in methods})
    rbo = {name: rank_biased_overlap(rankings[name], rankings["recommendation"], rbo_p) for name in BENCHMARKS}
    closer = ("tie" if rbo["uniform"] == rbo["degree_corrected"] else max(rbo, key=lambda k: rbo[k]))
    return {
        "sides": split.graph.describe_sides(),
        **spread,
        "pa_auroc_uniform": scored["pa"]["uniform"]["auroc"],
        "pa_auroc_degree_corrected": scored["pa"]["degree_corrected"]["auroc"],
        "benchmarks": {name: {m: scored[m][name] for m in methods} for name in BENCHMARKS},
        "vcmpr_at_c": vcmpr,
        "vcmpr_nodes": int(sources.numel()),
        "rankings": rankings,
        "rbo": rbo,
        "closer_to_recommendation": closer,
        "not_applicable": skipped,
        "models": {m: bench.trained[m].describe() for m in methods if m in bench.trained},
        "protocol": {
            **split.describe(),
            "num_train_edges": split.train.num_edges, "num_test_edges": int(split.test.size(1)),
            "scores": "heuristics on the training graph (binary adjacency"
                      + ("" if split.graph.dst_offset is None else "; cn, aa, ra over paths of length 3")
                      + "); GNNs trained on it (see models)",
            "negatives_per_positive": 1,
            "benchmarks": bench.definitions,
            "sigma": ("MLE of a log-normal over the training degrees >= 1" if split.graph.dst_offset is None else
                      "MLE of a log-normal over each side's training degrees >= 1 (sigma_sides); sigma = "
                      "sqrt((sigma_source^2 + sigma_destination^2) / 2)") + "; pa_auroc_analytic = Phi(sigma)",
            "auroc": "Mann-Whitney, ties count 1/2; ap: step-wise, tied scores one threshold",
            "c": int(c), "rbo_p": float(rbo_p),
            "recommendation": "per node with >= 1 test edge: top-C candidates among the pairs that are not edges of "
                              "the graph outside the test set"
                              + ("" if split.graph.dst_offset is None else " and join the two sides")
                              + " (ties by smaller id); "
                              "VCMPR@C = hits / min(C, test degree), averaged over those nodes",
            "rankings": "methods by AUROC (benchmarks) or VCMPR@C (recommendation), best first, ties by name",
        },
    }


def _nan(value: Optional[float]) -> float:
    return float("nan") if value is None else value


def _ccdf(values: Tensor) -> tuple[list[float], list[float]]:
    """Distinct values ``x`` and :math:`P(X \\ge x)`."""
    x, counts = torch.unique(values, return_counts=True)
    tail = torch.flip(torch.cumsum(torch.flip(counts, [0]), 0), [0]).double() / values.numel()
    return x.tolist(), tail.tolist()


def plot_degree_ccdf(bench: StaticBenchmark, *, title: str = "") -> bytes:
    """PNG of the degree CCDF of the endpoints of the positives and of each benchmark's negatives
    (degrees in the whole graph). Needs matplotlib (raises ImportError naming the install command)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the degree-CCDF plot needs matplotlib: `pip install matplotlib`.") from error
    degree = bench.split.graph.degree().cpu()
    fig = Figure(figsize=(5.5, 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    series = {"positives (test edges)": bench.split.test, **{f"{k} negatives": v for k, v in bench.negatives.items()}}
    for label, pairs in series.items():
        x, y = _ccdf(degree[pairs.cpu().flatten()])
        ax.step(x, y, where="post", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("endpoint degree k (whole graph)")
    ax.set_ylabel("P(K >= k)")
    ax.set_title(title or "degree CCDF of pair endpoints")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def heart_report(bench: StaticBenchmark, heuristic: HeartHeuristic, num: int, *,
                 methods: Sequence[str] = HEURISTICS) -> dict[str, Any]:
    """Each method's MRR and Hits@k against ``num`` HeaRT negatives per test edge
    (:mod:`tgeval.static.heart`; ties ``"average"``; negatives seeded by the split's seed)."""
    methods = _applicable(bench, methods)[0]
    split = bench.split
    negatives = heart_negatives(bench.adjacency, split.graph, split.test, num, heuristic=heuristic, seed=split.seed)
    return {"negatives": negatives.describe(), "ties": "average",
            "methods": {m: heart_ranking(bench.adjacency, split.test, negatives, bench.scorer(m)) for m in methods}}


def run_static(split: Union[EdgeSplit, ShiftSplit], out: PathLike, *, c: int = 50, rbo_p: float = 0.5,
               methods: Sequence[str] = HEURISTICS, data: Optional[dict] = None,
               heart: Optional[tuple[HeartHeuristic, int]] = None, gnn: GNNConfig = GNNConfig(),
               file: str = "static.json") -> dict[str, Any]:
    """Draw the benchmarks of ``split``, write the :func:`static_report` to ``out/file`` (and
    ``out/degree_ccdf.png`` when matplotlib is installed), atomically, and return the report.

    Args:
        data: what the graph came from (name, fingerprint, reader), stored under ``"data"``.
        heart: ``(heuristic, M)``: add the :func:`heart_report` under ``"heart"``.
        gnn: training of the GNN baselines named in ``methods`` (``"gcn"``, ``"sage"``).
    """
    start = time.perf_counter()
    bench = with_gnns(benchmark_of(split), [m for m in methods if m in GNN_MODELS], gnn)
    graph = split.graph
    report = static_report(bench, c=c, rbo_p=rbo_p, methods=methods)
    if heart is not None:
        report["heart"] = heart_report(bench, heart[0], heart[1], methods=methods)
    report["data"] = {**(data or {}), "graph_checksum": tensor_checksum(graph.edge_index),
                      "num_nodes": graph.num_nodes, "num_edges": graph.num_edges, "removed": graph.removals()}
    folder = Path(out)
    files: list[tuple[Path, Union[str, bytes]]] = []
    try:
        files.append((folder / "degree_ccdf.png", plot_degree_ccdf(bench, title=str(report["data"].get("name", "")))))
        report["plot"] = "degree_ccdf.png"
    except ImportError as error:
        report["plot"] = None
        report["plot_missing"] = str(error)
    report["seconds"] = round(time.perf_counter() - start, 3)
    files.insert(0, (folder / file, json.dumps(report, indent=2) + "\n"))
    write_atomic_group(files)
    return report

