"""The all-entity pass says once, with its cost and the fix, when it scores a model pair by pair."""

import warnings

import pytest
import torch
from torch import nn

from tgeval import evaluate
from tgeval.data.catalog import build_catalog
from tgeval.data.split import Segment
from tgeval.errors import SlowPathWarning
from tgeval.models.base import TemporalLinkModel, pairwise_scorer, scores_pair_by_pair
from tgeval.models.heuristics import Popularity
from tgeval.eval.protocol import Protocol
from tgeval.samplers.uniform import UniformSampler
from tests.conftest import make_stream
from tests.helpers import TableModel

NUM_NODES = 12


class ScoreOnly(TemporalLinkModel):
    """``<E[src], E[dst]>`` through ``score`` alone: the engine can only score it pair by pair."""

    def __init__(self):
        super().__init__(NUM_NODES)
        self.emb = nn.Parameter(torch.randn(NUM_NODES, 4, generator=torch.Generator().manual_seed(0)))

    def score(self, src, dst, t):
        return (self.emb[src] * self.emb[dst]).sum(-1)

    def update(self, batch):
        pass


class EmbedDecode(ScoreOnly):
    """The same scores, with ``embed`` and ``decode``: the engine embeds each node once per batch."""

    def embed(self, nodes):
        return self.emb[nodes]

    def decode(self, z_src, z_dst):
        return (z_src * z_dst).sum(-1)


class OwnScorer(ScoreOnly):
    """The same scores, pair by pair by its own choice (an explicit ``candidate_scorer``)."""

    def candidate_scorer(self, src, t, candidates):
        return pairwise_scorer(self.score, src, t, candidates)


def stream():
    gen = torch.Generator().manual_seed(1)
    src, dst = torch.randint(0, NUM_NODES, (60,), generator=gen), torch.randint(0, NUM_NODES, (60,), generator=gen)
    return make_stream(src, dst, torch.arange(60) // 2)


def slow_path_warnings(model, passes=1, all_entity=True):
    """The SlowPathWarnings of ``passes`` all-entity (else sampled) evaluations of the last 30 events
    (6 batches)."""
    data = stream()
    segment = Segment("test", 30, 60, int(data.t[30]), int(data.t[59]))
    catalog = build_catalog(data, "all")
    sampler, catalog = (None, catalog) if all_entity else (UniformSampler(catalog), None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [evaluate(model, data, segment, Protocol(batch_size=5, num_negatives=3), sampler=sampler,
                            catalog=catalog)
                   for _ in range(passes)]
    return [w for w in caught if issubclass(w.category, SlowPathWarning)], results


def test_score_only_model_warns_once_per_pass_with_cost_and_fix():
    caught, results = slow_path_warnings(ScoreOnly(), passes=2)
    assert len(caught) == 2  # one per pass, not one per batch (6 batches each)
    message = str(caught[0].message)
    catalog_size = build_catalog(stream(), "all").size
    assert f"30 events x {catalog_size:,} catalog items = {30 * catalog_size:,} pairs" in message
    assert "about" in message and "pairs/s" in message
    assert "embed(nodes)" in message and "decode(z_src, z_dst)" in message and "candidate_scorer" in message
    assert results[0].metrics == results[1].metrics


@pytest.mark.parametrize("model", [EmbedDecode(), OwnScorer(), Popularity(NUM_NODES),
                                   TableModel(torch.rand(NUM_NODES, NUM_NODES, dtype=torch.float64))],
                         ids=["embed-decode", "own-candidate-scorer", "heuristic", "table"])
def test_models_with_a_chosen_path_do_not_warn(model):
    caught, _ = slow_path_warnings(model)
    assert caught == []


def test_warning_changes_no_number():
    """The pair-by-pair pass (which warns) and the derived embed/decode one rank identically."""
    _, (slow,) = slow_path_warnings(ScoreOnly())
    _, (fast,) = slow_path_warnings(EmbedDecode())
    assert torch.equal(slow.event_table()["rank"], fast.event_table()["rank"])


def test_no_all_entity_pass_no_warning():
    caught, _ = slow_path_warnings(ScoreOnly(), all_entity=False)
    assert caught == []


def test_scores_pair_by_pair():
    assert scores_pair_by_pair(ScoreOnly())
    assert not any(scores_pair_by_pair(m) for m in (EmbedDecode(), OwnScorer(), Popularity(NUM_NODES)))
