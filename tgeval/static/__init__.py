"""Static link-prediction evaluation (SPEC §10): degree bias, degree-corrected negatives,
neighbourhood heuristics, and the recommendation check (top-C, VCMPR@C, RBO).

``graph = from_pyg(data)`` or ``static_graph(temporal_data, end)``; ``random_edge_split``;
``PairSampler(graph, weighting="uniform" | "degree")``; ``heuristic_scores``; ``lognormal_sigma``
and ``pa_auroc_analytic``; ``top_c``, ``vcmpr_per_node``, ``rank_biased_overlap``;
``run_static`` writes what ``tgeval static`` writes.
"""

from tgeval.errors import SamplerError, StaticGraphError
from tgeval.static.degree_bias import lognormal_sigma, pa_auroc_analytic
from tgeval.static.graph import EdgeSplit, StaticGraph, from_pyg, random_edge_split, static_graph
from tgeval.static.heuristics import HEURISTICS, Adjacency, adjacency, heuristic_scores
from tgeval.static.negatives import WEIGHTINGS, PairSampler
from tgeval.static.recommend import agreement, method_ranking, rank_biased_overlap, top_c, vcmpr_per_node
from tgeval.static.report import BENCHMARKS, StaticBenchmark, build_benchmark, plot_degree_ccdf, run_static, static_report

__all__ = [
    "StaticGraphError", "SamplerError", "lognormal_sigma", "pa_auroc_analytic", "EdgeSplit", "StaticGraph",
    "from_pyg", "random_edge_split", "static_graph", "HEURISTICS", "Adjacency", "adjacency", "heuristic_scores",
    "WEIGHTINGS", "PairSampler", "agreement", "method_ranking", "rank_biased_overlap", "top_c", "vcmpr_per_node",
    "BENCHMARKS", "StaticBenchmark", "build_benchmark", "plot_degree_ccdf", "run_static", "static_report",
]
