"""Each automatic update against its hand-derived or brute-force conditional, and a short chain
against the exact posterior."""

import itertools

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC

from pyromodels.autogibbs import AutoGibbs, NotConjugate, fit_gibbs, posterior_params
from pyromodels.autogibbs.discrete import brute_force_logits, element_logits
from pyromodels.testing import assert_mc_mean

from .models import (
    beta_bernoulli,
    beta_binomial,
    coupled,
    dirichlet_categorical,
    f64,
    gamma_poisson,
    mixture,
    squared_rate,
)

TOL = dict(rtol=1e-10, atol=1e-10)


def test_beta_binomial_posterior_is_exact():
    k, n = f64([3.0, 5.0, 1.0]), f64([5.0, 6.0, 4.0])
    got = posterior_params(beta_binomial, (k, n), {}, {"p": f64(0.4)}, "p",
                           dist.Beta(f64(2.0), f64(3.0)))
    torch.testing.assert_close(got["concentration1"], 2.0 + k.sum(), **TOL)
    torch.testing.assert_close(got["concentration0"], 3.0 + (n - k).sum(), **TOL)


def test_beta_bernoulli_posterior_is_exact():
    y = f64([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    got = posterior_params(beta_bernoulli, (y,), {}, {"p": f64(0.5)}, "p",
                           dist.Beta(f64(0.5), f64(1.5)))
    torch.testing.assert_close(got["concentration1"], f64(0.5 + 4), **TOL)
    torch.testing.assert_close(got["concentration0"], f64(1.5 + 2), **TOL)


def test_gamma_poisson_posterior_is_exact():
    c = f64([3.0, 0.0, 7.0, 2.0])
    got = posterior_params(gamma_poisson, (c,), {}, {"lam": f64(1.0)}, "lam",
                           dist.Gamma(f64(2.0), f64(0.5)))
    torch.testing.assert_close(got["concentration"], 2.0 + c.sum(), **TOL)
    torch.testing.assert_close(got["rate"], f64(0.5 + 4), **TOL)


def test_dirichlet_categorical_posterior_is_exact():
    y = torch.tensor([0, 2, 2, 1, 2, 0])
    got = posterior_params(dirichlet_categorical, (y,), {}, {"theta": f64([0.2, 0.3, 0.5])},
                           "theta", dist.Dirichlet(f64([1.0, 2.0, 0.5])))
    torch.testing.assert_close(got["concentration"], f64([1.0 + 2, 2.0 + 1, 0.5 + 3]), **TOL)


def test_normal_means_gathered_by_assignment_are_exact():
    x = f64([-2.0, -1.5, 2.0, 2.5, 0.3])
    z = torch.tensor([0, 0, 1, 1, 0])
    state = {"w": f64([0.5, 0.5]), "locs": f64([0.0, 1.0]), "z": z}
    got = posterior_params(mixture, (x,), {}, state, "locs",
                           dist.Normal(f64(1.0), f64(3.0)).expand([2]))
    prec = 1 / 9.0 + torch.stack([(z == k).sum() for k in range(2)]).double() / 0.49
    mean = (1.0 / 9.0 + torch.stack([x[z == k].sum() for k in range(2)]) / 0.49) / prec
    torch.testing.assert_close(got["loc"], mean, **TOL)
    torch.testing.assert_close(got["scale"], prec.rsqrt(), **TOL)


def test_non_conjugate_site_is_refused():
    with pytest.raises(NotConjugate, match="'lam'.*not linear"):
        posterior_params(squared_rate, (f64([1.0, 4.0]),), {}, {"lam": f64(1.0)},
                         "lam", dist.Gamma(f64(2.0), f64(0.5)))


def _mixture_log_joint(x, w, locs, z):
    """The mixture's log joint written out with torch distributions (no Pyro trace)."""
    return (dist.Dirichlet(torch.ones(2, dtype=torch.float64)).log_prob(w)
            + dist.Normal(f64(1.0), f64(3.0)).log_prob(locs).sum()
            + dist.Categorical(w).log_prob(z).sum()
            + dist.Normal(locs[z], f64(0.7)).log_prob(x).sum())


def test_vectorised_discrete_conditional_equals_enumeration_of_the_joint():
    x = f64([-2.0, 0.4, 2.5])
    w, locs, z = f64([0.3, 0.7]), f64([-1.0, 2.0]), torch.tensor([1, 0, 1])
    state = {"w": w, "locs": locs, "z": z}
    logits = element_logits(mixture, (x,), {}, state, "z", torch.arange(2))
    for i in range(3):
        joint = []
        for v in range(2):
            zz = z.clone()
            zz[i] = v
            joint.append(_mixture_log_joint(x, w, locs, zz))
        torch.testing.assert_close(torch.softmax(logits[i], -1), torch.softmax(torch.stack(joint), 0),
                                   **TOL)


def test_coupled_site_has_no_vectorised_conditional_and_brute_force_is_right():
    x = f64([0.2, 1.1])
    state = {"z": f64([1.0, 0.0])}
    assert element_logits(coupled, (x,), {}, state, "z", f64([0.0, 1.0])) is None
    got = brute_force_logits(coupled, (x,), {}, state, "z", (1,), f64([0.0, 1.0]))
    want = []
    for v in (0.0, 1.0):
        z = f64([1.0, v])
        want.append(dist.Bernoulli(f64(0.3)).log_prob(z).sum() + dist.Normal(z, 1.0).log_prob(x).sum()
                    + dist.Normal(z.sum(), 0.5).log_prob(f64(1.0)))
    torch.testing.assert_close(got, torch.stack(want), **TOL)


def test_coupled_chain_matches_exact_marginals():
    """Element-by-element updates on a model whose assignments meet through their sum."""
    x = f64([0.2, 1.1, 0.6])
    post = fit_gibbs(coupled, x, num_samples=1000, warmup=20, num_chains=1, seed=3,
                     progress=False, diagnostic_warnings=False)
    joint = {}
    for z in itertools.product([0.0, 1.0], repeat=3):
        zz = f64(z)
        joint[z] = float((dist.Bernoulli(f64(0.3)).log_prob(zz).sum()
                          + dist.Normal(zz, 1.0).log_prob(x).sum()
                          + dist.Normal(zz.sum(), 0.5).log_prob(f64(1.0))).exp())
    total = sum(joint.values())
    exact = [sum(p for z, p in joint.items() if z[i] == 1.0) / total for i in range(3)]
    draws = post.samples["z"][0].numpy()
    # successive sweeps are correlated: compare means of batches of 50 draws
    assert_mc_mean(draws.reshape(20, 50, 3).mean(1), exact, n_se=4)


def test_beta_binomial_chain_matches_exact_posterior_mean():
    k, n = f64([3.0, 5.0, 1.0]), f64([5.0, 6.0, 4.0])
    post = fit_gibbs(beta_binomial, k, n, num_samples=400, warmup=5, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    a, b = 2.0 + 9.0, 3.0 + 6.0
    assert_mc_mean(post.samples["p"][0].numpy(), a / (a + b), n_se=4)


def test_autogibbs_kernel_runs_with_pyro_mcmc():
    c = f64([3.0, 0.0, 7.0, 2.0])
    kernel = AutoGibbs(gamma_poisson, c, seed=0)
    assert str(kernel.plan).startswith("lam  conjugate")
    pyro.set_rng_seed(0)
    mcmc = MCMC(kernel, num_samples=400, warmup_steps=5, disable_progbar=True)
    mcmc.run(c)
    draws = mcmc.get_samples()["lam"].numpy()
    assert_mc_mean(draws, (2.0 + 12.0) / 4.5, n_se=4)


def test_verification_leaves_the_chains_draws_alone():
    """The first-sweep checks draw from their own generator: with or without them, and for
    every chain, the same seed gives the same draws."""
    x = f64([-2.0, -1.5, 2.0, 2.5])
    runs = [fit_gibbs(mixture, x, verify=v, num_samples=3, warmup=1, num_chains=2, seed=5,
                      progress=False, diagnostic_warnings=False) for v in (True, False)]
    for site in ("w", "locs", "z"):
        assert torch.equal(runs[0].samples[site], runs[1].samples[site])


def test_the_log_likelihood_sums_the_vectorised_assignments_out():
    x = torch.tensor([-2.1, -1.7, 2.3, 1.9, 2.6], dtype=torch.float64)
    post = fit_gibbs(mixture, x, num_samples=4, warmup=2, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    ll = post.to_inference_data().log_likelihood["x"].values[0]
    w, locs = post.samples["w"][0], post.samples["locs"][0]
    comp = torch.distributions.Normal(locs[:, :, None], 0.7).log_prob(x)   # (draw, K, N)
    marginal = torch.logsumexp(w.log()[:, :, None] + comp, dim=1)
    assert torch.allclose(torch.as_tensor(ll), marginal, rtol=1e-12, atol=0)
