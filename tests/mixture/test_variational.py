"""Variational Bayes for the Gaussian mixture with the natural-gradient engine: the full-batch
fixed point is the one of the mixture's own conjugate updates, and minibatch Robbins-Monro
steps reach it."""

import math

import torch

from pyromodels.core import RobbinsMonro, run_natgrad
from pyromodels.mixture import MixtureData, resolve_prior
from pyromodels.mixture.em import component_posteriors
from pyromodels.mixture.variational import (
    expected_log_density,
    initial_factors,
    local_step,
    responsibilities_and_stats,
    variational_priors,
)

F64 = torch.float64
N, BATCH = 300, 30


def data():
    g = torch.Generator().manual_seed(0)
    centres = torch.tensor([[-3.0, 0.0], [3.0, 1.0], [0.0, -4.0]], dtype=F64)
    return centres[torch.arange(N) % 3] + torch.randn(N, 2, generator=g, dtype=F64)


def fit(x, **kwargs):
    priors = variational_priors(resolve_prior(x), 3)
    init = initial_factors(priors, x, torch.Generator().manual_seed(1))
    return run_natgrad(local_step, x, priors=priors, init=init, seed=0, progress=False,
                       num_samples=0, **kwargs)


def responsibilities(x, factors):
    logits = factors["weights"].expected_stats() + expected_log_density(x, factors["components"])
    return responsibilities_and_stats(x, logits, 1.0, factors["components"])[0]


def test_cavi_fixed_point_is_the_mixtures_conjugate_update_of_its_responsibilities():
    x = data()
    cavi = fit(x, num_epochs=500, tol=1e-13)
    assert cavi.diagnostics["converged"]
    factors = cavi.params["factors"]
    r = responsibilities(x, factors)
    prior = resolve_prior(x)
    again = component_posteriors(MixtureData(x, prior), r)  # the EM and Gibbs M-step piece
    for field in ("loc", "kappa", "nu", "scale"):
        torch.testing.assert_close(getattr(factors["components"], field), getattr(again, field),
                                   rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(factors["weights"].concentration,
                               prior.weight_concentration + r.sum(0), rtol=1e-6, atol=1e-8)
    # coordinate ascent: the ELBO never decreases from epoch to epoch
    history = torch.tensor(cavi.diagnostics["epoch_objectives"])
    assert bool((history.diff() >= -1e-9 * history.abs().max()).all())


def test_minibatch_robbins_monro_steps_reach_the_cavi_fixed_point():
    x = data()
    fixed = fit(x, num_epochs=500, tol=1e-13).params["factors"]
    epochs, schedule = 30, RobbinsMonro(tau=1.0, kappa=0.7)
    svi = fit(x, num_epochs=epochs, batch_size=BATCH, step_size=schedule).params["factors"]
    # Threshold for the weights: 4 stationary standard deviations of a constant-step iterate
    # with the last step size, sqrt(rho / (2 - rho)) times the spread of the scaled batch
    # counts at the fixed point (an over-estimate: an epoch's batches sum to the exact counts).
    rho = schedule(epochs * N // BATCH)
    r = responsibilities(x, fixed)
    batch_counts = (N / BATCH) * r.reshape(N // BATCH, BATCH, 3).sum(1)
    bound = 4 * math.sqrt(rho / (2 - rho)) * batch_counts.std(0)
    start = resolve_prior(x).weight_concentration  # the initial weights are the prior's
    error = (svi["weights"].concentration - fixed["weights"].concentration).abs()
    assert bool((error <= bound).all()), (error, bound)
    assert bool(((start - fixed["weights"].concentration).abs() > 5 * bound).all())
    # the component means within a tenth of their posterior standard deviation
    comps = fixed["components"]
    sd = (comps.inv_scale().diagonal(dim1=-2, dim2=-1)
          / (comps.kappa * (comps.nu - 3)).unsqueeze(-1)).sqrt()
    assert ((svi["components"].loc - comps.loc).abs() / sd).max() < 0.1
