"""Static link-prediction evaluation: degree bias, degree-corrected negatives, neighbourhood
heuristics, the recommendation check (top-C, VCMPR@C, RBO), structural-shift splits, HeaRT
negatives and GNN baselines.

``graph = from_pyg(data)`` or ``static_graph(temporal_data, end)`` (``dst_offset=`` for a bipartite
graph: every tool then keeps to its two sides); ``random_edge_split``;
``PairSampler(graph, weighting="uniform" | "degree")``; ``heuristic_scores``; ``lognormal_sigma``
and ``pa_auroc_analytic``; ``top_c``, ``vcmpr_per_node``, ``rank_biased_overlap``;
``shift_split`` (structural-shift splits by CN, shortest path or PA); ``heart_negatives`` and
``heart_ranking`` (HeaRT-style hard negatives, MRR, Hits@k); ``personalized_pagerank`` and
``PageRankScorer`` (PPR, the third HeaRT heuristic); ``train_link_gnn`` and ``with_gnns``
(GCN / GraphSAGE baselines); ``run_static`` writes what ``tgeval static`` and ``tgeval shift`` write.

The names below are imported on first use (PEP 562), so ``import tgeval.static`` loads no torch.
"""

from __future__ import annotations

from tgeval.core.lazy import lazy_exports

#: public name -> the module that defines it
_SOURCES = {
    **dict.fromkeys(("lognormal_sigma", "pa_auroc_analytic"), "tgeval.static.degree_bias"),
    **dict.fromkeys(("GNN_MODELS", "GNNConfig", "LinkGNN", "TrainedGNN", "train_link_gnn"), "tgeval.static.gnn"),
    **dict.fromkeys(("EdgeSplit", "StaticGraph", "from_pyg", "random_edge_split", "static_graph"),
                    "tgeval.static.graph"),
    **dict.fromkeys(("HEART_HEURISTICS", "HeartNegatives", "heart_negatives", "heart_ranking"), "tgeval.static.heart"),
    **dict.fromkeys(("HEURISTICS", "Adjacency", "adjacency", "heuristic_scores"), "tgeval.static.heuristics"),
    **dict.fromkeys(("WEIGHTINGS", "PairSampler"), "tgeval.static.negatives"),
    **dict.fromkeys(("PageRankScorer", "personalized_pagerank"), "tgeval.static.ppr"),
    **dict.fromkeys(("agreement", "method_ranking", "rank_biased_overlap", "top_c", "vcmpr_per_node"),
                    "tgeval.static.recommend"),
    **dict.fromkeys(("BENCHMARKS", "StaticBenchmark", "benchmark_of", "build_benchmark", "heart_report",
                     "plot_degree_ccdf", "run_static", "static_report", "with_gnns"), "tgeval.static.report"),
    **dict.fromkeys(("SHIFT_HEURISTICS", "ShiftSplit", "link_scores", "shift_split", "shortest_path_lengths",
                     "wasserstein_1d"), "tgeval.static.shift"),
}

__all__ = list(_SOURCES)

__getattr__, __dir__ = lazy_exports(__name__, _SOURCES)
