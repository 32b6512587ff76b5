"""Variational Bayes for the Bayesian Gaussian mixture with the natural-gradient engine.

Mean-field family ``q(w) q(mu, Lambda) prod_n q(z_n)``: a Dirichlet over the weights and one
Normal-Wishart per component, the conjugate factors of the prior, and categorical
responsibilities. Given the globals, the optimal responsibilities are

.. math::

    r_{nk} \\propto \\exp\\{E[\\log w_k] + E[\\log N(x_n \\mid \\mu_k, \\Lambda_k^{-1})]\\},
    \\quad E[\\log N] = \\langle E[T_k], (-x x^T / 2, 1/2, x, -1/2) \\rangle - \\tfrac{d}{2}\\log 2\\pi,

and the globals' natural-gradient statistics are the soft counts ``sum_n r_nk`` and the
weighted Gaussian statistics (Bishop 2006, section 10.2; Hoffman et al. 2013 for the
stochastic version). :func:`local_step` is the step
:func:`~pyromodels.core.run_natgrad` calls; :func:`variational_priors` builds the factors
from the mixture's resolved prior.

Example:
    >>> import torch
    >>> from pyromodels.core import run_natgrad
    >>> from pyromodels.mixture import resolve_prior
    >>> g = torch.Generator().manual_seed(0)
    >>> x = torch.cat([torch.randn(40, 2, generator=g) - 3, torch.randn(40, 2, generator=g) + 3])
    >>> priors = variational_priors(resolve_prior(x), 2)
    >>> init = initial_factors(priors, x, torch.Generator().manual_seed(1))
    >>> post = run_natgrad(local_step, x, priors=priors, init=init, num_epochs=20, seed=0,
    ...                    progress=False)
    >>> sorted(round(float(c)) for c in post.params["factors"]["weights"].concentration)
    [41, 41]
"""

from __future__ import annotations

import math

import torch

from ..conjugate.dirichlet_categorical import DirichletCategorical
from ..conjugate.normal_wishart import NormalWishart
from ..core.conjugate_factors import LocalStep, Minibatch
from .prior import MixturePrior

__all__ = ["expected_log_density", "responsibilities_and_stats", "local_step",
           "variational_priors", "initial_factors"]


def expected_log_density(x: torch.Tensor, components) -> torch.Tensor:
    """``E_q[log N(x_n | mu_k, Lambda_k^{-1})]`` ``(N, K)`` for points ``x`` ``(N, d)``, read
    from the components' ``expected_stats()`` only (so it is differentiable in them)."""
    e = components.expected_stats()
    d = x.shape[-1]
    quad = torch.einsum("kij,ni,nj->nk", e.precision, x, x)
    return (-0.5 * quad + 0.5 * e.log_det_precision + x @ e.precision_mean.mT
            - 0.5 * e.mean_precision_mean - 0.5 * d * math.log(2 * math.pi))


def responsibilities_and_stats(x: torch.Tensor, logits: torch.Tensor, scale: float, components):
    """From per-point component logits ``(N, K)``: the responsibilities, the globals'
    statistics and the local objective ``scale * sum_n (sum_k r_nk logits_nk + H[r_n])``
    (the local part of the ELBO when the logits are ``E log w_k + E log N_k``)."""
    r = torch.softmax(logits, -1)
    objective = scale * (r * (logits - torch.log_softmax(logits, -1))).sum()
    count = r.sum(0)
    stats = {
        "weights": count,
        "components": components.observation_stats(
            count, r.mT @ x, torch.einsum("nk,ni,nj->kij", r, x, x)),
    }
    return r, stats, objective


def local_step(globals_: dict, batch: Minibatch, generator: torch.Generator) -> LocalStep:
    """The optimal responsibilities of the batch's points and the globals' statistics.

    Args:
        globals_: ``{"weights": Dirichlet (K,), "components": NormalWishart (K,)}``.
        batch: the batch; ``batch.data`` holds the points ``(B, d)``.
        generator: unused (the step is deterministic).
    """
    x = batch.data
    logits = (globals_["weights"].expected_stats()
              + expected_log_density(x, globals_["components"]))
    _, stats, objective = responsibilities_and_stats(x, logits, batch.scale, globals_["components"])
    return LocalStep(stats=stats, objective=objective)


def variational_priors(prior: MixturePrior, num_components: int) -> dict:
    """The priors as conjugate factors: ``weights ~ Dir(alpha 1_K)`` and ``K`` independent
    Normal-Wisharts with ``E[Lambda] = nu Psi^{-1}``."""
    K = num_components
    d = prior.mean_prior.shape[0]
    return {
        "weights": DirichletCategorical(prior.weight_concentration.expand(K)),
        "components": NormalWishart.from_inverse_scale(
            prior.mean_prior.expand(K, d), prior.mean_precision.expand(K),
            prior.degrees_of_freedom.expand(K), prior.covariance_prior.expand(K, d, d)),
    }


def initial_factors(priors: dict, x: torch.Tensor, generator: torch.Generator) -> dict:
    """A starting point: the priors with each component's mean moved to a distinct random
    point of ``x``."""
    comps = priors["components"]
    pick = torch.randperm(x.shape[0], generator=generator)[: comps.batch_shape[0]]
    moved = NormalWishart(x[pick.to(x.device)], comps.kappa, comps.nu, comps.scale)
    return {"weights": priors["weights"], "components": moved}
