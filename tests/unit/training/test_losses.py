import math

import pytest
import torch
import torch.nn.functional as F
from scipy.stats import kendalltau

from tgeval.training.losses import LOSSES, bce_loss, bpr_loss, get_loss, sampled_softmax_loss


def _leaves(*values):
    return [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]


# -- hand-derived values and gradients -----------------------------------------------------

def test_bpr_value_and_gradient_by_hand():
    pos, neg = _leaves([1.0], [[0.0, 2.0]])
    loss = bpr_loss(pos, neg)
    loss.backward()
    # M = 2 pairs; differences d = s+ - s- = 1 - 0 = 1 and 1 - 2 = -1.
    # L = (-log sigmoid(1) - log sigmoid(-1)) / 2 = (0.3132617 + 1.3132617) / 2 = 0.8132617
    assert loss.item() == pytest.approx(0.8132616875, abs=1e-9)
    # dL/ds+ = -(1/M) sum_k (1 - sigmoid(d_k)) = -(sigmoid(-1) + sigmoid(1)) / 2 = -1/2 exactly
    assert pos.grad.tolist() == pytest.approx([-0.5], abs=1e-12)
    # dL/ds-_k = (1/M)(1 - sigmoid(d_k)): (1 - sigmoid(1)) / 2 = 0.2689414 / 2,
    #                                    (1 - sigmoid(-1)) / 2 = 0.7310586 / 2
    assert neg.grad[0].tolist() == pytest.approx([0.1344707110, 0.3655292890], abs=1e-9)


def test_bce_value_and_gradient_by_hand():
    pos, neg = _leaves([0.0], [[0.0, math.log(3.0)]])
    loss = bce_loss(pos, neg)
    loss.backward()
    # B(1 + K) = 3 terms: -log sigmoid(0) = log 2, -log(1 - sigmoid(0)) = log 2,
    # -log(1 - sigmoid(log 3)) = -log(1 - 3/4) = log 4; mean = 4 log 2 / 3 = 0.9241962
    assert loss.item() == pytest.approx(4 * math.log(2) / 3, abs=1e-12)
    # dL/ds+ = -(1 - sigmoid(0)) / 3 = -1/6
    assert pos.grad.tolist() == pytest.approx([-1 / 6], abs=1e-12)
    # dL/ds- = sigmoid(s-) / 3: sigmoid(0) / 3 = 1/6, sigmoid(log 3) / 3 = (3/4) / 3 = 1/4
    assert neg.grad[0].tolist() == pytest.approx([1 / 6, 1 / 4], abs=1e-12)


def test_sampled_softmax_value_and_gradient_by_hand():
    pos, neg = _leaves([0.0], [[0.0, math.log(2.0)]])
    loss = sampled_softmax_loss(pos, neg)
    loss.backward()
    # softmax over [e^0, e^0, e^log2] = [1, 1, 2] / 4; L = -log(1/4) = log 4
    assert loss.item() == pytest.approx(math.log(4), abs=1e-12)
    # dL/ds+ = p+ - 1 = 1/4 - 1 = -3/4; dL/ds-_k = p_k = 1/4, 1/2
    assert pos.grad.tolist() == pytest.approx([-0.75], abs=1e-12)
    assert neg.grad[0].tolist() == pytest.approx([0.25, 0.5], abs=1e-12)


def test_sampled_softmax_log_q_by_hand():
    # log q of the negatives = [log 1/2, log 1/4], of the positive log 1/4: corrected logits
    # [0 - log 1/4, 0 - log 1/2, 0 - log 1/4] = [log 4, log 2, log 4] -> weights [4, 2, 4] / 10
    pos, neg = torch.tensor([0.0]), torch.tensor([[0.0, 0.0]])
    log_q = torch.tensor([[math.log(0.5), math.log(0.25)]])
    loss = sampled_softmax_loss(pos, neg, log_q=log_q, log_q_pos=torch.tensor([math.log(0.25)]))
    assert loss.item() == pytest.approx(-math.log(0.4), abs=1e-6)
    # without the positive's correction: [0, log 2, log 4] -> weights [1, 2, 4] / 7
    assert sampled_softmax_loss(pos, neg, log_q=log_q).item() == pytest.approx(math.log(7), abs=1e-6)


