"""The importance-weighted bounds on probabilistic PCA, where log p(x) is known in closed form.

A VAE with no hidden layers and a N(0, I) prior is probabilistic PCA when the decoder's mean
is W z + b and its log variance the constant log s^2: x ~ N(b, W W^T + s^2 I). The encoder is
set to a deliberately imperfect diagonal Gaussian (the exact posterior mean shifted, its
marginal standard deviations inflated), wide enough that the importance weights have finite
variance, so the ELBO lies strictly below log p(x) by KL(q || p(z | x)).
"""

import math

import pyro
import pytest
import torch
from pyro.infer import Trace_ELBO
from torch.distributions import MultivariateNormal, kl_divergence

from pyromodels.ltvae import VAE, IWAEBound

D, J, N, S = 4, 2, 200, 0.5


def _ppca(seed=0, exact_guide=False):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(D, J, generator=g)
    if exact_guide:  # orthogonal columns: the posterior covariance is diagonal
        W = torch.linalg.qr(W).Q * torch.tensor([2.0, 0.7])
    b = torch.randn(D, generator=g)
    cov = W @ W.T + S**2 * torch.eye(D)
    marginal = MultivariateNormal(b, cov)
    x = b + torch.randn(N, D, generator=g) @ torch.linalg.cholesky(cov).T
    M = W.T @ W + S**2 * torch.eye(J)
    A = torch.linalg.solve(M, W.T)                        # posterior mean = A (x - b)
    post_cov = S**2 * torch.linalg.inv(M)
    tau = post_cov.diagonal().sqrt() * (1.0 if exact_guide else 1.5)   # q's standard deviations
    shift = torch.zeros(J) if exact_guide else torch.tensor([0.3, -0.2])
    # the weights' variance is finite when 2 P_post - P_q is positive definite
    assert bool((torch.linalg.eigvalsh(2 * torch.linalg.inv(post_cov) - torch.diag(tau**-2)) > 0).all())
    params = {
        "encoder.net.0.weight": torch.cat([A, torch.zeros(J, D)]),
        "encoder.net.0.bias": torch.cat([-A @ b + shift, tau.log()]),
        "decoder.net.0.weight": torch.cat([W, torch.zeros(D, J)]),
        "decoder.net.0.bias": torch.cat([b, torch.full((D,), math.log(S**2))]),
    }
    exact = marginal.log_prob(x)
    post_mean = (x - b) @ A.T
    q = MultivariateNormal(post_mean + shift, torch.diag(tau**2))
    elbo = exact - kl_divergence(q, MultivariateNormal(post_mean, post_cov))
    return VAE(J, hidden=(), likelihood="normal"), params, x, exact, elbo


def test_with_the_exact_posterior_as_guide_every_weight_is_the_marginal_likelihood():
    # checks the program's and the guide's log densities, signs and constants together
    vae, params, x, exact, elbo = _ppca(exact_guide=True)
    torch.testing.assert_close(elbo, exact)
    for k, rows in ((1, None), (7, None), (7, 13)):
        est = vae.importance_log_likelihood(params, x, k=k, batch_size=3, row_batch_size=rows, seed=k)
        torch.testing.assert_close(est.per_point, exact)
        assert float(est.mc_standard_error.max()) < 1e-6


def test_k_equal_one_is_the_elbo_below_the_exact_log_likelihood():
    vae, params, x, exact, elbo = _ppca()
    est = vae.importance_log_likelihood(params, x, k=1, seed=1)
    diff = est.per_point - elbo                      # one draw of log w per point, mean ELBO
    se = float(diff.std()) / math.sqrt(N)
    assert abs(float(diff.mean())) < 4 * se
    gap = float((exact - elbo).mean())               # mean KL(q || p(z | x)), closed form
    assert gap > 8 * se
    assert est.mean < float(exact.mean()) - 4 * se


