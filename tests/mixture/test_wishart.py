"""The mixture's Wishart prior: Bartlett draws with the right law and no spurious warning."""

import warnings

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.mixture import GaussianMixtureModel
from pyromodels.mixture.wishart import BartlettWishart

F64 = torch.float64


def test_draws_raise_no_singular_sample_warning_where_torchs_do():
    nu, tril = torch.tensor(3.5, dtype=F64), torch.tensor([[1.0, 0.0], [0.9, 0.1]], dtype=F64)
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.Wishart(nu, scale_tril=tril).sample((4000,))
    assert any("Singular sample" in str(w.message) for w in caught)  # torch's own check warns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws = BartlettWishart(nu, scale_tril=tril).sample((4000,))
    assert bool((torch.linalg.eigvalsh(draws) > 0).all())


def test_draws_have_the_wishart_mean_and_variance():
    # E[X] = nu W and Var[X_ij] = nu (W_ij^2 + W_ii W_jj); the tolerance is 5 standard errors
    nu = torch.tensor(6.0, dtype=F64)
    W = torch.tensor([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]], dtype=F64)
    n = 40_000
    torch.manual_seed(1)
    draws = BartlettWishart(nu, covariance_matrix=W).sample((n,))
    var = nu * (W**2 + torch.outer(W.diagonal(), W.diagonal()))
    z = (draws.mean(0) - nu * W) / (var / n).sqrt()
    assert float(z.abs().max()) < 5.0
    z_var = (draws.var(0) - var) / var  # relative error of the variance, sd about sqrt(2/n)*k
    assert float(z_var.abs().max()) < 0.1


def test_log_prob_is_pyros_wishart():
    nu, W = torch.tensor(4.0, dtype=F64), torch.tensor([[1.0, 0.2], [0.2, 0.7]], dtype=F64)
    x = torch.tensor([[3.0, 0.5], [0.5, 2.0]], dtype=F64)
    ours, ref = BartlettWishart(nu, covariance_matrix=W), dist.Wishart(nu, covariance_matrix=W)
    assert float(ours.log_prob(x)) == pytest.approx(float(ref.log_prob(x)), abs=1e-12)
    assert isinstance(ours.expand([3]), BartlettWishart)


def test_prior_predictive_of_the_mixture_is_warning_free():
    x = torch.randn(50, 2, dtype=F64, generator=torch.Generator().manual_seed(0))
    model = GaussianMixtureModel(num_components=3)
    data = model.prepare(x)
    pyro.set_rng_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws = pyro.infer.Predictive(model.model, num_samples=200)(data)
    assert draws["precisions"].shape[0] == 200 and draws["precisions"].shape[-3:] == (3, 2, 2)
