"""MAP-EM for the Bayesian Gaussian mixture.

E-step: responsibilities ``r_nk ∝ w_k N(x_n | mu_k, Lambda_k^-1)``. M-step: the joint mode of
the conjugate posterior given the expected sufficient statistics, in the program's own
coordinates (``weights`` on the simplex, ``precisions`` as matrices):

* ``w_k = (N_k + alpha - 1) / (N + K (alpha - 1))``  (needs ``alpha >= 1``),
* ``mu_k = m_k'`` and ``Lambda_k = (nu_k' - d) Psi_k'^-1``  (needs ``nu > d``),

where ``(m', kappa', nu', Psi')`` is the Normal-Wishart posterior. The ``(nu' - d)`` (not the
Wishart mode's ``nu' - d - 1``) is because ``mu_k``'s Normal contributes ``|Lambda_k|^(1/2)``.
Each iteration cannot decrease :func:`log_posterior`, the program's log joint with ``z``
summed out.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.distributions as tdist

from ..conjugate.normal_wishart import NormalWishart
from .densities import component_log_density

__all__ = [
    "component_posteriors",
    "m_step",
    "em_step",
    "responsibilities",
    "log_posterior",
    "check_em_prior",
]


def check_em_prior(data) -> None:
    """Raise if the prior has no interior MAP (EM's M-step would leave the support)."""
    p, d = data.prior, data.dim
    if float(p.weight_concentration) < 1:
        raise ValueError(
            f"weight_concentration must be >= 1 for EM (the MAP of the weights is on the boundary "
            f"otherwise), got {float(p.weight_concentration)}; use method='gibbs', 'svi' or 'nuts'"
        )
    if float(p.degrees_of_freedom) <= d:
        raise ValueError(
            f"degrees_of_freedom must be > d = {d} for EM, got {float(p.degrees_of_freedom)}"
        )


def component_posteriors(data, resp: torch.Tensor) -> NormalWishart:
    """The ``K`` Normal-Wishart posteriors of ``(locs_k, precisions_k)`` given (soft)
    assignments ``resp`` ``(N, K)``: EM's M-step takes their modes or means, the Gibbs
    sweep draws from them.

    The statistics are taken about the prior mean ``m`` (the update is the same in any
    origin), so the scatter of the points is not lost in their squared distance from zero.
    """
    p, x = data.prior, data.x
    resp = resp.to(x.dtype)
    origin = p.mean_prior
    prior = NormalWishart.from_inverse_scale(
        torch.zeros_like(origin), p.mean_precision, p.degrees_of_freedom, p.covariance_prior
    )
    xc = x - origin
    sum_xx = torch.einsum("nk,ni,nj->kij", resp, xc, xc)
    post = prior.posterior(resp.sum(0), resp.T @ xc, sum_xx)
    return replace(post, loc=post.loc + origin)


def m_step(data, resp: torch.Tensor, map_weights: bool = True) -> dict:
    """Component parameters from responsibilities ``(N, K)``.

    With ``map_weights`` the weights and precisions are the posterior mode (EM); otherwise
    their posterior means (a starting point valid for any prior).
    """
    K = resp.shape[1]
    p = data.prior
    alpha = p.weight_concentration
    counts = resp.sum(0)
    post = component_posteriors(data, resp)
    if map_weights:
        weights = (counts + alpha - 1) / (counts.sum() + K * (alpha - 1))
        locs, precisions = post.mode()
    else:
        weights = (counts + alpha) / (counts.sum() + K * alpha)
        locs, precisions = post.mean()
    return {"weights": weights, "locs": locs, "precisions": precisions}


def responsibilities(data, params: dict) -> torch.Tensor:
    """``(N, K)`` posterior component probabilities of each point."""
    comp = component_log_density(data.x, params["locs"], params["precisions"])
    return torch.softmax(comp + params["weights"].log(), -1)


def em_step(data, params: dict) -> dict:
    """One EM iteration (the prior must pass :func:`check_em_prior`)."""
    return m_step(data, responsibilities(data, params), map_weights=True)


def log_posterior(data, params: dict) -> torch.Tensor:
    """``log p(x, weights, locs, precisions)`` with ``z`` summed out (EM's monotone objective)."""
    p, K = data.prior, params["weights"].shape[0]
    comp = component_log_density(data.x, params["locs"], params["precisions"])
    loglik = torch.logsumexp(comp + params["weights"].log(), -1).sum()
    lw = tdist.Dirichlet(p.weight_concentration.expand(K)).log_prob(params["weights"])
    lp = tdist.Wishart(p.degrees_of_freedom, scale_tril=p.wishart_scale_tril).log_prob(params["precisions"])
    lm = tdist.MultivariateNormal(
        p.mean_prior, precision_matrix=p.mean_precision * params["precisions"]
    ).log_prob(params["locs"])
    return loglik + lw + lp.sum() + lm.sum()
