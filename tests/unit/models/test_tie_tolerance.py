"""Ties under a model's tie_tolerance: float noise between call shapes must not break exact ties."""

import torch

from tgeval import build_catalog, chronological_split, evaluate
from tgeval.data.synthetic import generate_events
from tgeval.eval.metrics import count_above_equal
from tgeval.models import TGN, TGNConfig
from tgeval.eval.protocol import Protocol
from tgeval.samplers import UniformSampler
from tgeval.training.train import Recipe, train_epoch


def test_count_above_equal_with_tolerance_matches_a_loop():
    gen = torch.Generator().manual_seed(0)
    tol = 1e-5
    pos = torch.randn(50, generator=gen, dtype=torch.float64) * 10
    # offsets of -3, -0.5, 0, 0.5 or 3 band widths: clear of the band's edges
    steps = torch.tensor([-3.0, -0.5, 0.0, 0.5, 3.0], dtype=torch.float64)
    k = steps[torch.randint(0, 5, (50, 30), generator=gen)]
    neg = pos[:, None] + k * tol * pos.abs().clamp(min=1)[:, None]
    mask = torch.rand(50, 30, generator=gen) > 0.2
    above, equal = count_above_equal(pos, neg, mask, tol)
    for i in range(50):
        band = tol * max(1.0, abs(float(pos[i])))
        a = sum(1 for j in range(30) if mask[i, j] and float(neg[i, j]) > float(pos[i]) + band)
        e = sum(1 for j in range(30) if mask[i, j] and abs(float(neg[i, j]) - float(pos[i])) <= band)
        assert (int(above[i]), int(equal[i])) == (a, e)
    exact = count_above_equal(pos, neg, mask)
    assert not torch.equal(exact[1], equal)  # the band matters on this input


def test_an_infinite_positive_ties_only_with_itself_under_a_band():
    inf = float("inf")
    pos = torch.tensor([-inf, inf, 0.0])
    neg = torch.tensor([[0.0, 1.0, -inf], [2.0, inf, -inf], [inf, -inf, 5e-6]])
    above, equal = count_above_equal(pos, neg, None, 1e-5)
    assert above.tolist() == [2, 0, 1] and equal.tolist() == [1, 1, 1]


def test_tgn_from_empty_history_ties_every_candidate_whatever_the_batch_size():
    # With no history every node has the same embedding: every candidate truly ties with the
    # positive. The positive is scored alone and the candidates in blocks, so float32
    # rounding differs in the last bits (with these trained weights, batch size 7 put 176
    # candidates "above" without the band); the tie band keeps the ties exact.
    torch.manual_seed(0)
    data = generate_events(1500, 60, seed=1)
    split = chronological_split(data)
    catalog = build_catalog(data, "all", num_nodes=60)
    model = TGN(TGNConfig(60, memory_dim=16, time_dim=16, embedding_dim=16))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    train_epoch(model, data, split.train, recipe=Recipe(UniformSampler(catalog), "bce"), optimizer=optimizer)
    mrrs = []
    for batch_size in (7, 50, 400):
        model.reset_state()
        result = evaluate(model, data, split.test,
                          Protocol(replay="fixed", warm=False, num_negatives=5, batch_size=batch_size), catalog=catalog,
                          sampler=UniformSampler(catalog))
        assert int(result.records["above"].sum()) == 0
        assert int(result.records["sampled_above"].sum()) == 0
        assert torch.equal(result.records["equal"], result.records["candidates"])
        assert result.manifest["tie_tolerance"] == model.capabilities.tie_tolerance
        mrrs.append(result.metrics["all_entity"]["mrr"]["micro"])
    assert mrrs[0] == mrrs[1] == mrrs[2]
