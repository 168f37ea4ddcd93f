"""The blockwise scorer derived from ``embed`` / ``decode`` splits the longer side into blocks."""

import pytest
import torch

from tgeval.models.base import embedding_scorer, pairwise_scorer

D = 4


class Recorder:
    """``embed`` a fixed table, ``decode`` an MLP of the two sides that records each call's shapes."""

    def __init__(self):
        gen = torch.Generator().manual_seed(0)
        self.table = torch.randn(500, D, generator=gen)
        self.w_src, self.w_dst, self.w_out = (torch.randn(D, D, generator=gen) for _ in range(3))
        self.calls = []

    def embed(self, nodes):
        return self.table[nodes]

    def decode(self, z_src, z_dst):
        self.calls.append((z_src.shape[:-1], z_dst.shape[:-1]))
        return ((z_src @ self.w_src + z_dst @ self.w_dst).relu() @ self.w_out).sum(-1)

    def score(self, src, dst, t):
        return self.decode(self.embed(src), self.embed(dst))


@pytest.mark.parametrize("num_src, num_cand", [(6, 300), (300, 6)], ids=["more-candidates", "more-sources"])
def test_blocks_split_the_longer_side_and_score_as_pairs(monkeypatch, num_src, num_cand):
    """Each node of the longer side is decoded once; the shorter side is whole in every block
    (a split along the sources would decode every candidate once per block)."""
    monkeypatch.setattr("tgeval.models.base.EMBEDDING_BLOCK", 6 * 40 * D)  # blocks of 40 of the longer side
    model = Recorder()
    src, cand = torch.arange(num_src), torch.arange(200 - num_cand, 200)  # overlapping ids
    t = torch.zeros(num_src, dtype=torch.long)
    expected = pairwise_scorer(model.score, src, t, cand)(slice(None), slice(None))
    scorer = embedding_scorer(model.embed, model.decode, src, cand)
    model.calls.clear()  # drop the broadcasting probe
    scores = scorer(slice(None), slice(None))
    torch.testing.assert_close(scores, expected, rtol=1e-5, atol=1e-5)
    src_rows = [s[0] for s, _ in model.calls]
    cand_rows = [c[1] for _, c in model.calls]
    assert len(model.calls) == 8  # ceil(300 / 40) blocks
    if num_cand > num_src:
        assert sum(cand_rows) == num_cand and set(src_rows) == {num_src}
    else:
        assert sum(src_rows) == num_src and set(cand_rows) == {num_cand}
    torch.testing.assert_close(scorer(slice(2, 5), slice(1, 4)), scores[2:5, 1:4], rtol=1e-5, atol=1e-5)
    assert scorer(slice(0, 0), slice(None)).shape == (0, num_cand)
    assert scorer(slice(None), slice(0, 0)).shape == (num_src, 0)