# -- against references on random inputs ---------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_bce_equals_torch_reference(seed):
    g = torch.Generator().manual_seed(seed)
    pos, neg = 3 * torch.randn(7, generator=g), 3 * torch.randn(7, 5, generator=g)
    logits = torch.cat([pos, neg.flatten()])
    labels = torch.cat([torch.ones(7), torch.zeros(35)])
    expected = F.binary_cross_entropy_with_logits(logits, labels)
    torch.testing.assert_close(bce_loss(pos, neg), expected)
    torch.testing.assert_close(bce_loss(pos, neg, reduction="sum"),
                               F.binary_cross_entropy_with_logits(logits, labels, reduction="sum"))
    terms = bce_loss(pos, neg, reduction="none")
    assert terms.shape == (7, 6)
    torch.testing.assert_close(terms.mean(), expected)


@pytest.mark.parametrize("seed", range(3))
def test_masks_equal_dropping_the_masked_negatives(seed):
    g = torch.Generator().manual_seed(seed)
    pos, neg = torch.randn(6, generator=g), torch.randn(6, 4, generator=g)
    mask = torch.rand(6, 4, generator=g) < 0.6
    log_q = torch.randn(6, 4, generator=g)
    # reference: a loop over rows with only the valid negatives
    bce_terms, bpr_terms, ss_terms = [], [], []
    for i in range(6):
        valid, lq = neg[i][mask[i]], log_q[i][mask[i]]
        bce_terms += [-F.logsigmoid(pos[i])] + list(-F.logsigmoid(-valid))
        bpr_terms += list(-F.logsigmoid(pos[i] - valid))
        ss_terms.append(-torch.log_softmax(torch.cat([pos[i:i + 1], valid - lq]), 0)[0])
    torch.testing.assert_close(bce_loss(pos, neg, neg_mask=mask), torch.stack(bce_terms).mean())
    torch.testing.assert_close(bpr_loss(pos, neg, neg_mask=mask), torch.stack(bpr_terms).mean())
    torch.testing.assert_close(sampled_softmax_loss(pos, neg, log_q=log_q, neg_mask=mask),
                               torch.stack(ss_terms).mean())


@pytest.mark.parametrize("seed", range(3))
def test_sampled_softmax_equals_log_softmax_by_hand(seed):
    g = torch.Generator().manual_seed(seed)
    pos, neg = 2 * torch.randn(5, generator=g), 2 * torch.randn(5, 3, generator=g)
    log_q, log_q_pos = torch.randn(5, 3, generator=g), torch.randn(5, generator=g)
    expected = -torch.log_softmax(torch.cat([pos[:, None], neg], 1), dim=1)[:, 0]
    torch.testing.assert_close(sampled_softmax_loss(pos, neg, reduction="none"), expected)
    corrected = torch.cat([(pos - log_q_pos)[:, None], neg - log_q], 1)
    expected = -torch.log_softmax(corrected, dim=1)[:, 0]
    got = sampled_softmax_loss(pos, neg, log_q=log_q, log_q_pos=log_q_pos)
    torch.testing.assert_close(got, expected.mean())
    # one constant added to every log q (e.g. log K) changes nothing when the positive is corrected
    torch.testing.assert_close(sampled_softmax_loss(pos, neg, log_q=log_q + 2.5, log_q_pos=log_q_pos + 2.5), got)


def test_gradcheck_with_masks():
    g = torch.Generator().manual_seed(0)
    pos = torch.randn(3, generator=g, dtype=torch.float64, requires_grad=True)
    neg = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, False, True, True], [False] * 4, [True] * 4])
    for fn in (bce_loss, bpr_loss, sampled_softmax_loss):
        assert torch.autograd.gradcheck(lambda p, n, fn=fn: fn(p, n, neg_mask=mask), (pos, neg))