def test_large_k_converges_to_the_exact_log_likelihood():
    vae, params, x, exact, elbo = _ppca()
    est = vae.importance_log_likelihood(params, x, k=2000, batch_size=300, row_batch_size=64,
                                        seed=2)
    assert est.per_point.shape == est.mc_standard_error.shape == (N,)
    assert est.k == 2000 and est.seed == 2
    mc_se = float(est.mc_standard_error.pow(2).sum().sqrt()) / N
    bias = -float(est.mc_standard_error.pow(2).mean()) / 2   # E log(mean w) - log p, to 1st order
    err = float((est.per_point - exact).mean())
    assert abs(err - bias) < 4 * mc_se
    # far closer than the ELBO: the gap to log p(x) closes with k
    assert abs(err) < float((exact - elbo).mean()) / 20
    # each point within a few of its own Monte Carlo standard errors
    z = (est.per_point - exact) / est.mc_standard_error
    assert float(z.abs().max()) < 5
    # the reported mean and its spread over the points
    assert est.mean == pytest.approx(float(est.per_point.mean()))
    assert est.standard_error == pytest.approx(float(est.per_point.std()) / math.sqrt(N))


def test_the_estimate_is_seeded_and_does_not_touch_the_global_generator():
    vae, params, x, _, _ = _ppca()
    state = torch.get_rng_state()
    a = vae.importance_log_likelihood(params, x[:10], k=50, batch_size=20, seed=5)
    torch.testing.assert_close(torch.get_rng_state(), state)
    b = vae.importance_log_likelihood(params, x[:10], k=50, batch_size=20, seed=5)
    c = vae.importance_log_likelihood(params, x[:10], k=50, batch_size=20, seed=6)
    torch.testing.assert_close(a.per_point, b.per_point)
    assert not torch.allclose(a.per_point, c.per_point)


def _load(params):
    store = pyro.get_param_store()
    for name, value in params.items():
        store[name] = value.clone()


def test_the_iwae_bound_exceeds_the_k1_bound_on_average():
    vae, params, x, exact, _ = _ppca()
    _load(params)
    data = vae.prepare(x)
    gains = []
    for seed in range(20):
        pyro.set_rng_seed(seed)
        one = IWAEBound(num_particles=1).loss(vae.model, vae.guide, data)
        pyro.set_rng_seed(1000 + seed)
        ten = IWAEBound(num_particles=10).loss(vae.model, vae.guide, data)
        gains.append(one - ten)                  # losses are negative bounds
    gains = torch.tensor(gains)
    se = float(gains.std()) / math.sqrt(len(gains))
    assert float(gains.mean()) > 4 * se
    # and neither bound (as a total over the points) exceeds log p(x)
    assert -ten < float(exact.sum()) + 4 * se * math.sqrt(len(gains))


def test_at_k1_the_iwae_loss_is_trace_elbo_on_the_same_draws_with_a_subsample():
    vae, params, x, _, _ = _ppca()
    _load(params)
    data = vae.prepare(x, batch_size=32)
    pyro.set_rng_seed(3)
    iwae = IWAEBound(num_particles=1).loss(vae.model, vae.guide, data)
    pyro.set_rng_seed(3)
    elbo = Trace_ELBO(max_plate_nesting=1).loss(vae.model, vae.guide, data)
    assert iwae == pytest.approx(elbo, rel=1e-10)


def test_the_iwae_gradient_reaches_the_encoder_and_the_decoder():
    vae = VAE(2, hidden=(5,), likelihood="normal")
    x = torch.randn(12, 3, generator=torch.Generator().manual_seed(0))
    data = vae.prepare(x, batch_size=6)
    pyro.set_rng_seed(0)
    loss = IWAEBound(num_particles=7).differentiable_loss(vae.model, vae.guide, data)
    loss.backward()
    store = pyro.get_param_store()
    names = sorted(store.keys())
    assert any(n.startswith("encoder.") for n in names) and any(n.startswith("decoder.") for n in names)
    for name in names:
        grad = dict(store.named_parameters())[name].grad
        assert grad is not None and bool(torch.isfinite(grad).all()), name
        assert float(grad.abs().sum()) > 0, name


def test_bad_arguments_of_the_bound_are_reported():
    with pytest.raises(ValueError, match="num_particles"):
        IWAEBound(num_particles=0)
    vae, params, x, _, _ = _ppca()
    with pytest.raises(ValueError, match="k must be"):
        vae.importance_log_likelihood(params, x, k=0)
    with pytest.raises(ValueError, match="batch_size must be"):
        vae.importance_log_likelihood(params, x, k=5, batch_size=0)
