"""BayesSCDC in the conjugate limit: with the features observed through a near-delta Gaussian
potential and no decoder, a full-batch natural-gradient step of size 1 is the CAVI update, the
ELBO rises at every step, and the fixed point agrees with the reference Gibbs sampler."""

import math

import pytest
import torch

from pyromodels.conjugate import BetaBernoulli, DirichletCategorical
from pyromodels.core import run_natgrad
from pyromodels.data import PairwiseAnnotations
from pyromodels.scdc.bayes import bayes_priors, initial_globals
from pyromodels.scdc.bayes_elbo import BayesLocalStep, GaussianObservation
from pyromodels.scdc.links import co_cluster_probability
from pyromodels.scdc.observed_model import (
    ObservedBayesSCDC,
    coclustering_probabilities,
    label_invariant_draws,
)
from pyromodels.scdc.vmp import LinkBatch, global_means, run_vmp

F64 = torch.float64
PRECISION = 1e6  # the potential's precision: x is pinned at o to within 1e-3


def simulate(num_items=30, coins=(0.9, 0.8, 0.7), links_per_worker=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.arange(num_items) % 3
    centres = torch.tensor([[-4.0, 0.0], [4.0, 0.0], [0.0, 5.0]], dtype=F64)
    x = centres[z] + torch.randn(num_items, 2, generator=g, dtype=F64)
    everything = torch.combinations(torch.arange(num_items))
    i, j, w, link = [], [], [], []
    for m, coin in enumerate(coins):
        a, b = everything[torch.randperm(len(everything), generator=g)[:links_per_worker]].T
        right = torch.rand(len(a), generator=g, dtype=F64) < coin
        i, j, w = i + [a], j + [b], w + [torch.full_like(a, m)]
        link += [((z[a] == z[b]) == right).long()]
    pairs = PairwiseAnnotations.from_arrays(torch.cat(i), torch.cat(j), torch.cat(w),
                                            torch.cat(link), num_items=num_items,
                                            num_workers=len(coins))
    return x, pairs


HYPER = {"kappa": 0.5, "df": 2.5, "scale": 2.5, "alpha0": 0.5}


def setup(x, pairs, num_clusters=4, sweeps=30, schedule="sequential"):
    M = pairs.num_workers
    priors = bayes_priors(num_clusters, M, torch.zeros(2, dtype=F64), HYPER["kappa"],
                          HYPER["scale"] * torch.eye(2, dtype=F64), HYPER["df"], HYPER["alpha0"])
    init = initial_globals(priors, torch.Generator().manual_seed(1), HYPER["kappa"], loc_std=3.0)
    step = BayesLocalStep(GaussianObservation(PRECISION), x, pairs.i_idx, pairs.j_idx,
                          pairs.worker_idx, pairs.link, M, pairs.num_pairs, num_sweeps=sweeps,
                          schedule=schedule)
    return priors, init, step


def fit(x, pairs, epochs, **kwargs):
    priors, init, step = setup(x, pairs, **kwargs)
    return run_natgrad(step, x, priors=priors, init=init, num_epochs=epochs, batch_size=None,
                       step_size=1.0, num_samples=0, seed=0, progress=False)


def test_one_full_step_of_size_one_is_the_cavi_update():
    x, pairs = simulate()
    priors, init, step = setup(x, pairs)
    post = run_natgrad(step, x, priors=priors, init=init, num_epochs=1, batch_size=None,
                       step_size=1.0, num_samples=0, seed=0, progress=False)
    # the CAVI update, from the conjugate families' own posterior formulas
    links = LinkBatch(pairs.i_idx, pairs.j_idx, pairs.worker_idx, pairs.link)
    h, lam = GaussianObservation(PRECISION).potential(x)
    local = run_vmp(h, lam, global_means(init), links, num_sweeps=30, schedule="sequential")
    q, mean = local.probs, local.x.mean()
    second = local.x.covariance() + mean[:, :, None] * mean[:, None, :]
    weights = DirichletCategorical(priors["weights"].concentration + q.sum(0))
    comps = priors["components"].posterior(q.sum(0), q.T @ mean, torch.einsum("nk,nab->kab", q, second))
    rho = co_cluster_probability(q, pairs.i_idx, pairs.j_idx)
    L = pairs.link.to(F64)
    a = torch.zeros(pairs.num_workers, 2, dtype=F64)
    b = torch.zeros(pairs.num_workers, 2, dtype=F64)
    for m, r, lk in zip(pairs.worker_idx.tolist(), rho, L, strict=True):
        a[m] += torch.stack([r * lk, r * (1 - lk)])
        b[m] += torch.stack([(1 - r) * (1 - lk), (1 - r) * lk])
    got = post.params["factors"]
    torch.testing.assert_close(got["weights"].concentration, weights.concentration)
    torch.testing.assert_close(got["components"].loc, comps.loc)
    torch.testing.assert_close(got["components"].scale, comps.scale)
    torch.testing.assert_close(got["components"].nu, comps.nu)
    torch.testing.assert_close(got["components"].kappa, comps.kappa)
    for name, counts in (("alpha", a), ("beta", b)):
        expected = BetaBernoulli(1 + counts[:, 0], 1 + counts[:, 1])
        torch.testing.assert_close(got[name].alpha, expected.alpha)
        torch.testing.assert_close(got[name].beta, expected.beta)


def test_the_elbo_rises_at_every_full_step():
    x, pairs = simulate(seed=2)
    post = fit(x, pairs, 25)
    elbo = -post.losses
    assert bool(torch.isfinite(elbo).all())
    rises = elbo.diff()
    assert bool((rises >= -1e-7 * elbo.abs().max()).all()), rises
    assert float(elbo[-1] - elbo[0]) > 1.0  # it moved


def test_the_correction_vanishes_at_the_local_optimum_and_not_before():
    x, pairs = simulate(seed=3)
    norms = {}
    for sweeps in (1, 40):
        priors, init, step = setup(x, pairs, sweeps=sweeps)
        post = run_natgrad(step, x, priors=priors, init=init, num_epochs=2, batch_size=None,
                           step_size=1.0, correction=True, num_samples=0, seed=0, progress=False)
        norms[sweeps] = max(max(v for v in row.values()) for row in
                            post.diagnostics["correction_norms"])
    assert norms[40] < 1e-4 * norms[1]
    assert norms[1] > 1e-3


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_fixed_point_agrees_with_the_gibbs_posterior():
    """Mean field against the exact posterior. The clusters are well separated (3 centres 8
    apart, unit noise), so every item's cluster is nearly certain under mean field (checked:
    1 - max_k q_ik < 1e-3) and the exact posterior differs from a product over items only
    through the few items Gibbs still hesitates about. Then the coins' posteriors given the
    clusters are the same Betas under both, and the mean-field bias of their means is at most
    the residual cluster uncertainty times the links per worker over the Beta's counts (below
    1e-3 here), so they must agree to the Gibbs Monte Carlo error: 4 standard errors, counting
    a quarter of the 3000 draws as effective (measured: differences below 0.002 against
    standard errors of 0.002-0.005). The co-clustering probabilities are Monte Carlo averages
    of indicators over correlated draws (standard error up to about 0.015 for an item Gibbs
    puts in two clusters); 0.05 is about 3 of those (measured: 0.019)."""
    x, pairs = simulate(seed=4)
    post = fit(x, pairs, 40)
    factors = post.params["factors"]
    model = ObservedBayesSCDC(4, weight_concentration=HYPER["alpha0"], mean_prior=[0.0, 0.0],
                              mean_precision=HYPER["kappa"], degrees_of_freedom=HYPER["df"],
                              covariance_scale=HYPER["scale"] * torch.eye(2, dtype=F64))
    gibbs = model.fit(x, pairs, num_chains=2, num_samples=1500, num_warmup=200, seed=0,
                      progress=False, diagnostic_warnings=False)
    draws = label_invariant_draws(gibbs)
    _, _, step = setup(x, pairs)
    h, lam = GaussianObservation(PRECISION).potential(x)
    links = LinkBatch(pairs.i_idx, pairs.j_idx, pairs.worker_idx, pairs.link)
    q = run_vmp(h, lam, global_means(factors), links, num_sweeps=30, schedule="sequential").probs
    assert float(1 - q.max(-1).values.min()) < 1e-3
    co_vi = q @ q.T
    co_gibbs = coclustering_probabilities(gibbs)
    off = ~torch.eye(len(x), dtype=torch.bool)
    assert float((co_vi - co_gibbs)[off].abs().max()) < 0.05
    for name in ("alpha", "beta"):
        vi = factors[name].mean()
        d = draws[name].reshape(-1, pairs.num_workers)
        se = d.std(0) / math.sqrt(d.shape[0] / 4)  # a quarter of the draws as effective
        tol = 4 * se
        assert bool(((vi - d.mean(0)).abs() < tol).all()), (vi, d.mean(0), tol)


@pytest.mark.parametrize("bad", ["schedule", "z_init"])
def test_bad_settings_are_named(bad):
    from pyromodels.scdc.bayes import BayesSCDC

    x, pairs = simulate(num_items=9, links_per_worker=3)
    with pytest.raises(ValueError, match=bad):
        BayesSCDC(3, 2).fit(x, pairs, num_epochs=1, **{bad: "nonsense"}, progress=False)