def test_stable_for_extreme_logits_and_empty_masks():
    pos, neg = torch.tensor([1e4, -1e4]), torch.tensor([[-1e4, 1e4], [1e4, -1e4]])
    for fn in (bce_loss, bpr_loss, sampled_softmax_loss):
        assert torch.isfinite(fn(pos, neg))
    # BPR: pair (1e4, -1e4) costs ~0, pair (1e4, 1e4) log 2, pair (-1e4, 1e4) 2e4, pair (-1e4, -1e4) log 2
    assert bpr_loss(pos, neg).item() == pytest.approx((2 * math.log(2) + 2e4) / 4, rel=1e-6)
    # no valid negative anywhere: BPR has no term (0, not nan); softmax over the positive alone is 0
    none = torch.zeros(2, 2, dtype=torch.bool)
    assert bpr_loss(pos, neg, neg_mask=none).item() == 0.0
    assert sampled_softmax_loss(pos, neg, neg_mask=none).item() == 0.0


# -- log-q correction recovers the full-catalog ordering --------------------------------------

def _learn_free_logits(w, log_q, *, corrected, steps=800, batch=128, k=8, lr=0.5, seed=0):
    """SGD on one free logit per catalog item; positives ~ softmax(w), negatives ~ q (i.i.d.)."""
    g = torch.Generator().manual_seed(seed)
    p, q = torch.softmax(w, 0), log_q.exp()
    theta = torch.zeros_like(w, requires_grad=True)
    optimizer = torch.optim.SGD([theta], lr=lr)
    for _ in range(steps):
        y = torch.multinomial(p, batch, replacement=True, generator=g)
        neg = torch.multinomial(q, batch * k, replacement=True, generator=g).view(batch, k)
        if corrected:
            loss = sampled_softmax_loss(theta[y], theta[neg], log_q=log_q[neg], log_q_pos=log_q[y])
        else:
            loss = sampled_softmax_loss(theta[y], theta[neg])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return theta.detach()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_q_correction_recovers_full_catalog_order(seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(20, generator=g, dtype=torch.float64)      # true preference p(v) ∝ exp(w_v)
    v = torch.arange(1, 21, dtype=torch.float64)
    log_q = torch.log(v ** 2 / (v ** 2).sum())                  # popularity-like proposal q ∝ v^2
    corrected = _learn_free_logits(w, log_q, corrected=True, seed=seed)
    plain = _learn_free_logits(w, log_q, corrected=False, seed=seed)
    tau_corrected = kendalltau(corrected.numpy(), w.numpy())[0]
    tau_plain = kendalltau(plain.numpy(), w.numpy())[0]
    assert tau_corrected >= 0.85  # observed 0.94-0.97
    assert tau_plain <= 0.5      # observed 0.20-0.33
    assert tau_corrected - tau_plain >= 0.5
    # what the uncorrected loss learns instead: the Bayes target under q, log p - log q (docs/protocol.md §5)
    assert kendalltau(plain.numpy(), (w - log_q).numpy())[0] >= 0.85  # observed 0.94-0.99


# -- registry and errors -------------------------------------------------------------------

def test_registry():
    assert get_loss("bce") is bce_loss and get_loss("BPR") is bpr_loss
    assert get_loss("sampled-softmax") is sampled_softmax_loss
    assert set(LOSSES) == {"bce", "bpr", "sampled_softmax"}
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        get_loss("hinge")


def test_bad_inputs_are_named():
    pos, neg = torch.zeros(3), torch.zeros(3, 2)
    with pytest.raises(ValueError, match="`pos` must be \\[B\\]"):
        bce_loss(pos, torch.zeros(2, 2))
    with pytest.raises(ValueError, match="reduction"):
        bpr_loss(pos, neg, reduction="avg")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="floating point"):
        bce_loss(torch.zeros(3, dtype=torch.long), neg)
    with pytest.raises(ValueError, match="neg_mask"):
        bpr_loss(pos, neg, neg_mask=torch.ones(3, 2))
    with pytest.raises(ValueError, match="log_q"):
        sampled_softmax_loss(pos, neg, log_q=torch.zeros(3))
    with pytest.raises(ValueError, match="log_q_pos"):
        sampled_softmax_loss(pos, neg, log_q_pos=torch.zeros(3, 1))

