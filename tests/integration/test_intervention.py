"""The membership intervention (tgeval.diagnostics.intervention).

The synthetic model's pair representation carries membership on one known axis:
``h = [M, relu(a_u + a_v)]`` with ``M = 1{(u, v) observed before the batch}`` and random node
features ``a``; its last layer weighs ``M`` by ``beta`` and the features by random weights.
Removing the fitted direction must take its Repeated-Unseen cell to chance (the features say
nothing about membership), while a random direction moves the full-catalog MRR by < 0.01.
"""

import math
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from tgeval import chronological_split
from tgeval.data.catalog import build_catalog
from tgeval.data.synthetic import generate_events
from tgeval.diagnostics.membership import membership_factorial
from tgeval.diagnostics.intervention import (fit_directions, membership_intervention, pair_representations,
                                             project_out)
from tgeval.errors import DiagnosticError
from tgeval.models import EdgeBank
from tgeval.models.neural import NeuralLinkModel
from tgeval.stream.state import first_difference
from tests.helpers import small_neural_model

N, F, K = 300, 255, 20


class SeenPairs(nn.Module):
    """State: ``seen [N, N]``, 1 where the directed pair was observed."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("seen", torch.zeros(n, n))

    def reset_state(self):
        self.seen.zero_()

    def snapshot(self):
        return {"seen": self.seen.clone()}

    def restore(self, state):
        self.seen.copy_(state["seen"])


class AxisDecoder(nn.Module):
    """``h = [p_u . e_v, relu(a_u + a_v)]`` from ``z = [p (N), e (N), a (F)]``; ``s = lin_out(h)``."""

    def __init__(self, beta: float, generator: torch.Generator) -> None:
        super().__init__()
        self.lin_out = nn.Linear(1 + F, 1)
        with torch.no_grad():
            self.lin_out.weight[0, 0] = beta
            self.lin_out.weight[0, 1:] = torch.randn(F, generator=generator)
            self.lin_out.bias.zero_()

    def hidden(self, zs, zd):
        member = (zs[:, :N] * zd[:, N:2 * N]).sum(-1, keepdim=True)
        return torch.cat([member, (zs[:, 2 * N:] + zd[:, 2 * N:]).relu()], -1)

    def forward(self, zs, zd):
        return self.lin_out(self.hidden(zs, zd)).squeeze(-1)

    def source_terms(self, z):
        return z

    def target_terms(self, z):
        return z

    def combine(self, s, t):
        w = self.lin_out.weight[0]
        member = s[:, :N] @ t[:, N:2 * N].T
        rest = (s[:, None, 2 * N:] + t[None, :, 2 * N:]).relu() @ w[1:]
        return member * w[0] + rest + self.lin_out.bias


@dataclass(frozen=True)
class AxisConfig:
    num_nodes: int = N
    msg_dim: int = 1
    beta: float = 40.0
    seed: int = 0


class AxisModel(NeuralLinkModel):
    incremental = False

    def __init__(self, beta: float = 40.0, seed: int = 0) -> None:
        super().__init__(AxisConfig(beta=beta, seed=seed), 2 * N + F)
        generator = torch.Generator().manual_seed(seed)
        self.decoder = AxisDecoder(beta, generator)
        self.pairs = SeenPairs(N)
        self.register_buffer("features", torch.randn(N, F, generator=generator))
        self.register_buffer("identity", torch.eye(N))

    @property
    def stateful_parts(self):
        return {"pairs": self.pairs}

    def embed_rows(self, rows, sizes):
        return torch.cat([self.pairs.seen[rows], self.identity[rows], self.features[rows]], -1)

    def ingest(self, src, dst, t, msg, touched=None):
        self.pairs.seen[src, dst] = 1.0

    def changed(self, touched):
        return touched


@pytest.fixture(scope="module")
def setup():
    data = generate_events(4000, N, seed=3, repeat_prob=0.7)
    split = chronological_split(data, (0.7, 0.15, 0.15))
    catalog = build_catalog(data, "train", train_end=split.train.end, num_nodes=N)
    return data, split, catalog


def chance_mrr(k):
    """MRR of a positive ranked uniformly among ``k + 1`` continuous scores: H_{k+1} / (k + 1)."""
    return sum(1 / r for r in range(1, k + 2)) / (k + 1)


def test_membership_axis_is_found_and_removing_it_leaves_chance(setup):
    data, split, catalog = setup
    model = AxisModel()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = membership_intervention(model, data, split.train, split.test, catalog, num_negatives=K)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the model is untouched
    direction = result.directions["membership"]
    assert direction.vector[0] / direction.vector.norm() > 0.999 and direction.probe_auroc > 0.999  # the axis
    base, removed = result.rows["base"], result.rows["membership"]
    w = model.decoder.lin_out.weight.detach()[0]
    assert removed["weight_cosine"] == pytest.approx(float(w[0] / w.norm()), abs=1e-3)  # d is the axis
    cell = removed["factorial"]["repeated_unseen"]
    assert base["factorial"]["repeated_unseen"]["mrr"] > 0.95 and cell["count"] > 100
    # chance: the same model without its membership unit (beta = 0: the same features and weights) ...
    free = membership_factorial(AxisModel(beta=0.0), data, split.test, catalog, num_negatives=K)
    assert abs(cell["mrr"] - free.cell("repeated", "unseen").mrr) < 0.005
    # ... whose positives rank uniformly among K + 1 (the features are independent of the stream): 4 s.e.
    variance = sum(1 / r**2 for r in range(1, K + 2)) / (K + 1) - chance_mrr(K) ** 2
    assert abs(cell["mrr"] - chance_mrr(K)) < 4 * math.sqrt(variance / cell["count"])
    assert removed["mrr"] < base["mrr"] - 0.1
    assert abs(result.rows["random"]["mrr"] - base["mrr"]) < 0.01
    assert abs(result.rows["shuffled"]["mrr"] - base["mrr"]) < 0.01
    for name in ("random", "shuffled"):
        assert result.directions[name].probe_auroc < 0.6
        assert result.rows[name]["factorial"]["repeated_unseen"]["mrr"] > 0.95
    assert "probe AUROC" in result.format_table() and result.to_dict()["manifest"]["num_negatives"] == K


def test_projection_equals_projecting_the_representation(setup):
    """Scores of the projected copy equal w^T (h - (h.d) d / |d|^2) + c on every path."""
    data, split, catalog = setup
    model = small_neural_model("tgn", N, 1)
    head = chronological_split(data[:1200], (0.7, 0.15, 0.15)).train  # a short fitting segment
    h, seen = pair_representations(model, data, head, catalog)
    assert h.shape == (seen.numel(), model.decoder.lin_out.in_features) and 0 < int(seen.sum()) < seen.numel()
    d = fit_directions(h, seen)["membership"].vector
    snapshot = model.snapshot()
    projected = project_out(model, d)
    assert first_difference(model.snapshot(), snapshot) is None
    model.eval(), projected.eval()
    src, dst = data.src[:40], data.dst[:40]
    with torch.no_grad():
        z = model.embed(torch.cat([src, dst]))
        hid = model.decoder.hidden(z[:40], z[40:])
        hid = hid - (hid @ d)[:, None] * d / (d @ d)
        want = model.decoder.lin_out(hid).squeeze(-1)
        torch.testing.assert_close(projected.score(src, dst, data.t[:40]), want, rtol=1e-5, atol=1e-5)
        grid = projected.candidate_scorer(src, data.t[:40], catalog.items)(slice(None), slice(None))
        torch.testing.assert_close(grid[torch.arange(40), torch.searchsorted(catalog.items, dst).clamp(
            max=catalog.size - 1)][catalog.position(dst) >= 0], want[catalog.position(dst) >= 0], rtol=1e-5, atol=1e-5)
        assert not torch.allclose(model.score(src, dst, data.t[:40]), want)  # the original still scores h


def test_refuses_models_without_a_representation_and_degenerate_inputs(setup):
    data, split, catalog = setup
    with pytest.raises(TypeError, match="Heuristics have no representation"):
        project_out(EdgeBank(N), torch.ones(3))
    model = small_neural_model("graphmixer", N, 1)
    with pytest.raises(DiagnosticError, match="nonzero vector of width"):
        project_out(model, torch.zeros(model.decoder.lin_out.in_features))
    with pytest.raises(DiagnosticError, match="nonzero vector of width"):
        project_out(model, torch.ones(3))
    h = torch.randn(10, 4)
    with pytest.raises(DiagnosticError, match="needs seen and unseen pairs"):
        fit_directions(h, torch.ones(10, dtype=torch.bool))
