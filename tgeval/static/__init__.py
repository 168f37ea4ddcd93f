"""Static link-prediction evaluation (SPEC §10): degree bias, degree-corrected negatives,
neighbourhood heuristics, the recommendation check (top-C, VCMPR@C, RBO), structural-shift splits and HeaRT negatives.

``graph = from_pyg(data)`` or ``static_graph(temporal_data, end)`` (``dst_offset=`` for a bipartite
graph: every tool then keeps to its two sides); ``random_edge_split``;
``PairSampler(graph, weighting="uniform" | "degree")``; ``heuristic_scores``; ``lognormal_sigma``
and ``pa_auroc_analytic``; ``top_c``, ``vcmpr_per_node``, ``rank_biased_overlap``;
``shift_split`` (structural-shift splits by CN, shortest path or PA); ``heart_negatives`` and
``heart_ranking`` (HeaRT-style hard negatives, MRR, Hits@k); ``personalized_pagerank`` and
``PageRankScorer`` (PPR, the third HeaRT heuristic); ``train_link_gnn`` and ``with_gnns``
(GCN / GraphSAGE baselines); ``run_static`` writes what
``tgeval static`` and ``tgeval shift`` write.
"""

from tgeval.errors import SamplerError, StaticGraphError
from tgeval.static.degree_bias import lognormal_sigma, pa_auroc_analytic
from tgeval.static.graph import EdgeSplit, StaticGraph, from_pyg, random_edge_split, static_graph
from tgeval.static.gnn import GNN_MODELS, GNNConfig, LinkGNN, TrainedGNN, train_link_gnn
from tgeval.static.heart import HEART_HEURISTICS, HeartNegatives, heart_negatives, heart_ranking
from tgeval.static.heuristics import HEURISTICS, Adjacency, adjacency, heuristic_scores
from tgeval.static.negatives import WEIGHTINGS, PairSampler
from tgeval.static.ppr import PageRankScorer, personalized_pagerank
from tgeval.static.recommend import agreement, method_ranking, rank_biased_overlap, top_c, vcmpr_per_node
from tgeval.static.report import (BENCHMARKS, StaticBenchmark, benchmark_of, build_benchmark, heart_report,
                                  plot_degree_ccdf, run_static, static_report, with_gnns)
from tgeval.static.shift import (SHIFT_HEURISTICS, ShiftSplit, link_scores, shift_split, shortest_path_lengths,
                                 wasserstein_1d)

__all__ = [
    "StaticGraphError", "SamplerError", "lognormal_sigma", "pa_auroc_analytic", "EdgeSplit", "StaticGraph",
    "from_pyg", "random_edge_split", "static_graph", "HEURISTICS", "Adjacency", "adjacency", "heuristic_scores",
    "WEIGHTINGS", "PairSampler", "agreement", "method_ranking", "rank_biased_overlap", "top_c", "vcmpr_per_node",
    "BENCHMARKS", "StaticBenchmark", "benchmark_of", "build_benchmark", "plot_degree_ccdf", "run_static",
    "static_report", "SHIFT_HEURISTICS", "ShiftSplit", "link_scores", "shift_split", "shortest_path_lengths",
    "wasserstein_1d", "HEART_HEURISTICS", "HeartNegatives", "heart_negatives", "heart_ranking", "heart_report",
    "GNN_MODELS", "GNNConfig", "LinkGNN", "TrainedGNN", "train_link_gnn", "with_gnns", "PageRankScorer",
    "personalized_pagerank",
]
