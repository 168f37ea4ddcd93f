"""sigma-hat of a log-normal and the analytic PA AUROC Phi(sigma), against numpy/scipy and against a
configuration-model simulation with log-normal degrees."""

import numpy as np
import pytest
import torch
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from tgeval.errors import StaticGraphError
from tgeval.static import lognormal_sigma, pa_auroc_analytic

pytestmark = pytest.mark.usefixtures("one_thread")


def test_sigma_is_the_population_std_of_log_degrees_over_degree_at_least_one():
    degree = torch.tensor([0, 3, 1, 7, 0, 12, 2, 2])
    logs = np.log(np.array([3, 1, 7, 12, 2, 2], dtype=float))
    assert float(lognormal_sigma(degree)) == pytest.approx(np.std(logs, ddof=0), rel=1e-12)
    assert lognormal_sigma(degree.double()).dtype == torch.float64
    with pytest.raises(StaticGraphError, match="degree >= 1"):
        lognormal_sigma(torch.zeros(4, dtype=torch.long))


def test_analytic_auroc_is_the_normal_cdf():
    sigma = torch.tensor([0.0, 0.5, 1.0, 2.0], dtype=torch.float64)
    np.testing.assert_allclose(pa_auroc_analytic(sigma).numpy(), norm.cdf(sigma.numpy()), rtol=1e-12)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.5])
def test_phi_sigma_matches_a_configuration_model_simulation(sigma):
    # N = 2 * 10^4 nodes with degrees round(exp(N(3, sigma^2))) (at least 1), stubs paired at random;
    # positives: random edges, negatives: uniform node pairs; PA = k_u * k_v
    rng = np.random.default_rng(int(sigma * 10))
    n, m = 20_000, 100_000
    k = np.maximum(1, np.rint(np.exp(rng.normal(3.0, sigma, n)))).astype(np.int64)
    stubs = np.repeat(np.arange(n), k)[: k.sum() // 2 * 2]
    rng.shuffle(stubs)
    u, v = stubs[0::2], stubs[1::2]
    edge = rng.integers(0, u.size, m)
    a, b = rng.integers(0, n, (2, m))
    scores = np.r_[k[u[edge]] * k[v[edge]], k[a] * k[b]].astype(float)
    simulated = roc_auc_score(np.r_[np.ones(m), np.zeros(m)], scores)
    sigma_hat = lognormal_sigma(torch.from_numpy(k))
    assert float(sigma_hat) == pytest.approx(sigma, abs=0.05)
    assert float(pa_auroc_analytic(sigma_hat)) == pytest.approx(simulated, abs=0.01)
    assert float(pa_auroc_analytic(torch.tensor(sigma))) == pytest.approx(simulated, abs=0.01)
